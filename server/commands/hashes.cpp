// The hash family: HSET/HMSET/HSETNX, HGET/HMGET, HDEL, HGETALL/HKEYS/HVALS, HLEN, HEXISTS,
// HSTRLEN, HINCRBY, HINCRBYFLOAT, HRANDFIELD and HSCAN.
//
// A hash is a HashObject (server/data/value_types.hpp): HashFields (server/data/hash_fields.hpp)
// behind the container's mutex, reached only through server/commands/containers.hpp. Every command
// touches one key and is one read_container/write_container call, so it is atomic on its key
// (HINCRBY from many clients never loses an increment); a hash whose last field is deleted
// disappears. Handlers reply from inside the access function when that saves a copy: it runs at
// most once, and only when the access returns kOk.
//
// Argument checks follow Redis's order: increments are parsed before the key is looked up; HSCAN
// validates the cursor first, answers an empty page for a missing key, then checks its options.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/commands/common.hpp"
#include "server/commands/containers.hpp"
#include "server/commands/scan_args.hpp"
#include "server/data/value_types.hpp"

namespace kvlab::server {
namespace {

using Hash = HashObject::Data;

std::mt19937_64& rng() {
  thread_local std::mt19937_64 r{std::random_device{}()};
  return r;
}

// HSET key field value [field value ...] (the number of new fields) and HMSET (OK).
void hset_generic(CommandContext& ctx, bool hmset) {
  if (ctx.argc() % 2 != 0) {
    ctx.reply.error(err::wrong_arity(hmset ? "hmset" : "hset"));
    return;
  }
  std::int64_t added = 0;
  const Access a = write_container<HashObject>(ctx, ctx.arg(1), true, [&](Hash& h) {
    for (std::size_t i = 2; i + 1 < ctx.argc(); i += 2) added += h.set(ctx.arg(i), ctx.arg(i + 1));
  });
  if (a == Access::kWrongType) return;
  notify_keyspace_event(ctx, kNotifyHash, "hset", ctx.arg(1));
  if (hmset) {
    ctx.reply.ok();
  } else {
    ctx.reply.integer(added);
  }
}
void hset_cmd(CommandContext& ctx) { hset_generic(ctx, false); }
void hmset_cmd(CommandContext& ctx) { hset_generic(ctx, true); }

void hsetnx_cmd(CommandContext& ctx) {
  bool added = false;
  const Access a = write_container<HashObject>(
      ctx, ctx.arg(1), true, [&](Hash& h) { return added = h.set_if_absent(ctx.arg(2), ctx.arg(3)); });
  if (a == Access::kOk && added) notify_keyspace_event(ctx, kNotifyHash, "hset", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(added ? 1 : 0);
}

void hget_cmd(CommandContext& ctx) {
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    if (const std::string* v = h.get(ctx.arg(2))) {
      ctx.reply.bulk(*v);
    } else {
      ctx.reply.null();
    }
  });
  if (a == Access::kMissing) ctx.reply.null();
}

void hmget_cmd(CommandContext& ctx) {
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    ctx.reply.array(ctx.argc() - 2);
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      if (const std::string* v = h.get(ctx.arg(i))) {
        ctx.reply.bulk(*v);
      } else {
        ctx.reply.null();
      }
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(ctx.argc() - 2);
    for (std::size_t i = 2; i < ctx.argc(); ++i) ctx.reply.null();
  }
}

void hdel_cmd(CommandContext& ctx) {
  std::int64_t removed = 0;
  const Access a = write_container<HashObject>(ctx, ctx.arg(1), false, [&](Hash& h) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) removed += h.erase(ctx.arg(i)) ? 1 : 0;
    return removed > 0;
  });
  if (a == Access::kOk && removed > 0) notify_container_write(ctx, kNotifyHash, "hdel", ctx.arg(1));
  if (a != Access::kWrongType) ctx.reply.integer(removed);
}

enum Parts { kFields = 1, kValues = 2 };

