// Streams' consumer groups, as Redis 7.0 has them: XGROUP (CREATE, SETID, DESTROY, CREATECONSUMER,
// DELCONSUMER), XINFO GROUPS and CONSUMERS, XACK, XPENDING, XCLAIM and XAUTOCLAIM. A group's
// pending entries list and its consumers live in the StreamObject (server/data/stream.hpp), under
// the container's mutex like the entries.

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/commands/streams_internal.hpp"
#include "server/core/blocking.hpp"
#include "server/data/stream.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {

std::string cstr(std::string_view s) {
  return std::string(s.substr(0, s.find('\0')));
}

void xinfo_groups_cmd(CommandContext& ctx) {
  const Access a = read_container<StreamObject>(ctx, ctx.arg(2), [&](const Stream& s) {
    ReplyWriter& r = ctx.reply;
    r.array(s.groups().size());
    for (const auto& [name, g] : s.groups()) {
      r.map(6);
      r.bulk("name");
      r.bulk(name);
      r.bulk("consumers");
      r.integer(static_cast<std::int64_t>(g.consumers.size()));
      r.bulk("pending");
      r.integer(static_cast<std::int64_t>(g.pel.size()));
      r.bulk("last-delivered-id");
      reply_id(r, g.last_id);
      r.bulk("entries-read");
      if (g.entries_read == -1) {
        r.null();
      } else {
        r.integer(g.entries_read);
      }
      r.bulk("lag");
      std::int64_t lag = 0;
      if (s.lag(g, &lag)) {
        r.integer(lag);
      } else {
        r.null();
      }
    }
  });
  if (a == Access::kMissing) ctx.reply.error(err::kNoSuchKey);
}

void xinfo_consumers_cmd(CommandContext& ctx) {
  const Access a = read_container<StreamObject>(ctx, ctx.arg(2), [&](const Stream& s) {
    auto g = s.groups().find(ctx.arg(3));
    if (g == s.groups().end()) {
      ctx.reply.error(err::no_group(cstr(ctx.arg(2)), cstr(ctx.arg(3))));
      return;
    }
    ReplyWriter& r = ctx.reply;
    r.array(g->second.consumers.size());
    for (const auto& [name, c] : g->second.consumers) {
      r.map(3);
      r.bulk("name");
      r.bulk(name);
      r.bulk("pending");
      r.integer(static_cast<std::int64_t>(c.pel.size()));
      r.bulk("idle");
      r.integer(std::max<std::int64_t>(0, ctx.now_ms - c.seen_time));
    }
  });
  if (a == Access::kMissing) ctx.reply.error(err::kNoSuchKey);
}

namespace {


}  // namespace

void xgroup_create_cmd(CommandContext& ctx) {
  bool mkstream = false;
  std::int64_t entries_read = -1;
  for (std::size_t i = 5; i < ctx.argc();) {
    if (iequals(ctx.arg(i), "mkstream")) {
      mkstream = true;
      ++i;
    } else if (iequals(ctx.arg(i), "entriesread") && i + 1 < ctx.argc()) {
      if (!arg_i64(ctx, ctx.arg(i + 1), &entries_read)) return;
      if (entries_read < 0 && entries_read != -1) return ctx.reply.error(err::kEntriesReadNegative);
      i += 2;
    } else {
      return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
    }
  }
  if (ctx.argc() > 8) {  // the options were fine, the key is checked, then the count fails
    ObjectRef ref;
    const Access a = lookup_container<StreamObject>(ctx, ctx.arg(2), &ref);
    if (a == Access::kWrongType) return;
    if (a == Access::kMissing && !mkstream) return ctx.reply.error(err::kXgroupNeedsKey);
    return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
  }
  std::string_view error;
  bool busy = false;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(2), mkstream, [&](Stream& s) -> bool {
    StreamId id;
    if (ctx.arg(4) == "$") {
      id = s.last_id();
    } else if (!parse_id(ctx.arg(4), &id, 0, true)) {
      error = err::kStreamInvalidId;
      return false;
    }
    s.mark_created();
    auto [it, added] = s.groups().try_emplace(std::string(ctx.arg(3)));
    if (!added) {
      busy = true;
      return false;
    }
    it->second.last_id = id;
    it->second.entries_read = entries_read;
    return true;
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kMissing) return ctx.reply.error(err::kXgroupNeedsKey);
  if (!error.empty()) return ctx.reply.error(error);
  if (busy) return ctx.reply.error(err::kBusyGroup);
  notify_keyspace_event(ctx, kNotifyStream, "xgroup-create", ctx.arg(2));
  ctx.reply.ok();
}

