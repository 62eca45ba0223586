// The stream family, answering as Redis 7.0 does. This file: stream IDs and their replies, XADD,
// XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID, XINFO STREAM and the family's command table;
// streams_groups.cpp has the consumer groups, streams_read.cpp XREAD and XREADGROUP.
//
// A stream is a StreamObject (server/data/stream.hpp) behind the container's mutex, reached
// through server/commands/containers.hpp. Unlike the other containers a stream stays when its
// last entry goes (XDEL, XTRIM, XADD MAXLEN 0): Stream::empty() means "not created yet", so the
// protocol removes only a stream that a failed XADD created.
//
// Argument checks follow Redis's order (t_stream.c): XADD and XTRIM parse every option before
// looking the key up; XRANGE parses both IDs and COUNT first; XDEL and XSETID look the key up
// first (XSETID after its options); XREAD checks each key's type before parsing its ID.

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/commands/streams_internal.hpp"
#include "server/core/blocking.hpp"
#include "server/data/stream.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {

namespace {

// stream-node-max-entries / stream-node-max-bytes (CONFIG SET). Relaxed: each XADD reads a value
// some CONFIG SET stored; nothing else is published with it.
std::atomic<std::uint64_t> g_node_max_entries{Stream::kNodeMaxEntries};

std::atomic<std::uint64_t> g_node_max_bytes{Stream::kNodeMaxBytes};

// Redis's string2ull on a C string: string2ll first, then strtoull (which also takes leading
// blanks, a sign and leading zeros).
bool string2ull(const char* s, std::uint64_t* out) {
  std::int64_t ll = 0;
  if (parse_i64(std::string_view(s, std::strlen(s)), &ll)) {
    if (ll < 0) return false;
    *out = static_cast<std::uint64_t>(ll);
    return true;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno == EINVAL || errno == ERANGE || !(*s != '\0' && *end == '\0')) return false;
  *out = v;
  return true;
}

}  // namespace

bool parse_id(std::string_view arg, StreamId* id, std::uint64_t missing_seq, bool strict,
              bool* seq_given) {
  if (arg.size() > 127) return false;
  std::string buf(arg);
  if (strict && (buf[0] == '-' || buf[0] == '+') && buf[1] == '\0') return false;
  if (seq_given != nullptr) *seq_given = true;
  if (buf[0] == '-' && buf[1] == '\0') {
    *id = StreamId{};
    return true;
  }
  if (buf[0] == '+' && buf[1] == '\0') {
    *id = StreamId::max();
    return true;
  }
  char* dot = std::strchr(buf.data(), '-');
  if (dot != nullptr) *dot = '\0';
  std::uint64_t ms = 0, seq = 0;
  if (!string2ull(buf.data(), &ms)) return false;
  if (dot != nullptr) {
    if (seq_given != nullptr && dot[1] == '*' && dot[2] == '\0') {
      *seq_given = false;
    } else if (!string2ull(dot + 1, &seq)) {
      return false;
    }
  } else {
    seq = missing_seq;
  }
  *id = StreamId{ms, seq};
  return true;
}

bool arg_id(CommandContext& ctx, std::string_view arg, StreamId* id, std::uint64_t missing_seq,
            bool strict, bool* seq_given) {
  if (parse_id(arg, id, missing_seq, strict, seq_given)) return true;
  ctx.reply.error(err::kStreamInvalidId);
  return false;
}

bool arg_interval_id(CommandContext& ctx, std::string_view arg, StreamId* id, bool* exclude,
                     std::uint64_t missing_seq) {
  *exclude = arg.size() > 1 && arg[0] == '(';
  if (*exclude) return arg_id(ctx, arg.substr(1), id, missing_seq, true);
  return arg_id(ctx, arg, id, missing_seq, false);
}

void reply_id(ReplyWriter& r, StreamId id) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof buf, "%llu-%llu", static_cast<unsigned long long>(id.ms),
                              static_cast<unsigned long long>(id.seq));
  r.bulk(std::string_view(buf, static_cast<std::size_t>(n)));
}

void reply_entry(ReplyWriter& r, StreamId id, const Stream::Fields& f) {
  r.array(2);
  reply_id(r, id);
  r.array(f.size());
  for (const auto& s : f) r.bulk(s);
}