// HGETALL (a map: a flat field/value array in RESP2), HKEYS, HVALS.
void getall_generic(CommandContext& ctx, int parts) {
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    if (parts == (kFields | kValues)) {
      ctx.reply.map(h.size());
    } else {
      ctx.reply.array(h.size());
    }
    for (const auto& [field, value] : h) {
      if (parts & kFields) ctx.reply.bulk(field);
      if (parts & kValues) ctx.reply.bulk(value);
    }
  });
  if (a == Access::kMissing) {
    if (parts == (kFields | kValues)) {
      ctx.reply.map(0);
    } else {
      ctx.reply.array(0);
    }
  }
}
void hgetall_cmd(CommandContext& ctx) { getall_generic(ctx, kFields | kValues); }
void hkeys_cmd(CommandContext& ctx) { getall_generic(ctx, kFields); }
void hvals_cmd(CommandContext& ctx) { getall_generic(ctx, kValues); }

void hlen_cmd(CommandContext& ctx) {
  std::int64_t n = 0;
  const Access a = read_container<HashObject>(
      ctx, ctx.arg(1), [&](const Hash& h) { n = static_cast<std::int64_t>(h.size()); });
  if (a != Access::kWrongType) ctx.reply.integer(n);
}

void hexists_cmd(CommandContext& ctx) {
  bool found = false;
  const Access a = read_container<HashObject>(
      ctx, ctx.arg(1), [&](const Hash& h) { found = h.get(ctx.arg(2)) != nullptr; });
  if (a != Access::kWrongType) ctx.reply.integer(found ? 1 : 0);
}

void hstrlen_cmd(CommandContext& ctx) {
  std::int64_t len = 0;
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    if (const std::string* v = h.get(ctx.arg(2))) len = static_cast<std::int64_t>(v->size());
  });
  if (a != Access::kWrongType) ctx.reply.integer(len);
}

void hincrby_cmd(CommandContext& ctx) {
  std::int64_t by = 0;
  if (!arg_i64(ctx, ctx.arg(3), &by)) return;
  std::int64_t result = 0;
  std::string_view error;
  // A missing key is created; fn then adds the field, so no empty hash is ever left behind.
  const Access a = write_container<HashObject>(ctx, ctx.arg(1), true, [&](Hash& h) {
    std::string* cur = h.get(ctx.arg(2));
    std::int64_t base = 0;
    if (cur != nullptr && !parse_i64(*cur, &base)) {
      error = err::kHashNotInteger;
      return;
    }
    if ((by < 0 && base < 0 && by < std::numeric_limits<std::int64_t>::min() - base) ||
        (by > 0 && base > 0 && by > std::numeric_limits<std::int64_t>::max() - base)) {
      error = err::kOverflow;
      return;
    }
    result = base + by;
    char buf[24];
    const std::string_view text(buf, format_i64(result, buf));
    if (cur != nullptr) {
      cur->assign(text);
    } else {
      h.set(ctx.arg(2), text);
    }
  });
  if (a == Access::kWrongType) return;
  if (!error.empty()) {
    ctx.reply.error(error);
  } else {
    notify_keyspace_event(ctx, kNotifyHash, "hincrby", ctx.arg(1));
    ctx.reply.integer(result);
  }
}

void hincrbyfloat_cmd(CommandContext& ctx) {
  long double by = 0;
  if (!parse_long_double(ctx.arg(3), &by)) {
    ctx.reply.error(err::kNotFloat);
    return;
  }
  if (std::isinf(by)) {
    ctx.reply.error(err::kIncrementNanOrInf);
    return;
  }
  std::string result;
  std::string_view error;
  const Access a = write_container<HashObject>(ctx, ctx.arg(1), true, [&](Hash& h) {
    std::string* cur = h.get(ctx.arg(2));
    long double base = 0;
    if (cur != nullptr && !parse_long_double(*cur, &base)) {
      error = err::kHashNotFloat;
      return;
    }
    const long double sum = base + by;
    if (std::isnan(sum) || std::isinf(sum)) {
      error = err::kNanOrInf;
      return;  // a hash created for this call is still empty: the protocol removes it again
    }
    result = format_long_double_human(sum);
    if (cur != nullptr) {
      cur->assign(result);
    } else {
      h.set(ctx.arg(2), result);
    }
  });
  if (a == Access::kWrongType) return;
  if (!error.empty()) {
    ctx.reply.error(error);
  } else {
    notify_keyspace_event(ctx, kNotifyHash, "hincrbyfloat", ctx.arg(1));
    ctx.reply.bulk(result);
  }
}