namespace {

// The common prelude of XGROUP SETID/DESTROY/CREATECONSUMER/DELCONSUMER: fn(Stream&, group or
// nullptr) under the stream's lock; replies the key and group errors itself.
template <class F>
void with_group(CommandContext& ctx, bool need_group, F&& fn) {
  bool nogroup = false;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(2), false, [&](Stream& s) -> bool {
    auto g = s.groups().find(ctx.arg(3));
    if (g == s.groups().end() && need_group) {
      nogroup = true;
      return false;
    }
    return fn(s, g == s.groups().end() ? nullptr : &g->second);
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kMissing) return ctx.reply.error(err::kXgroupNeedsKey);
  if (nogroup) ctx.reply.error(err::no_group(cstr(ctx.arg(2)), cstr(ctx.arg(3))));
}

}  // namespace

void xgroup_setid_cmd(CommandContext& ctx) {
  std::int64_t entries_read = -1;
  for (std::size_t i = 5; i < ctx.argc(); i += 2) {
    if (!iequals(ctx.arg(i), "entriesread") || i + 1 >= ctx.argc())
      return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
    if (!arg_i64(ctx, ctx.arg(i + 1), &entries_read)) return;
    if (entries_read < 0 && entries_read != -1) return ctx.reply.error(err::kEntriesReadNegative);
  }
  with_group(ctx, true, [&](Stream& s, StreamGroup* g) {
    if (ctx.argc() != 5 && ctx.argc() != 7) {  // checked after the key and the group, as Redis
      ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
      return false;
    }
    StreamId id;
    if (ctx.arg(4) == "$") {
      id = s.last_id();
    } else if (!parse_id(ctx.arg(4), &id, 0, false)) {  // "-" and "+" too, unlike CREATE's
      ctx.reply.error(err::kStreamInvalidId);
      return false;
    }
    g->last_id = id;
    g->entries_read = entries_read;
    ctx.reply.ok();
    notify_keyspace_event(ctx, kNotifyStream, "xgroup-setid", ctx.arg(2));
    return true;
  });
}

void xgroup_destroy_cmd(CommandContext& ctx) {
  with_group(ctx, false, [&](Stream& s, StreamGroup* g) {
    if (g != nullptr) {
      s.groups().erase(std::string(ctx.arg(3)));
      notify_keyspace_event(ctx, kNotifyStream, "xgroup-destroy", ctx.arg(2));
    }
    ctx.reply.integer(g != nullptr ? 1 : 0);
    return g != nullptr;
  });
}

void xgroup_createconsumer_cmd(CommandContext& ctx) {
  with_group(ctx, true, [&](Stream&, StreamGroup* g) {
    auto [it, added] = g->consumers.try_emplace(std::string(ctx.arg(4)));
    if (added) {
      it->second.seen_time = ctx.now_ms;
      notify_keyspace_event(ctx, kNotifyStream, "xgroup-createconsumer", ctx.arg(2));
    }
    ctx.reply.integer(added ? 1 : 0);
    return added;
  });
}

void xgroup_delconsumer_cmd(CommandContext& ctx) {
  with_group(ctx, true, [&](Stream&, StreamGroup* g) {
    auto it = g->consumers.find(ctx.arg(4));
    if (it == g->consumers.end()) {
      ctx.reply.integer(0);
      return false;
    }
    const auto pending = static_cast<std::int64_t>(it->second.pel.size());
    for (const StreamId& id : it->second.pel) g->pel.erase(id);
    g->consumers.erase(it);
    notify_keyspace_event(ctx, kNotifyStream, "xgroup-delconsumer", ctx.arg(2));
    ctx.reply.integer(pending);
    return true;
  });
}

void xgroup_help_cmd(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CREATE <key> <groupname> <id|$> [option]",
      "    Create a new consumer group. Options are:",
      "    * MKSTREAM",
      "      Create the empty stream if it does not exist.",
      "    * ENTRIESREAD entries_read",
      "      Set the group's entries_read counter (internal use).",
      "CREATECONSUMER <key> <groupname> <consumer>",
      "    Create a new consumer in the specified group.",
      "DELCONSUMER <key> <groupname> <consumer>",
      "    Remove the specified consumer.",
      "DESTROY <key> <groupname>",
      "    Remove the specified group.",
      "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
      "    Set the current group ID and entries_read counter.",
      "HELP",
      "    Prints this help.",
  };
  ctx.reply.array(std::size(kLines));
  for (auto l : kLines) ctx.reply.simple(l);
}

