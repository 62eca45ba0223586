// XREAD and XREADGROUP, blocking or not, and serving a blocked reader when an XADD (or a group's
// removal) reaches its stream: serve_blocked_xread, which the blocking layer calls.

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
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

namespace {

// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
struct ReadArgs {
  std::int64_t count = 0;
  std::int64_t timeout_ms = -1;  // -1: no BLOCK
  std::size_t streams_arg = 0;
  std::size_t streams_count = 0;
  bool xreadgroup = false;
  bool noack = false;
  std::string_view group, consumer;  // empty group: none given
  bool has_group = false;
};

// Parses XREAD's options; replies and returns false on an error.
bool parse_read_args(CommandContext& ctx, ReadArgs* a) {
  ArgParser p(ctx.argv, 1);
  while (!p.done()) {
    if (p.check("BLOCK", 1)) {
      const std::int64_t t = p.next_int(0, std::numeric_limits<std::int64_t>::max(),
                                        err::kTimeoutNegative, err::kTimeoutNotInteger);
      // A timeout past the clock's range: Redis 7.0 adds it to the clock unchecked, and the
      // wait never ends; so here it is a wait without a timeout.
      if (p.ok()) a->timeout_ms = t > std::numeric_limits<std::int64_t>::max() - ctx.now_ms ? 0 : t;
    } else if (p.check("COUNT", 1)) {
      a->count = p.next_int();
      if (a->count < 0) a->count = 0;
    } else if (p.check("STREAMS", 1)) {
      a->streams_arg = p.index();
      a->streams_count = p.left();
      if (a->streams_count % 2 != 0) {
        p.fail(err::kXreadUnbalanced);  // Redis 7.0 words it so for XREADGROUP too
        break;
      }
      a->streams_count /= 2;
      break;
    } else if (p.check("GROUP", 2)) {
      if (!a->xreadgroup) {
        p.fail(err::kXreadGroupOption);
      } else {
        a->group = p.next();
        a->consumer = p.next();
        a->has_group = true;
      }
    } else if (p.check("NOACK")) {
      if (!a->xreadgroup) {
        p.fail(err::kXreadNoackOption);
      } else {
        a->noack = true;
      }
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return false;
  if (a->streams_arg == 0) {
    ctx.reply.error(err::kSyntax);
    return false;
  }
  if (a->xreadgroup && !a->has_group) {
    ctx.reply.error(err::kXreadgroupNoGroup);
    return false;
  }
  return true;
}

}  // namespace

bool xread_keys(std::span<const std::string_view> argv, std::vector<std::size_t>* out) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const bool more = i + 1 < argv.size();
    if ((iequals(argv[i], "block") || iequals(argv[i], "count")) && more) {
      ++i;
    } else if (iequals(argv[i], "group") && i + 2 < argv.size()) {
      i += 2;
    } else if (iequals(argv[i], "noack")) {
    } else if (iequals(argv[i], "streams") && more) {
      const std::size_t first = i + 1;
      const std::size_t n = (argv.size() - first) / 2;
      for (std::size_t k = 0; k < n; ++k) out->push_back(first + k);
      return n > 0;
    } else {
      return true;
    }
  }
  return true;
}

namespace {

// Serves XREAD from the streams that have entries after their IDs. Returns false (writing
// nothing) when none has.
bool xread_serve(CommandContext& ctx, const ReadArgs& a, const std::vector<StreamId>& ids) {
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < a.streams_count; ++i) {
    read_container<StreamObject>(ctx, ctx.arg(a.streams_arg + i), [&](const Stream& s) {
      if (s.length() > 0 && s.last_valid_id() > ids[i]) ready.push_back(i);
    });
  }
  if (ready.empty()) return false;
  ReplyWriter& r = ctx.reply;
  if (r.resp3()) {
    r.map(ready.size());
  } else {
    r.array(ready.size());
  }
  for (std::size_t i : ready) {
    if (!r.resp3()) r.array(2);
    r.bulk(ctx.arg(a.streams_arg + i));
    read_container<StreamObject>(ctx, ctx.arg(a.streams_arg + i), [&](const Stream& s) {
      StreamId start = ids[i];
      start.incr();
      reply_range(r, s, start, StreamId::max(), static_cast<std::size_t>(a.count), false);
    });
  }
  return true;
}

}  // namespace