std::size_t reply_range(ReplyWriter& r, const Stream& s, StreamId start, StreamId end,
                        std::size_t count, bool rev) {
  const auto& e = s.entries();
  std::vector<std::map<StreamId, Stream::Fields>::const_iterator> out;
  if (start <= end) {
    auto lo = e.lower_bound(start);
    auto hi = e.upper_bound(end);
    if (!rev) {
      for (auto it = lo; it != hi && (count == 0 || out.size() < count); ++it) out.push_back(it);
    } else {
      for (auto it = hi; it != lo && (count == 0 || out.size() < count);) out.push_back(--it);
    }
  }
  r.array(out.size());
  for (auto it : out) reply_entry(r, it->first, it->second);
  return out.size();
}

namespace {

struct AddTrimArgs {
  StreamTrim trim;
  StreamId id;
  bool id_given = false;
  bool seq_given = true;
  bool no_mkstream = false;
};

// streamParseAddOrTrimArgsOrReply. Returns the index of XADD's ID (the first field follows it),
// or 0 after replying an error.
std::size_t parse_add_trim(CommandContext& ctx, AddTrimArgs* a, bool xadd) {
  const std::size_t argc = ctx.argc();
  std::size_t i = 2;
  bool limit_given = false;
  for (; i < argc; ++i) {
    const std::size_t more = argc - 1 - i;
    const std::string_view opt = ctx.arg(i);
    if (xadd && opt.size() >= 1 && opt[0] == '*' && (opt.size() == 1 || opt[1] == '\0')) {
      break;
    } else if (iequals(opt, "maxlen") && more > 0) {
      if (a->trim.strategy != StreamTrim::kNone) {
        ctx.reply.error(err::kMaxlenMinid);
        return 0;
      }
      a->trim.approx = false;
      const std::string_view next = ctx.arg(i + 1);
      if (more >= 2 && next.size() >= 1 && (next[0] == '~' || next[0] == '=') &&
          (next.size() == 1 || next[1] == '\0')) {
        a->trim.approx = next[0] == '~';
        ++i;
      }
      std::int64_t maxlen = 0;
      if (!arg_i64(ctx, ctx.arg(i + 1), &maxlen)) return 0;
      if (maxlen < 0) {
        ctx.reply.error(err::kMaxlenNegative);
        return 0;
      }
      a->trim.maxlen = static_cast<std::uint64_t>(maxlen);
      ++i;
      a->trim.strategy = StreamTrim::kMaxLen;
    } else if (iequals(opt, "minid") && more > 0) {
      if (a->trim.strategy != StreamTrim::kNone) {
        ctx.reply.error(err::kMaxlenMinid);
        return 0;
      }
      a->trim.approx = false;
      const std::string_view next = ctx.arg(i + 1);
      if (more >= 2 && next.size() >= 1 && (next[0] == '~' || next[0] == '=') &&
          (next.size() == 1 || next[1] == '\0')) {
        a->trim.approx = next[0] == '~';
        ++i;
      }
      if (!arg_id(ctx, ctx.arg(i + 1), &a->trim.minid, 0, true)) return 0;
      ++i;
      a->trim.strategy = StreamTrim::kMinId;
    } else if (iequals(opt, "limit") && more > 0) {
      std::int64_t limit = 0;
      if (!arg_i64(ctx, ctx.arg(i + 1), &limit)) return 0;
      if (limit < 0) {
        ctx.reply.error(err::kStreamLimitNegative);
        return 0;
      }
      a->trim.limit = limit;
      limit_given = true;
      ++i;
    } else if (xadd && iequals(opt, "nomkstream")) {
      a->no_mkstream = true;
    } else if (xadd) {
      if (!arg_id(ctx, opt, &a->id, 0, true, &a->seq_given)) return 0;
      a->id_given = true;
      break;
    } else {
      ctx.reply.error(err::kSyntax);
      return 0;
    }
  }
  if (a->trim.limit != 0 && a->trim.strategy == StreamTrim::kNone) {
    ctx.reply.error(err::kLimitNoStrategy);
    return 0;
  }
  if (!xadd && a->trim.strategy == StreamTrim::kNone) {
    ctx.reply.error(err::kXtrimNoStrategy);
    return 0;
  }
  if (limit_given) {
    if (!a->trim.approx) {
      ctx.reply.error(err::kLimitNoTilde);
      return 0;
    }
  } else if (a->trim.approx) {
    const auto entries = g_node_max_entries.load(std::memory_order_relaxed);
    a->trim.limit = entries > 100 ? 10001 : static_cast<std::int64_t>(100 * entries);
    if (a->trim.limit <= 0 || a->trim.limit > 10000) a->trim.limit = 10000;
  } else {
    a->trim.limit = 0;
  }
  return i;
}

// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [...]
void xadd_cmd(CommandContext& ctx) {
  AddTrimArgs a;
  const std::size_t idpos = parse_add_trim(ctx, &a, true);
  if (idpos == 0) return;
  const std::size_t field_pos = idpos + 1;
  if (ctx.argc() < field_pos + 2 || (ctx.argc() - field_pos) % 2 == 1) {
    ctx.reply.error(err::wrong_arity("xadd"));
    return;
  }
  if (a.id_given && a.seq_given && a.id == StreamId{}) {
    ctx.reply.error(err::kXaddZero);
    return;
  }
  std::string_view error;
  StreamId added;
  bool trimmed = false;
  const Access acc =
      write_container<StreamObject>(ctx, ctx.arg(1), !a.no_mkstream, [&](Stream& s) -> bool {
        if (s.last_id() == StreamId::max()) {
          error = err::kStreamExhausted;
          return false;
        }
        StreamId id;
        if (!a.id_given) {
          // streamNextID: the clock, or the last ID's successor when the clock is not ahead.
          const auto now = static_cast<std::uint64_t>(ctx.now_ms);
          if (now > s.last_id().ms) {
            id = StreamId{now, 0};
          } else {
            id = s.last_id();
            id.incr();
          }
        } else if (a.seq_given) {
          id = a.id;
        } else if (s.last_id().ms == a.id.ms) {
          if (s.last_id().seq == std::numeric_limits<std::uint64_t>::max()) {
            error = err::kXaddSmaller;
            return false;
          }
          id = s.last_id();
          ++id.seq;
        } else {
          id = StreamId{a.id.ms, 0};
        }
        if (id <= s.last_id()) {
          error = err::kXaddSmaller;
          return false;
        }
        std::size_t total = 0;
        for (std::size_t i = field_pos; i < ctx.argc(); ++i) total += ctx.arg(i).size();
        if (total > Stream::kListpackMaxSize) {
          error = err::kStreamTooLarge;
          return false;
        }
        s.mark_created();
        s.append(id, ctx.argv.subspan(field_pos),
                 g_node_max_entries.load(std::memory_order_relaxed),
                 g_node_max_bytes.load(std::memory_order_relaxed));
        added = id;
        trimmed = s.trim(a.trim) > 0;
        return true;
      });
  if (acc == Access::kWrongType) return;
  if (acc == Access::kMissing) {
    ctx.reply.null();
    return;
  }
  if (!error.empty()) {
    ctx.reply.error(error);
    return;
  }
  notify_keyspace_event(ctx, kNotifyStream, "xadd", ctx.arg(1));
  if (trimmed) notify_keyspace_event(ctx, kNotifyStream, "xtrim", ctx.arg(1));
  reply_id(ctx.reply, added);
}

// XRANGE key start end [COUNT count] and XREVRANGE key end start [COUNT count].
void range_generic(CommandContext& ctx, bool rev) {
  const std::string_view start_arg = rev ? ctx.arg(3) : ctx.arg(2);
  const std::string_view end_arg = rev ? ctx.arg(2) : ctx.arg(3);
  StreamId start, end;
  bool start_ex = false, end_ex = false;
  if (!arg_interval_id(ctx, start_arg, &start, &start_ex, 0)) return;
  if (start_ex && !start.incr()) {
    ctx.reply.error(err::kInvalidStartId);
    return;
  }
  if (!arg_interval_id(ctx, end_arg, &end, &end_ex, std::numeric_limits<std::uint64_t>::max()))
    return;
  if (end_ex && !end.decr()) {
    ctx.reply.error(err::kInvalidEndId);
    return;
  }
  std::int64_t count = -1;
  for (std::size_t j = 4; j < ctx.argc(); ++j) {
    if (iequals(ctx.arg(j), "count") && j + 1 < ctx.argc()) {
      if (!arg_i64(ctx, ctx.arg(j + 1), &count)) return;
      if (count < 0) count = 0;
      ++j;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  const Access a = read_container<StreamObject>(ctx, ctx.arg(1), [&](const Stream& s) {
    if (count == 0) {
      ctx.reply.null_array();
      return;
    }
    reply_range(ctx.reply, s, start, end, count == -1 ? 0 : static_cast<std::size_t>(count), rev);
  });
  if (a == Access::kMissing) ctx.reply.array(0);
}

void xrange_cmd(CommandContext& ctx) {
  range_generic(ctx, false);
}

void xrevrange_cmd(CommandContext& ctx) {
  range_generic(ctx, true);
}

void xlen_cmd(CommandContext& ctx) {
  std::int64_t n = 0;
  const Access a = read_container<StreamObject>(
      ctx, ctx.arg(1), [&](const Stream& s) { n = static_cast<std::int64_t>(s.length()); });
  if (a != Access::kWrongType) ctx.reply.integer(n);
}

// XDEL key id [id ...]: the key first (a missing key answers 0 whatever the IDs), then every ID
// is checked before any is deleted.
void xdel_cmd(CommandContext& ctx) {
  std::int64_t deleted = 0;
  bool bad_id = false;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) -> bool {
    std::vector<StreamId> ids(ctx.argc() - 2);
    for (std::size_t j = 2; j < ctx.argc(); ++j) {
      if (!parse_id(ctx.arg(j), &ids[j - 2], 0, true)) {
        bad_id = true;
        return false;
      }
    }
    bool first_entry = false;
    for (const StreamId& id : ids) {
      if (s.erase(id)) {
        if (id == s.first_id()) first_entry = true;
        if (id > s.max_deleted()) s.set_max_deleted(id);
        ++deleted;
      }
    }
    if (deleted > 0 && (s.length() == 0 || first_entry)) s.refresh_first_id();
    return deleted > 0;
  });
  if (a == Access::kWrongType) return;
  if (bad_id) {
    ctx.reply.error(err::kStreamInvalidId);
    return;
  }
  if (deleted > 0) notify_keyspace_event(ctx, kNotifyStream, "xdel", ctx.arg(1));
  ctx.reply.integer(deleted);
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
void xtrim_cmd(CommandContext& ctx) {
  AddTrimArgs a;
  if (parse_add_trim(ctx, &a, false) == 0) return;
  std::int64_t deleted = 0;
  const Access acc = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) {
    deleted = s.trim(a.trim);
    return deleted > 0;
  });
  if (acc == Access::kOk && deleted > 0)
    notify_keyspace_event(ctx, kNotifyStream, "xtrim", ctx.arg(1));
  if (acc != Access::kWrongType) ctx.reply.integer(deleted);
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
void xsetid_cmd(CommandContext& ctx) {
  StreamId id, max_xdel;
  std::int64_t entries_added = -1;
  if (!arg_id(ctx, ctx.arg(2), &id, 0, true)) return;
  for (std::size_t i = 3; i < ctx.argc();) {
    const bool more = i + 1 < ctx.argc();
    if (iequals(ctx.arg(i), "entriesadded") && more) {
      if (!arg_i64(ctx, ctx.arg(i + 1), &entries_added)) return;
      if (entries_added < 0) {
        ctx.reply.error(err::kEntriesAddedNegative);
        return;
      }
      i += 2;
    } else if (iequals(ctx.arg(i), "maxdeletedid") && more) {
      if (!arg_id(ctx, ctx.arg(i + 1), &max_xdel, 0, true)) return;
      if (id < max_xdel) {
        ctx.reply.error(err::kXsetidBelowMaxDeleted);
        return;
      }
      i += 2;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  std::string_view error;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(1), false, [&](Stream& s) -> bool {
    // Redis 7.0.15 does not compare id with the stream's own max deleted ID (later versions do).
    if (s.length() > 0) {
      if (id < s.last_valid_id()) {
        error = err::kXsetidSmaller;
        return false;
      }
      if (entries_added != -1 && s.length() > static_cast<std::uint64_t>(entries_added)) {
        error = err::kXsetidEntriesAdded;
        return false;
      }
    }
    s.set_last_id(id);
    if (entries_added != -1) s.set_entries_added(static_cast<std::uint64_t>(entries_added));
    if (max_xdel != StreamId{}) s.set_max_deleted(max_xdel);
    return true;
  });
  if (a == Access::kWrongType) return;
  if (a == Access::kMissing) {
    ctx.reply.error(err::kNoSuchKey);
  } else if (!error.empty()) {
    ctx.reply.error(error);
  } else {
    notify_keyspace_event(ctx, kNotifyStream, "xsetid", ctx.arg(1));
    ctx.reply.ok();
  }
}

// XINFO STREAM key [FULL [COUNT count]]
void xinfo_stream_cmd(CommandContext& ctx) {
  const std::size_t optc = ctx.argc() - 3;
  bool full = optc != 0;
  std::int64_t count = 10;
  auto syntax = [&] { ctx.reply.error(err::subcommand_syntax("xinfo", ctx.arg(1))); };
  ObjectRef ref;
  // The key first (no such key, WRONGTYPE), then the options.
  const Access a = lookup_container<StreamObject>(ctx, ctx.arg(2), &ref);
  if (a == Access::kWrongType) return;
  StreamObject* so = a == Access::kOk ? as_container<StreamObject>(ref) : nullptr;
  std::unique_lock<std::mutex> lock;
  if (so != nullptr) {
    lock = std::unique_lock<std::mutex>(so->mu);
    if (so->dead.load(std::memory_order_relaxed) || so->data.empty()) so = nullptr;
  }
  if (so == nullptr) {
    ctx.reply.error(err::kNoSuchKey);
    return;
  }
  if (full) {
    if (optc != 1 && optc != 3) return syntax();
    if (!iequals(ctx.arg(3), "full")) return syntax();
    if (optc == 3) {
      if (!iequals(ctx.arg(4), "count")) return syntax();
      if (!arg_i64(ctx, ctx.arg(5), &count)) return;
      if (count < 0) count = 10;
    }
  }
  const Stream& s = so->data;
  ReplyWriter& r = ctx.reply;
  r.map(full ? 9 : 10);
  r.bulk("length");
  r.integer(static_cast<std::int64_t>(s.length()));
  r.bulk("radix-tree-keys");
  r.integer(static_cast<std::int64_t>(s.node_count()));
  r.bulk("radix-tree-nodes");
  r.integer(static_cast<std::int64_t>(s.radix_tree_nodes()));
  r.bulk("last-generated-id");
  reply_id(r, s.last_id());
  r.bulk("max-deleted-entry-id");
  reply_id(r, s.max_deleted());
  r.bulk("entries-added");
  r.integer(static_cast<std::int64_t>(s.entries_added()));
  r.bulk("recorded-first-entry-id");
  reply_id(r, s.first_id());
  if (!full) {
    r.bulk("groups");
    r.integer(static_cast<std::int64_t>(s.groups().size()));
    const auto& e = s.entries();
    r.bulk("first-entry");
    if (e.empty()) {
      r.null();
    } else {
      reply_entry(r, e.begin()->first, e.begin()->second);
    }
    r.bulk("last-entry");
    if (e.empty()) {
      r.null();
    } else {
      reply_entry(r, e.rbegin()->first, e.rbegin()->second);
    }
    return;
  }
  r.bulk("entries");
  reply_range(r, s, StreamId{}, StreamId::max(), static_cast<std::size_t>(count), false);
  r.bulk("groups");
  r.array(s.groups().size());
  const std::size_t limit = static_cast<std::size_t>(count);
  for (const auto& [name, g] : s.groups()) {
    r.map(7);
    r.bulk("name");
    r.bulk(name);
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
    r.bulk("pel-count");
    r.integer(static_cast<std::int64_t>(g.pel.size()));
    r.bulk("pending");
    const std::size_t np = limit == 0 ? g.pel.size() : std::min(limit, g.pel.size());
    r.array(np);
    std::size_t k = 0;
    for (auto it = g.pel.begin(); k < np; ++it, ++k) {
      r.array(4);
      reply_id(r, it->first);
      r.bulk(it->second.consumer);
      r.integer(it->second.delivery_time);
      r.integer(static_cast<std::int64_t>(it->second.delivery_count));
    }
    r.bulk("consumers");
    r.array(g.consumers.size());
    for (const auto& [cname, cons] : g.consumers) {
      r.map(4);
      r.bulk("name");
      r.bulk(cname);
      r.bulk("seen-time");
      r.integer(cons.seen_time);
      r.bulk("pel-count");
      r.integer(static_cast<std::int64_t>(cons.pel.size()));
      r.bulk("pending");
      const std::size_t nc = limit == 0 ? cons.pel.size() : std::min(limit, cons.pel.size());
      r.array(nc);
      std::size_t j = 0;
      for (auto it = cons.pel.begin(); j < nc; ++it, ++j) {
        const StreamNack& nack = g.pel.at(*it);
        r.array(3);
        reply_id(r, *it);
        r.integer(nack.delivery_time);
        r.integer(static_cast<std::int64_t>(nack.delivery_count));
      }
    }
  }
}

void xinfo_help_cmd(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "CONSUMERS <key> <groupname>",
      "    Show consumers of <groupname>.",
      "GROUPS <key>",
      "    Show the stream consumer groups.",
      "STREAM <key> [FULL [COUNT <count>]",
      "    Show information about the stream.",
      "HELP",
      "    Prints this help.",
  };
  ctx.reply.array(std::size(kLines));
  for (auto l : kLines) ctx.reply.simple(l);
}

void xinfo_without_sub(CommandContext& ctx) {
  ctx.reply.error(err::wrong_arity("xinfo"));
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;

const CommandSpec kXinfoSubcommands[] = {
    {"stream", -3, kReadOnly, xinfo_stream_cmd, 2, 2, 1, "stream", "Get information about a stream",
     "key [FULL [COUNT count]]", "5.0.0", "O(1) (FULL: O(N) in the number of entries returned)"},
    {"groups", 3, kReadOnly, xinfo_groups_cmd, 2, 2, 1, "stream",
     "List the consumer groups of a stream", "key", "5.0.0"},
    {"consumers", 4, kReadOnly, xinfo_consumers_cmd, 2, 2, 1, "stream",
     "List the consumers in a consumer group", "key group", "5.0.0"},
    {"help", 2, kLoading | kStale, xinfo_help_cmd, 0, 0, 0, "stream",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

const CommandSpec kXgroupSubcommands[] = {
    {"create", -5, kRW, xgroup_create_cmd, 2, 2, 1, "stream", "Create a consumer group.",
     "key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]", "5.0.0"},
    {"setid", -5, kWrite, xgroup_setid_cmd, 2, 2, 1, "stream",
     "Set a consumer group to an arbitrary last delivered ID value.",
     "key group id|$ [ENTRIESREAD entries-read]", "5.0.0"},
    {"destroy", 4, kWrite, xgroup_destroy_cmd, 2, 2, 1, "stream", "Destroy a consumer group.",
     "key group", "5.0.0",
     "O(N) where N is the number of entries in the group's pending entries "
     "list (PEL)."},
    {"createconsumer", 5, kRW, xgroup_createconsumer_cmd, 2, 2, 1, "stream",
     "Create a consumer in a consumer group.", "key group consumer", "6.2.0"},
    {"delconsumer", 5, kWrite, xgroup_delconsumer_cmd, 2, 2, 1, "stream",
     "Delete a consumer from a consumer group.", "key group consumer", "5.0.0"},
    {"help", 2, kLoading | kStale, xgroup_help_cmd, 0, 0, 0, "stream",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

const CommandSpec kStreamCommands[] = {
    {"xadd", -5, kRW | kFast, xadd_cmd, 1, 1, 1, "stream", "Appends a new entry to a stream",
     "key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value "
     "[field value ...]",
     "5.0.0",
     "O(1) when adding a new entry, O(N) when trimming where N being the number of "
     "entries evicted."},
    {"xrange", -4, kReadOnly, xrange_cmd, 1, 1, 1, "stream",
     "Return a range of elements in a stream, with IDs matching the specified IDs interval",
     "key start end [COUNT count]", "5.0.0",
     "O(log(N)+M) with N being the number of elements in the stream and M the number of elements "
     "being returned"},
    {"xrevrange", -4, kReadOnly, xrevrange_cmd, 1, 1, 1, "stream",
     "Return a range of elements in a stream, with IDs matching the specified IDs interval, in "
     "reverse order (from greater to smaller IDs) compared to XRANGE",
     "key end start [COUNT count]", "5.0.0",
     "O(log(N)+M) with N being the number of elements in the stream and M the number of elements "
     "being returned"},
    {"xlen", 2, kReadOnly | kFast, xlen_cmd, 1, 1, 1, "stream",
     "Return the number of entries in a stream", "key", "5.0.0"},
    {"xdel", -3, kWrite | kFast, xdel_cmd, 1, 1, 1, "stream",
     "Removes the specified entries from the stream", "key id [id ...]", "5.0.0",
     "O(log N) for each single item to delete in the stream"},
    {"xtrim", -4, kWrite, xtrim_cmd, 1, 1, 1, "stream",
     "Trims the stream to (approximately if '~' is passed) a certain size",
     "key MAXLEN|MINID [=|~] threshold [LIMIT count]", "5.0.0",
     "O(N), with N being the number of evicted entries"},
    {"xsetid", -3, kRW | kFast, xsetid_cmd, 1, 1, 1, "stream",
     "An internal command for replicating stream values",
     "key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]", "5.0.0"},
    {"xread",
     -4,
     kReadOnly,
     xread_cmd,
     0,
     0,
     0,
     "stream",
     "Return never seen elements in multiple streams, with IDs greater than the ones reported by "
     "the caller for each stream",
     "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]",
     "5.0.0",
     "For each stream mentioned: O(N) with N being the number of elements being returned",
     {},
     xread_keys},
    {"xreadgroup",
     -7,
     kWrite,
     xreadgroup_cmd,
     0,
     0,
     0,
     "stream",
     "Return new entries from a stream using a consumer group, or access the history of the "
     "pending entries for a given consumer",
     "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id "
     "[id ...]",
     "5.0.0",
     "For each stream mentioned: O(M) with M the number of elements returned.",
     {},
     xread_keys},
    {"xclaim", -6, kWrite | kFast, xclaim_cmd, 1, 1, 1, "stream",
     "Changes (or acquires) ownership of a message in a consumer group, as if the message was "
     "delivered to the specified consumer.",
     "key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] "
     "[RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]",
     "5.0.0", "O(log N) with N being the number of messages in the PEL of the consumer group."},
    {"xautoclaim", -6, kWrite | kFast, xautoclaim_cmd, 1, 1, 1, "stream",
     "Changes (or acquires) ownership of messages in a consumer group, as if the messages were "
     "delivered to the specified consumer.",
     "key group consumer min-idle-time start [COUNT count] [JUSTID]", "6.2.0",
     "O(1) if COUNT is small."},
    {"xack", -4, kWrite | kFast, xack_cmd, 1, 1, 1, "stream",
     "Marks a pending message as correctly processed, effectively removing it from the pending "
     "entries list of the consumer group",
     "key group id [id ...]", "5.0.0", "O(1) for each message ID processed."},
    {"xpending", -3, kReadOnly, xpending_cmd, 1, 1, 1, "stream",
     "Return information and entries from a stream consumer group pending entries list, that are "
     "messages fetched but never acknowledged.",
     "key group [[IDLE min-idle-time] start end count [consumer]]", "5.0.0",
     "O(N) with N the number of elements returned"},
    {"xgroup", -2, 0, xgroup_without_sub, 0, 0, 0, "stream",
     "A container for consumer groups commands", "", "5.0.0", "Depends on subcommand.",
     kXgroupSubcommands},
    {"xinfo", -2, 0, xinfo_without_sub, 0, 0, 0, "stream",
     "A container for stream introspection commands", "", "5.0.0", "Depends on subcommand.",
     kXinfoSubcommands},
};

}  // namespace

std::span<const CommandSpec> stream_commands() {
  return kStreamCommands;
}

void set_stream_node_limits(std::uint64_t max_entries, std::uint64_t max_bytes) {
  g_node_max_entries.store(max_entries, std::memory_order_relaxed);
  g_node_max_bytes.store(max_bytes, std::memory_order_relaxed);
}

std::uint64_t stream_node_max_entries() {
  return g_node_max_entries.load(std::memory_order_relaxed);
}

std::uint64_t stream_node_max_bytes() {
  return g_node_max_bytes.load(std::memory_order_relaxed);
}

}  // namespace kvlab::server