void xgroup_without_sub(CommandContext& ctx) {
  ctx.reply.error(err::wrong_arity("xgroup"));
}

void xack_cmd(CommandContext& ctx) {
  std::int64_t acked = 0;
  bool bad_id = false;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) -> bool {
    auto g = s.groups().find(ctx.arg(2));
    if (g == s.groups().end()) return false;
    std::vector<StreamId> ids(ctx.argc() - 3);
    for (std::size_t j = 3; j < ctx.argc(); ++j) {
      if (!parse_id(ctx.arg(j), &ids[j - 3], 0, true)) {
        bad_id = true;
        return false;
      }
    }
    for (const StreamId& id : ids) {
      auto n = g->second.pel.find(id);
      if (n == g->second.pel.end()) continue;
      auto c = g->second.consumers.find(n->second.consumer);
      if (c != g->second.consumers.end()) c->second.pel.erase(id);
      g->second.pel.erase(n);
      ++acked;
    }
    return acked > 0;
  });
  if (a == Access::kWrongType) return;
  if (bad_id) return ctx.reply.error(err::kStreamInvalidId);
  ctx.reply.integer(acked);
}

void xpending_cmd(CommandContext& ctx) {
  const std::size_t argc = ctx.argc();
  if (argc != 3 && (argc < 6 || argc > 9)) return ctx.reply.error(err::kSyntax);
  std::int64_t minidle = 0, count = 0;
  StreamId start, end;
  std::string_view consumer;
  bool has_consumer = false;
  if (argc >= 6) {
    std::size_t at = 3;
    if (iequals(ctx.arg(3), "idle")) {
      if (!arg_i64(ctx, ctx.arg(4), &minidle)) return;
      if (argc < 8) return ctx.reply.error(err::kSyntax);
      at += 2;
    }
    if (!arg_i64(ctx, ctx.arg(at + 2), &count)) return;
    if (count < 0) count = 0;
    bool sx = false, ex = false;
    if (!arg_interval_id(ctx, ctx.arg(at), &start, &sx, 0)) return;
    if (sx && !start.incr()) return ctx.reply.error(err::kInvalidStartId);
    if (!arg_interval_id(ctx, ctx.arg(at + 1), &end, &ex,
                         std::numeric_limits<std::uint64_t>::max()))
      return;
    if (ex && !end.decr()) return ctx.reply.error(err::kInvalidEndId);
    if (at + 3 < argc) {
      consumer = ctx.arg(at + 3);
      has_consumer = true;
    }
  }
  const std::string nogroup = err::no_key_or_group(cstr(ctx.arg(1)), cstr(ctx.arg(2)));
  const Access a = read_container<StreamObject>(ctx, ctx.arg(1), [&](const Stream& s) {
    auto gi = s.groups().find(ctx.arg(2));
    if (gi == s.groups().end()) return ctx.reply.error(nogroup);
    const StreamGroup& g = gi->second;
    ReplyWriter& r = ctx.reply;
    if (argc == 3) {
      r.array(4);
      r.integer(static_cast<std::int64_t>(g.pel.size()));
      if (g.pel.empty()) {
        r.null();
        r.null();
        r.null_array();
        return;
      }
      reply_id(r, g.pel.begin()->first);
      reply_id(r, g.pel.rbegin()->first);
      std::size_t n = 0;
      for (const auto& [name, c] : g.consumers) n += c.pel.empty() ? 0 : 1;
      r.array(n);
      for (const auto& [name, c] : g.consumers) {
        if (c.pel.empty()) continue;
        r.array(2);
        r.bulk(name);
        r.bulk_i64(static_cast<std::int64_t>(c.pel.size()));
      }
      return;
    }
    std::vector<std::pair<StreamId, const StreamNack*>> out;
    auto take = [&](StreamId id) {
      const StreamNack& nack = g.pel.at(id);
      if (minidle != 0 && ctx.now_ms - nack.delivery_time < minidle) return;
      out.emplace_back(id, &nack);
    };
    if (has_consumer) {
      auto c = g.consumers.find(consumer);
      if (c == g.consumers.end()) return r.array(0);
      for (auto it = c->second.pel.lower_bound(start);
           it != c->second.pel.end() && *it <= end && static_cast<std::int64_t>(out.size()) < count;
           ++it)
        take(*it);
    } else {
      for (auto it = g.pel.lower_bound(start);
           it != g.pel.end() && it->first <= end && static_cast<std::int64_t>(out.size()) < count;
           ++it)
        take(it->first);
    }
    r.array(out.size());
    for (const auto& [id, nack] : out) {
      r.array(4);
      reply_id(r, id);
      r.bulk(nack->consumer);
      r.integer(std::max<std::int64_t>(0, ctx.now_ms - nack->delivery_time));
      r.integer(static_cast<std::int64_t>(nack->delivery_count));
    }
  });
  if (a == Access::kMissing) ctx.reply.error(nogroup);
}