void xread_cmd(CommandContext& ctx) {
  ReadArgs a;
  if (!parse_read_args(ctx, &a)) return;
  std::vector<StreamId> ids(a.streams_count);
  for (std::size_t k = 0; k < a.streams_count; ++k) {
    const std::string_view key = ctx.arg(a.streams_arg + k);
    const std::string_view id_arg = ctx.arg(a.streams_arg + a.streams_count + k);
    ObjectRef ref;
    const Access acc = lookup_container<StreamObject>(ctx, key, &ref);
    if (acc == Access::kWrongType) return;
    if (id_arg == "$") {
      StreamId last;
      read_container<StreamObject>(ctx, key, [&](const Stream& s) { last = s.last_id(); });
      ids[k] = last;
      continue;
    }
    if (id_arg == ">") {
      ctx.reply.error(err::kXreadGreaterId);
      return;
    }
    if (!arg_id(ctx, id_arg, &ids[k], 0, true)) return;
  }
  if (xread_serve(ctx, a, ids)) return;
  if (a.timeout_ms == -1 || ctx.conn.in_exec) {  // no BLOCK, or inside MULTI/EXEC or a script
    ctx.reply.null_array();
    return;
  }
  // Block on every key, each waiting for an ID after its own: "$" is resolved now, so a waiter
  // served later compares with the last ID it saw.
  auto b = std::make_shared<BlockedClient>();
  b->conn_id = ctx.conn.id;
  b->worker = ctx.worker.index();
  b->resp = ctx.conn.resp;  // the reply that wakes it (a map in RESP3) or its timeout's null
  b->deadline_ms = a.timeout_ms == 0 ? 0 : ctx.now_ms + a.timeout_ms;
  b->argv.assign(ctx.argv.begin(), ctx.argv.end());
  for (std::size_t k = 0; k < a.streams_count; ++k) {
    b->argv[a.streams_arg + a.streams_count + k] = ids[k].str();
    const std::string_view key = ctx.arg(a.streams_arg + k);
    bool seen = false;
    for (const auto& o : b->keys) seen = seen || o == key;
    if (!seen) b->keys.emplace_back(key);
  }
  ctx.server.blocking().add(b);
  ctx.worker.block(ctx.conn, std::move(b));
}

namespace {

// Delivers to consumer `cons` (named `name`) of group g the entries after the group's last ID
// (at most limit; 0: all), writing the entries array to w: the group's last ID and read counter
// advance, and unless noack each entry enters the PEL (taken from another consumer if it was
// there), as Redis's streamReplyWithRange does with a group.
void deliver_new(Stream& s, StreamGroup& g, StreamConsumer& cons, std::string_view name,
                 std::size_t limit, bool noack, std::int64_t now_ms, ReplyWriter& w) {
  StreamId start = g.last_id;
  start.incr();
  std::vector<StreamId> got;
  for (auto it = s.entries().lower_bound(start);
       it != s.entries().end() && (limit == 0 || got.size() < limit); ++it)
    got.push_back(it->first);
  w.array(got.size());
  for (const StreamId& id : got) {
    if (id > g.last_id) {
      if (g.entries_read != -1 && !s.range_has_tombstones(id)) {
        ++g.entries_read;
      } else if (s.entries_added() != 0) {
        g.entries_read = s.estimate_distance(id);
      }
      g.last_id = id;
    }
    reply_entry(w, id, s.entries().at(id));
    if (noack) continue;
    auto [pi, added] = g.pel.try_emplace(id);
    StreamNack& nack = pi->second;
    if (!added) {
      auto old = g.consumers.find(nack.consumer);
      if (old != g.consumers.end()) old->second.pel.erase(id);
    }
    nack.consumer = std::string(name);
    nack.delivery_time = now_ms;
    nack.delivery_count = 1;
    cons.pel.insert(id);
  }
}

}  // namespace