// HRANDFIELD key [count [WITHVALUES]]: positive count → distinct fields (all when count ≥ size);
// negative → |count| independent picks, repeats allowed.
void hrandfield_cmd(CommandContext& ctx) {
  if (ctx.argc() == 2) {
    const Access a = read_container<HashObject>(
        ctx, ctx.arg(1), [&](const Hash& h) { ctx.reply.bulk(h.random_entry(rng()).first); });
    if (a == Access::kMissing) ctx.reply.null();
    return;
  }
  std::int64_t l = 0;
  if (!arg_i64(ctx, ctx.arg(2), &l)) return;
  if (l == std::numeric_limits<std::int64_t>::min()) {  // the count's range before the syntax
    ctx.reply.error(err::kOutOfRangeLong);
    return;
  }
  if (ctx.argc() > 4 || (ctx.argc() == 4 && !iequals(ctx.arg(3), "withvalues"))) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const bool withvalues = ctx.argc() == 4;
  // As Redis: with values the reply length 2·|count| must not overflow.
  if (withvalues && (l < -std::numeric_limits<std::int64_t>::max() / 2 ||
                     l > std::numeric_limits<std::int64_t>::max() / 2)) {
    ctx.reply.error(err::kOutOfRange);
    return;
  }
  const bool pairs = withvalues && ctx.reply.resp3();  // RESP3: [field, value] pairs
  const std::size_t per = withvalues && !pairs ? 2 : 1;
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    auto emit = [&](const auto& entry) {
      if (pairs) ctx.reply.array(2);
      ctx.reply.bulk(entry.first);
      if (withvalues) ctx.reply.bulk(entry.second);
    };
    auto& r = rng();
    if (l < 0) {
      if (l < -kMaxRandomReply) {  // as SRANDMEMBER and ZRANDMEMBER
        ctx.reply.error(err::kRandomCountTooLarge);
        return;
      }
      const auto n = static_cast<std::uint64_t>(-l);
      ctx.reply.array(n * per);
      for (std::uint64_t i = 0; i < n && !reply_full(ctx); ++i) emit(h.random_entry(r));
      return;
    }
    const auto n = static_cast<std::uint64_t>(l);
    const std::size_t size = h.size();
    if (n >= size) {
      ctx.reply.array(size * per);
      for (const auto& entry : h) emit(entry);
      return;
    }
    ctx.reply.array(n * per);
    if (n * 3 > size) {
      // Selection sampling (Knuth's Algorithm S): one pass, every n-subset equally likely.
      std::uint64_t needed = n, left = size;
      for (const auto& entry : h) {
        if (needed == 0) break;
        if (std::uniform_int_distribution<std::uint64_t>(0, left - 1)(r) < needed) {
          emit(entry);
          --needed;
        }
        --left;
      }
      return;
    }
    // Few fields from a big hash: random picks until n distinct ones (expected < 1.5n picks).
    std::unordered_set<const void*> seen;
    seen.reserve(n);
    while (seen.size() < n) {
      const auto& entry = h.random_entry(r);
      if (seen.insert(&entry).second) emit(entry);
    }
  });
  if (a == Access::kMissing) ctx.reply.array(0);
}

// HSCAN key cursor [MATCH pattern] [COUNT count] [NOVALUES]
void hscan_cmd(CommandContext& ctx) {
  ScanArgs args;
  if (!parse_scan_cursor_arg(ctx, 2, &args)) return;
  const std::string_view error = scan_options_error(ctx, 3, kScanNoValues, &args);
  const std::uint64_t cursor = args.cursor;
  const std::string_view pattern = args.pattern;
  const bool has_pattern = args.has_pattern, novalues = args.novalues;
  const std::int64_t count = static_cast<std::int64_t>(args.count);
  const Access a = read_container<HashObject>(ctx, ctx.arg(1), [&](const Hash& h) {
    if (!error.empty()) {
      ctx.reply.error(error);
      return;
    }
    std::vector<std::pair<std::string_view, std::string_view>> out;
    auto visit = [&](std::string_view field, std::string_view value) {
      if (!has_pattern || glob_match(pattern, field)) out.emplace_back(field, value);
    };
    std::uint64_t next = 0;
    // A hash Redis would keep in a listpack is answered in one page with cursor 0, as Redis does.
    if (hash_is_listpack(h)) {
      for (const auto& [field, value] : h) visit(field, value);
    } else {
      next = h.scan(cursor, static_cast<std::size_t>(count), visit);
    }
    ctx.reply.array(2);
    ctx.reply.bulk(std::to_string(next));
    ctx.reply.array(out.size() * (novalues ? 1 : 2));
    for (const auto& [field, value] : out) {
      ctx.reply.bulk(field);
      if (!novalues) ctx.reply.bulk(value);
    }
  });
  if (a == Access::kMissing) {
    ctx.reply.array(2);
    ctx.reply.bulk("0");
    ctx.reply.array(0);
  }
}