namespace {

// Moves the pending entry id (whose NACK is nack) to consumer `name` of g, for XCLAIM and
// XAUTOCLAIM: the delivery time and count as the caller says.
void claim_to(StreamGroup& g, StreamId id, StreamNack& nack, std::string_view name,
              std::int64_t delivery_time, std::int64_t retrycount, bool justid) {
  StreamConsumer& cons = g.consumers[std::string(name)];
  if (nack.consumer != name && !nack.consumer.empty()) {
    auto old = g.consumers.find(nack.consumer);
    if (old != g.consumers.end()) old->second.pel.erase(id);
  }
  nack.delivery_time = delivery_time;
  if (retrycount >= 0) {
    nack.delivery_count = static_cast<std::uint64_t>(retrycount);
  } else if (!justid) {
    ++nack.delivery_count;
  }
  nack.consumer = std::string(name);
  cons.pel.insert(id);
}

// The consumer a claim names: looked up (its seen time refreshed) or created, as Redis does
// before the first entry it claims (an "xgroup-createconsumer" event on key when created).
void touch_consumer(StreamGroup& g, std::string_view name, std::int64_t now_ms,
                    std::string_view key) {
  auto [it, created] = g.consumers.try_emplace(std::string(name));
  it->second.seen_time = now_ms;
  if (created) notify_keyspace_event(kNotifyStream, "xgroup-createconsumer", key);
}

}  // namespace

void xclaim_cmd(CommandContext& ctx) {
  const std::string nogroup = err::no_key_or_group(cstr(ctx.arg(1)), cstr(ctx.arg(2)));
  const Access acc = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) -> bool {
    auto gi = s.groups().find(ctx.arg(2));
    if (gi == s.groups().end()) {
      ctx.reply.error(nogroup);
      return false;
    }
    StreamGroup& g = gi->second;
    std::int64_t minidle = 0, retrycount = -1, deliverytime = -1;
    bool force = false, justid = false, changed = false;
    if (!parse_i64(ctx.arg(4), &minidle)) {
      ctx.reply.error(err::kXclaimMinIdle);
      return false;
    }
    if (minidle < 0) minidle = 0;
    std::size_t j = 5;
    std::vector<StreamId> ids;
    for (StreamId id; j < ctx.argc() && parse_id(ctx.arg(j), &id, 0, true); ++j) ids.push_back(id);
    const std::int64_t now = ctx.now_ms;
    for (; j < ctx.argc(); ++j) {
      const bool more = j + 1 < ctx.argc();
      const std::string_view opt = ctx.arg(j);
      auto int_opt = [&](std::string_view what, std::int64_t* out) {
        if (parse_i64(ctx.arg(++j), out)) return true;
        ctx.reply.error(err::xclaim_bad_option_value(what));
        return false;
      };
      if (iequals(opt, "force")) {
        force = true;
      } else if (iequals(opt, "justid")) {
        justid = true;
      } else if (iequals(opt, "idle") && more) {
        if (!int_opt("IDLE", &deliverytime)) return changed;
        deliverytime = now - deliverytime;
      } else if (iequals(opt, "time") && more) {
        if (!int_opt("TIME", &deliverytime)) return changed;
      } else if (iequals(opt, "retrycount") && more) {
        if (!int_opt("RETRYCOUNT", &retrycount)) return changed;
      } else if (iequals(opt, "lastid") && more) {
        StreamId id;
        if (!arg_id(ctx, ctx.arg(++j), &id, 0, true)) return changed;
        if (id > g.last_id) {
          g.last_id = id;
          changed = true;
        }
      } else {
        ctx.reply.error(err::xclaim_unknown_option(cstr(opt)));
        return changed;
      }
    }
    if (deliverytime == -1 || deliverytime < 0 || deliverytime > now) deliverytime = now;
    Buffer body;
    ReplyWriter w(body, ctx.reply.proto());
    std::size_t n = 0;
    bool have_consumer = false;
    for (const StreamId& id : ids) {
      auto ni = g.pel.find(id);
      auto e = s.entries().find(id);
      if (e == s.entries().end()) {
        if (ni != g.pel.end()) {  // the entry is gone: so is its pending record
          auto c = g.consumers.find(ni->second.consumer);
          if (c != g.consumers.end()) c->second.pel.erase(id);
          g.pel.erase(ni);
          changed = true;
        }
        continue;
      }
      bool fresh_nack = false;
      if (force && ni == g.pel.end()) {
        ni = g.pel.try_emplace(id).first;
        ni->second.delivery_time = now;
        fresh_nack = true;
      }
      if (ni == g.pel.end()) continue;
      if (!fresh_nack && minidle != 0 && now - ni->second.delivery_time < minidle) continue;
      if (!have_consumer) {
        touch_consumer(g, ctx.arg(3), now, ctx.arg(1));
        have_consumer = true;
      }
      claim_to(g, id, ni->second, ctx.arg(3), deliverytime, retrycount, justid);
      changed = true;
      if (justid) {
        reply_id(w, id);
      } else {
        reply_entry(w, e->first, e->second);
      }
      ++n;
    }
    ctx.reply.array(n);
    ctx.reply.raw(std::string_view(body.data(), body.size()));
    return changed;
  });
  if (acc == Access::kMissing) ctx.reply.error(nogroup);
}