void xreadgroup_cmd(CommandContext& ctx) {
  ReadArgs a;
  a.xreadgroup = true;
  if (!parse_read_args(ctx, &a)) return;
  const std::size_t n = a.streams_count;
  std::vector<StreamId> ids(n);
  std::vector<bool> fresh(n, false);  // ">"
  for (std::size_t k = 0; k < n; ++k) {
    const std::string_view key = ctx.arg(a.streams_arg + k);
    const std::string_view id_arg = ctx.arg(a.streams_arg + n + k);
    bool has_group = false;
    const Access acc = read_container<StreamObject>(ctx, key, [&](const Stream& s) {
      has_group = s.groups().find(a.group) != s.groups().end();
    });
    if (acc == Access::kWrongType) return;
    if (!has_group) {
      ctx.reply.error(err::no_key_or_group_xreadgroup(cstr(key), cstr(a.group)));
      return;
    }
    if (id_arg == "$") {
      ctx.reply.error(err::kXreadgroupDollarId);
      return;
    }
    if (id_arg == ">") {
      fresh[k] = true;
      continue;
    }
    if (!arg_id(ctx, id_arg, &ids[k], 0, true)) return;
    // Redis parses ">" into the largest ID, so that ID given explicitly reads new entries too.
    fresh[k] = ids[k] == StreamId::max();
  }
  // Serve: history always; new entries when the stream has some after the group's last ID.
  std::vector<std::size_t> served;
  std::vector<std::string> bodies;
  for (std::size_t k = 0; k < n; ++k) {
    Buffer body;
    ReplyWriter w(body, ctx.reply.proto());
    bool serve = false;
    write_container<StreamObject>(ctx, ctx.arg(a.streams_arg + k), false, [&](Stream& s) -> bool {
      StreamGroup& g = s.groups().find(a.group)->second;
      if (!fresh[k]) {
        serve = true;
      } else if (s.length() > 0 && s.last_valid_id() > g.last_id) {
        serve = true;
      }
      if (!serve) return false;
      auto [ci, created] = g.consumers.try_emplace(std::string(a.consumer));
      if (created)
        notify_keyspace_event(ctx, kNotifyStream, "xgroup-createconsumer",
                              ctx.arg(a.streams_arg + k));
      StreamConsumer& cons = ci->second;
      cons.seen_time = ctx.now_ms;
      const auto limit = static_cast<std::size_t>(a.count);
      if (!fresh[k]) {
        StreamId start = ids[k];
        start.incr();
        std::vector<StreamId> pend;
        for (auto it = cons.pel.lower_bound(start);
             it != cons.pel.end() && (limit == 0 || pend.size() < limit); ++it)
          pend.push_back(*it);
        w.array(pend.size());
        for (const StreamId& id : pend) {
          auto e = s.entries().find(id);
          if (e == s.entries().end()) {
            w.array(2);
            reply_id(w, id);
            w.null_array();
          } else {
            reply_entry(w, e->first, e->second);
            StreamNack& nack = g.pel.at(id);
            nack.delivery_time = ctx.now_ms;
            ++nack.delivery_count;
          }
        }
        return true;
      }
      deliver_new(s, g, cons, a.consumer, limit, a.noack, ctx.now_ms, w);
      return true;
    });
    if (serve) {
      served.push_back(k);
      bodies.emplace_back(body.data(), body.size());
    }
  }
  if (!served.empty()) {
    ReplyWriter& r = ctx.reply;
    if (r.resp3()) {
      r.map(served.size());
    } else {
      r.array(served.size());
    }
    for (std::size_t j = 0; j < served.size(); ++j) {
      if (!r.resp3()) r.array(2);
      r.bulk(ctx.arg(a.streams_arg + served[j]));
      r.raw(bodies[j]);
    }
    return;
  }
  if (a.timeout_ms == -1 || ctx.conn.in_exec) {
    ctx.reply.null_array();
    return;
  }
  // Only ">" reads get here (history is always answered): block on every key.
  auto b = std::make_shared<BlockedClient>();
  b->conn_id = ctx.conn.id;
  b->worker = ctx.worker.index();
  b->resp = ctx.conn.resp;  // the reply that wakes it (a map in RESP3) or its timeout's null
  b->deadline_ms = a.timeout_ms == 0 ? 0 : ctx.now_ms + a.timeout_ms;
  b->argv.assign(ctx.argv.begin(), ctx.argv.end());
  for (std::size_t k = 0; k < n; ++k) {
    const std::string_view key = ctx.arg(a.streams_arg + k);
    bool seen = false;
    for (const auto& o : b->keys) seen = seen || o == key;
    if (!seen) b->keys.emplace_back(key);
  }
  ctx.server.blocking().add(b);
  ctx.worker.block(ctx.conn, std::move(b));
}