constexpr std::uint32_t kRW = kWrite | kDenyOom;
const CommandSpec kHashCommands[] = {
    {"hset", -4, kRW | kFast, hset_cmd, 1, 1, 1, "hash", "Set the string value of a hash field",
     "key field value [field value ...]", "2.0.0",
     "O(1) for each field/value pair added, so O(N) to add N field/value pairs"},
    {"hmset", -4, kRW | kFast, hmset_cmd, 1, 1, 1, "hash",
     "Set multiple hash fields to multiple values (deprecated: use HSET)",
     "key field value [field value ...]", "2.0.0", "O(N) where N is the number of fields being set"},
    {"hsetnx", 4, kRW | kFast, hsetnx_cmd, 1, 1, 1, "hash",
     "Set the value of a hash field, only if the field does not exist", "key field value", "2.0.0"},
    {"hget", 3, kReadOnly | kFast, hget_cmd, 1, 1, 1, "hash", "Get the value of a hash field",
     "key field", "2.0.0"},
    {"hmget", -3, kReadOnly | kFast, hmget_cmd, 1, 1, 1, "hash",
     "Get the values of all the given hash fields", "key field [field ...]", "2.0.0",
     "O(N) where N is the number of fields being requested"},
    {"hdel", -3, kWrite | kFast, hdel_cmd, 1, 1, 1, "hash", "Delete one or more hash fields",
     "key field [field ...]", "2.0.0", "O(N) where N is the number of fields to be removed"},
    {"hgetall", 2, kReadOnly, hgetall_cmd, 1, 1, 1, "hash", "Get all the fields and values in a hash",
     "key", "2.0.0", "O(N) where N is the size of the hash"},
    {"hkeys", 2, kReadOnly, hkeys_cmd, 1, 1, 1, "hash", "Get all the fields in a hash", "key",
     "2.0.0", "O(N) where N is the size of the hash"},
    {"hvals", 2, kReadOnly, hvals_cmd, 1, 1, 1, "hash", "Get all the values in a hash", "key",
     "2.0.0", "O(N) where N is the size of the hash"},
    {"hlen", 2, kReadOnly | kFast, hlen_cmd, 1, 1, 1, "hash", "Get the number of fields in a hash",
     "key", "2.0.0"},
    {"hexists", 3, kReadOnly | kFast, hexists_cmd, 1, 1, 1, "hash",
     "Determine if a hash field exists", "key field", "2.0.0"},
    {"hstrlen", 3, kReadOnly | kFast, hstrlen_cmd, 1, 1, 1, "hash",
     "Get the length of the value of a hash field", "key field", "3.2.0"},
    {"hincrby", 4, kRW | kFast, hincrby_cmd, 1, 1, 1, "hash",
     "Increment the integer value of a hash field by the given number", "key field increment",
     "2.0.0"},
    {"hincrbyfloat", 4, kRW | kFast, hincrbyfloat_cmd, 1, 1, 1, "hash",
     "Increment the float value of a hash field by the given amount", "key field increment",
     "2.6.0"},
    {"hrandfield", -2, kReadOnly, hrandfield_cmd, 1, 1, 1, "hash",
     "Get one or multiple random fields from a hash", "key [count [WITHVALUES]]", "6.2.0",
     "O(N) where N is the number of fields returned (O(size) when count is close to the size)"},
    {"hscan", -3, kReadOnly, hscan_cmd, 1, 1, 1, "hash", "Incrementally iterate hash fields and "
     "associated values", "key cursor [MATCH pattern] [COUNT count] [NOVALUES]", "2.8.0",
     "O(log N + COUNT) per call on an unchanged hash; O(N log N) when a scan starts or after a "
     "field was deleted"},
};

}  // namespace

std::span<const CommandSpec> hash_commands() { return kHashCommands; }

}  // namespace kvlab::server