void xautoclaim_cmd(CommandContext& ctx) {
  std::int64_t minidle = 0, count = 100;
  bool justid = false;
  if (!parse_i64(ctx.arg(4), &minidle)) return ctx.reply.error(err::kXautoclaimMinIdle);
  if (minidle < 0) minidle = 0;
  StreamId start;
  bool sx = false;
  if (!arg_interval_id(ctx, ctx.arg(5), &start, &sx, 0)) return;
  if (sx && !start.incr()) return ctx.reply.error(err::kInvalidStartId);
  ArgParser p(ctx.argv, 6);
  while (!p.done()) {
    if (p.check("COUNT", 1)) {
      constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max() / 16;
      count = p.next_int(1, kMaxCount, err::kGeoCountPositive, err::kGeoCountPositive);
    } else if (p.check("JUSTID")) {
      justid = true;
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  const std::string nogroup = err::no_key_or_group(cstr(ctx.arg(1)), cstr(ctx.arg(2)));
  const Access acc = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) -> bool {
    auto gi = s.groups().find(ctx.arg(2));
    if (gi == s.groups().end()) {
      ctx.reply.error(nogroup);
      return false;
    }
    StreamGroup& g = gi->second;
    const std::int64_t now = ctx.now_ms;
    std::int64_t attempts = count * 10;
    Buffer body;
    ReplyWriter w(body, ctx.reply.proto());
    std::size_t n = 0;
    std::vector<StreamId> deleted;
    bool have_consumer = false, changed = false;
    auto it = g.pel.lower_bound(start);
    bool examined = false;
    StreamId last;
    while (attempts-- > 0 && count > 0 && it != g.pel.end()) {
      const StreamId id = it->first;
      examined = true;
      last = id;
      auto e = s.entries().find(id);
      if (e == s.entries().end()) {
        auto c = g.consumers.find(it->second.consumer);
        if (c != g.consumers.end()) c->second.pel.erase(id);
        it = g.pel.erase(it);
        deleted.push_back(id);
        --count;
        changed = true;
        continue;
      }
      if (minidle != 0 && now - it->second.delivery_time < minidle) {
        ++it;
        continue;
      }
      if (!have_consumer) {
        touch_consumer(g, ctx.arg(3), now, ctx.arg(1));
        have_consumer = true;
      }
      claim_to(g, id, it->second, ctx.arg(3), now, -1, justid);
      changed = true;
      if (justid) {
        reply_id(w, id);
      } else {
        reply_entry(w, e->first, e->second);
      }
      ++n;
      --count;
      ++it;
    }
    // The cursor: the pending entry after the last one examined, 0-0 at the end.
    StreamId next;
    if (examined) {
      auto after = g.pel.upper_bound(last);
      if (after != g.pel.end()) next = after->first;
    }
    ctx.reply.array(3);
    reply_id(ctx.reply, next);
    ctx.reply.array(n);
    ctx.reply.raw(std::string_view(body.data(), body.size()));
    ctx.reply.array(deleted.size());
    for (const StreamId& id : deleted) reply_id(ctx.reply, id);
    return changed;
  });
  if (acc == Access::kMissing) ctx.reply.error(nogroup);
}

}  // namespace kvlab::server