bool serve_blocked_xread(CommandContext& ctx, std::span<const std::string_view> argv,
                         std::string_view key, ReplyWriter& w) {
  std::size_t count = 0, streams_arg = 0;
  std::string_view group, consumer;
  bool noack = false;
  const bool xreadgroup = iequals(argv[0], "xreadgroup");
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const bool more = i + 1 < argv.size();
    if (xreadgroup && iequals(argv[i], "group") && i + 2 < argv.size()) {
      group = argv[i + 1];
      consumer = argv[i + 2];
      i += 2;
    } else if (xreadgroup && iequals(argv[i], "noack")) {
      noack = true;
    } else if (iequals(argv[i], "count") && more) {
      std::int64_t n = 0;
      if (parse_i64(argv[i + 1], &n) && n > 0) count = static_cast<std::size_t>(n);
      ++i;
    } else if (iequals(argv[i], "block") && more) {
      ++i;
    } else if (iequals(argv[i], "streams") && more) {
      streams_arg = i + 1;
      break;
    }
  }
  if (streams_arg == 0) return false;
  const std::size_t n = (argv.size() - streams_arg) / 2;
  if (xreadgroup) {
    // XREADGROUP waits on ">": served from the group's last ID, or told its group is gone.
    bool served = false;
    // Silent on another type: the reply being written is the serving command's own.
    const Access acc = write_container<StreamObject>(
        ctx, key, false,
        [&](Stream& s) -> bool {
          auto g = s.groups().find(group);
          if (g == s.groups().end()) {
            w.error(err::kBlockedGroupGone);
            served = true;
            return false;
          }
          if (!(s.last_id() > g->second.last_id)) return false;
          served = true;
          if (w.resp3()) {
            w.map(1);
          } else {
            w.array(1);
            w.array(2);
          }
          w.bulk(key);
          auto [ci, created] = g->second.consumers.try_emplace(std::string(consumer));
          if (created) notify_keyspace_event(ctx, kNotifyStream, "xgroup-createconsumer", key);
          StreamConsumer& cons = ci->second;
          cons.seen_time = ctx.now_ms;
          deliver_new(s, g->second, cons, consumer, count, noack, ctx.now_ms, w);
          return true;
        },
        /*reply_wrongtype=*/false);
    if (acc != Access::kOk) {  // deleted or replaced by another type, as Redis 7.0 answers
      w.error(err::kBlockedStreamGone);
      return true;
    }
    return served;
  }
  StreamId gt;
  bool found = false;
  for (std::size_t k = 0; k < n && !found; ++k) {
    // The first mention of the key names its ID, as Redis keeps one ID per blocked key.
    if (argv[streams_arg + k] == key) found = parse_id(argv[streams_arg + n + k], &gt, 0, true);
  }
  if (!found) return false;
  bool served = false;
  ObjectRef ref;
  if (lookup_container<StreamObject>(ctx, key, &ref, /*reply_wrongtype=*/false) != Access::kOk)
    return false;  // XREAD keeps waiting on a deleted key or one of another type (Redis 7.0)
  StreamObject* so = as_container<StreamObject>(ref);
  std::lock_guard<std::mutex> lock(so->mu);
  if (so->dead.load(std::memory_order_relaxed) || so->data.empty()) return false;
  [&](const Stream& s) {
    // Compared with the last XADD's ID, not last_id(): XSETID raises that without adding, and
    // Redis 7.0 keeps the reader waiting (it wakes stream readers only on XADD).
    if (!(s.last_added() > gt)) return;
    served = true;
    if (w.resp3()) {
      w.map(1);
    } else {
      w.array(1);
      w.array(2);
    }
    w.bulk(key);
    StreamId start = gt;
    start.incr();
    reply_range(w, s, start, StreamId::max(), count, false);
  }(so->data);
  return served;
}

}  // namespace kvlab::server
