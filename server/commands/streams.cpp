// The stream family: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID, XINFO STREAM and XREAD,
// answering as Redis 7.0 does.
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

#include "server/core/blocking.hpp"
#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/data/stream.hpp"

namespace kvlab::server {
namespace {

// stream-node-max-entries / stream-node-max-bytes (CONFIG SET). Relaxed: each XADD reads a value
// some CONFIG SET stored; nothing else is published with it.
std::atomic<std::uint64_t> g_node_max_entries{Stream::kNodeMaxEntries};
std::atomic<std::uint64_t> g_node_max_bytes{Stream::kNodeMaxBytes};

constexpr std::string_view kInvalidId =
    "ERR Invalid stream ID specified as stream command argument";
constexpr std::string_view kMaxlenMinid =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
constexpr std::string_view kMaxlenNegative = "ERR The MAXLEN argument must be >= 0.";
constexpr std::string_view kLimitNegative = "ERR The LIMIT argument must be >= 0.";
constexpr std::string_view kLimitNoStrategy =
    "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy";
constexpr std::string_view kXtrimNoStrategy =
    "ERR syntax error, XTRIM must be called with a trimming strategy";
constexpr std::string_view kLimitNoTilde =
    "ERR syntax error, LIMIT cannot be used without the special ~ option";
constexpr std::string_view kXaddZero = "ERR The ID specified in XADD must be greater than 0-0";
constexpr std::string_view kExhausted =
    "ERR The stream has exhausted the last possible ID, unable to add more items";
constexpr std::string_view kXaddSmaller =
    "ERR The ID specified in XADD is equal or smaller than the target stream top item";
constexpr std::string_view kTooLarge = "ERR Elements are too large to be stored";

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

// streamGenericParseIDOrReply: "-" and "+" (unless strict), "<ms>" (seq = missing_seq),
// "<ms>-<seq>", and, where seq_given is asked for, "<ms>-*". The argument is read as a C string
// (up to its first NUL), as Redis copies it into a 128-byte buffer.
bool parse_id(std::string_view arg, StreamId* id, std::uint64_t missing_seq, bool strict,
              bool* seq_given = nullptr) {
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
            bool strict, bool* seq_given = nullptr) {
  if (parse_id(arg, id, missing_seq, strict, seq_given)) return true;
  ctx.reply.error(kInvalidId);
  return false;
}

// streamParseIntervalIDOrReply: "(" before an ID excludes it (strict inside).
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

// The entries in [start, end] (end = nullopt: to the end), at most count (0: all), in order or
// reversed; returns the number emitted after the array header.
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
        ctx.reply.error(kMaxlenMinid);
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
        ctx.reply.error(kMaxlenNegative);
        return 0;
      }
      a->trim.maxlen = static_cast<std::uint64_t>(maxlen);
      ++i;
      a->trim.strategy = StreamTrim::kMaxLen;
    } else if (iequals(opt, "minid") && more > 0) {
      if (a->trim.strategy != StreamTrim::kNone) {
        ctx.reply.error(kMaxlenMinid);
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
        ctx.reply.error(kLimitNegative);
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
    ctx.reply.error(kLimitNoStrategy);
    return 0;
  }
  if (!xadd && a->trim.strategy == StreamTrim::kNone) {
    ctx.reply.error(kXtrimNoStrategy);
    return 0;
  }
  if (limit_given) {
    if (!a->trim.approx) {
      ctx.reply.error(kLimitNoTilde);
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
    ctx.reply.error(kXaddZero);
    return;
  }
  std::string_view error;
  StreamId added;
  bool trimmed = false;
  const Access acc =
      write_container<StreamObject>(ctx, ctx.arg(1), !a.no_mkstream, [&](Stream& s) -> bool {
        if (s.last_id() == StreamId::max()) {
          error = kExhausted;
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
            error = kXaddSmaller;
            return false;
          }
          id = s.last_id();
          ++id.seq;
        } else {
          id = StreamId{a.id.ms, 0};
        }
        if (id <= s.last_id()) {
          error = kXaddSmaller;
          return false;
        }
        std::size_t total = 0;
        for (std::size_t i = field_pos; i < ctx.argc(); ++i) total += ctx.arg(i).size();
        if (total > Stream::kListpackMaxSize) {
          error = kTooLarge;
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
    ctx.reply.error("ERR invalid start ID for the interval");
    return;
  }
  if (!arg_interval_id(ctx, end_arg, &end, &end_ex, std::numeric_limits<std::uint64_t>::max()))
    return;
  if (end_ex && !end.decr()) {
    ctx.reply.error("ERR invalid end ID for the interval");
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
    ctx.reply.error(kInvalidId);
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
        ctx.reply.error("ERR entries_added must be positive");
        return;
      }
      i += 2;
    } else if (iequals(ctx.arg(i), "maxdeletedid") && more) {
      if (!arg_id(ctx, ctx.arg(i + 1), &max_xdel, 0, true)) return;
      if (id < max_xdel) {
        ctx.reply.error(
            "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id");
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
        error = "ERR The ID specified in XSETID is smaller than the target stream top item";
        return false;
      }
      if (entries_added != -1 && s.length() > static_cast<std::uint64_t>(entries_added)) {
        error =
            "ERR The entries_added specified in XSETID is smaller than the target stream "
            "length";
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

// An argument as Redis's "%s" prints it: up to its first NUL.
std::string cstr(std::string_view s) {
  return std::string(s.substr(0, s.find('\0')));
}

std::string no_group(std::string_view key, std::string_view group) {
  return "NOGROUP No such consumer group '" + cstr(group) + "' for key name '" + cstr(key) + "'";
}

// XINFO GROUPS key
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

// XINFO CONSUMERS key group
void xinfo_consumers_cmd(CommandContext& ctx) {
  const Access a = read_container<StreamObject>(ctx, ctx.arg(2), [&](const Stream& s) {
    auto g = s.groups().find(ctx.arg(3));
    if (g == s.groups().end()) {
      ctx.reply.error(no_group(ctx.arg(2), ctx.arg(3)));
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

constexpr std::string_view kXgroupNeedsKey =
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use "
    "the MKSTREAM option to create an empty stream automatically.";

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
void xgroup_create_cmd(CommandContext& ctx) {
  bool mkstream = false;
  std::int64_t entries_read = -1;
  for (std::size_t i = 5; i < ctx.argc();) {
    if (iequals(ctx.arg(i), "mkstream")) {
      mkstream = true;
      ++i;
    } else if (iequals(ctx.arg(i), "entriesread") && i + 1 < ctx.argc()) {
      if (!arg_i64(ctx, ctx.arg(i + 1), &entries_read)) return;
      if (entries_read < 0 && entries_read != -1)
        return ctx.reply.error("ERR value for ENTRIESREAD must be positive or -1");
      i += 2;
    } else {
      return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
    }
  }
  if (ctx.argc() > 8) {  // the options were fine, the key is checked, then the count fails
    ObjectRef ref;
    const Access a = lookup_container<StreamObject>(ctx, ctx.arg(2), &ref);
    if (a == Access::kWrongType) return;
    if (a == Access::kMissing && !mkstream) return ctx.reply.error(kXgroupNeedsKey);
    return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
  }
  std::string_view error;
  bool busy = false;
  const Access a = write_container<StreamObject>(ctx, ctx.arg(2), mkstream, [&](Stream& s) -> bool {
    StreamId id;
    if (ctx.arg(4) == "$") {
      id = s.last_id();
    } else if (!parse_id(ctx.arg(4), &id, 0, true)) {
      error = kInvalidId;
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
  if (a == Access::kMissing) return ctx.reply.error(kXgroupNeedsKey);
  if (!error.empty()) return ctx.reply.error(error);
  if (busy) return ctx.reply.error("BUSYGROUP Consumer Group name already exists");
  notify_keyspace_event(ctx, kNotifyStream, "xgroup-create", ctx.arg(2));
  ctx.reply.ok();
}

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
  if (a == Access::kMissing) return ctx.reply.error(kXgroupNeedsKey);
  if (nogroup) ctx.reply.error(no_group(ctx.arg(2), ctx.arg(3)));
}

// XGROUP SETID key group id|$ [ENTRIESREAD n]
void xgroup_setid_cmd(CommandContext& ctx) {
  std::int64_t entries_read = -1;
  for (std::size_t i = 5; i < ctx.argc(); i += 2) {
    if (!iequals(ctx.arg(i), "entriesread") || i + 1 >= ctx.argc())
      return ctx.reply.error(err::subcommand_syntax("xgroup", ctx.arg(1)));
    if (!arg_i64(ctx, ctx.arg(i + 1), &entries_read)) return;
    if (entries_read < 0 && entries_read != -1)
      return ctx.reply.error("ERR value for ENTRIESREAD must be positive or -1");
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
      ctx.reply.error(kInvalidId);
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

// XACK key group id [id ...]
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
  if (bad_id) return ctx.reply.error(kInvalidId);
  ctx.reply.integer(acked);
}

// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
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
    if (sx && !start.incr()) return ctx.reply.error("ERR invalid start ID for the interval");
    if (!arg_interval_id(ctx, ctx.arg(at + 1), &end, &ex,
                         std::numeric_limits<std::uint64_t>::max()))
      return;
    if (ex && !end.decr()) return ctx.reply.error("ERR invalid end ID for the interval");
    if (at + 3 < argc) {
      consumer = ctx.arg(at + 3);
      has_consumer = true;
    }
  }
  const std::string nogroup =
      "NOGROUP No such key '" + cstr(ctx.arg(1)) + "' or consumer group '" + cstr(ctx.arg(2)) + "'";
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
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::size_t more = ctx.argc() - i - 1;
    const std::string_view o = ctx.arg(i);
    if (iequals(o, "block") && more > 0) {
      ++i;
      std::int64_t t = 0;
      if (!parse_i64(ctx.arg(i), &t)) {
        ctx.reply.error(err::kTimeoutNotInteger);
        return false;
      }
      if (t < 0) {
        ctx.reply.error(err::kTimeoutNegative);
        return false;
      }
      // A timeout past the clock's range: Redis 7.0 adds it to the clock unchecked, and the
      // wait never ends; so here it is a wait without a timeout.
      a->timeout_ms = t > std::numeric_limits<std::int64_t>::max() - ctx.now_ms ? 0 : t;
    } else if (iequals(o, "count") && more > 0) {
      ++i;
      if (!arg_i64(ctx, ctx.arg(i), &a->count)) return false;
      if (a->count < 0) a->count = 0;
    } else if (iequals(o, "streams") && more > 0) {
      a->streams_arg = i + 1;
      a->streams_count = ctx.argc() - a->streams_arg;
      if (a->streams_count % 2 != 0) {
        // Redis 7.0 words it so for XREADGROUP too.
        ctx.reply.error(
            "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be "
            "specified.");
        return false;
      }
      a->streams_count /= 2;
      break;
    } else if (iequals(o, "group") && more >= 2) {
      if (!a->xreadgroup) {
        ctx.reply.error(
            "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.");
        return false;
      }
      a->group = ctx.arg(i + 1);
      a->consumer = ctx.arg(i + 2);
      a->has_group = true;
      i += 2;
    } else if (iequals(o, "noack")) {
      if (!a->xreadgroup) {
        ctx.reply.error(
            "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.");
        return false;
      }
      a->noack = true;
    } else {
      ctx.reply.error(err::kSyntax);
      return false;
    }
  }
  if (a->streams_arg == 0) {
    ctx.reply.error(err::kSyntax);
    return false;
  }
  if (a->xreadgroup && !a->has_group) {
    ctx.reply.error("ERR Missing GROUP option for XREADGROUP");
    return false;
  }
  return true;
}

// XREAD's keys: the first half of what follows STREAMS (rounded down, as Redis's key spec counts
// them), found as the parser finds it.
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
      ctx.reply.error(
          "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
          "<consumer> option.");
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

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-ms]
// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]
void xclaim_cmd(CommandContext& ctx) {
  const std::string nogroup =
      "NOGROUP No such key '" + cstr(ctx.arg(1)) + "' or consumer group '" + cstr(ctx.arg(2)) + "'";
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
      ctx.reply.error("ERR Invalid min-idle-time argument for XCLAIM");
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
        ctx.reply.error("ERR Invalid " + std::string(what) + " option argument for XCLAIM");
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
        ctx.reply.error("ERR Unrecognized XCLAIM option '" + cstr(opt) + "'");
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

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
void xautoclaim_cmd(CommandContext& ctx) {
  std::int64_t minidle = 0, count = 100;
  bool justid = false;
  if (!parse_i64(ctx.arg(4), &minidle))
    return ctx.reply.error("ERR Invalid min-idle-time argument for XAUTOCLAIM");
  if (minidle < 0) minidle = 0;
  StreamId start;
  bool sx = false;
  if (!arg_interval_id(ctx, ctx.arg(5), &start, &sx, 0)) return;
  if (sx && !start.incr()) return ctx.reply.error("ERR invalid start ID for the interval");
  for (std::size_t j = 6; j < ctx.argc(); ++j) {
    if (iequals(ctx.arg(j), "count") && j + 1 < ctx.argc()) {
      constexpr std::int64_t kMaxCount = std::numeric_limits<std::int64_t>::max() / 16;
      if (!parse_i64(ctx.arg(j + 1), &count) || count < 1 || count > kMaxCount)
        return ctx.reply.error("ERR COUNT must be > 0");
      ++j;
    } else if (iequals(ctx.arg(j), "justid")) {
      justid = true;
    } else {
      return ctx.reply.error(err::kSyntax);
    }
  }
  const std::string nogroup =
      "NOGROUP No such key '" + cstr(ctx.arg(1)) + "' or consumer group '" + cstr(ctx.arg(2)) + "'";
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

// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...]
// id|> [id|> ...]. ">" reads new entries (and adds them to the PEL unless NOACK); an ID reads the
// consumer's own pending history after it.
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
      ctx.reply.error("NOGROUP No such key '" + cstr(key) + "' or consumer group '" +
                      cstr(a.group) + "' in XREADGROUP with GROUP option");
      return;
    }
    if (id_arg == "$") {
      ctx.reply.error(
          "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history "
          "of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ "
          "ID would just return an empty result set.");
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

}  // namespace

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
            w.error("NOGROUP the consumer group this client was blocked on no longer exists");
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
      w.error("UNBLOCKED the stream key no longer exists");
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

namespace {

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
