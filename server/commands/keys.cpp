// The generic key family: DEL/UNLINK, EXISTS, TYPE, the expiry commands, KEYS, SCAN, RANDOMKEY.
//
// KEYS, SCAN and RANDOMKEY walk the keyspace with for_each (weakly consistent, O(N)). SCAN needs a
// resumable position that the keyspace interface does not offer, so it orders keys by a 64-bit
// hash: the cursor is "every key whose hash is below this has been returned". Each connection keeps
// a sorted snapshot of up to kScanSnapshot keys from its cursor on, so a full scan costs about
// N/kScanSnapshot walks of the keyspace rather than one per call. Redis's guarantee holds: a key
// present for the whole iteration is returned (at least once); keys added or removed meanwhile may
// or may not be.
#include <algorithm>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "server/commands/common.hpp"
#include "server/container.hpp"

namespace kvlab::server {
namespace {

using U = Update<Value>;

void del_cmd(CommandContext& ctx) {
  std::int64_t removed = 0;
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    bool was_live = false;
    ctx.ks.update(ctx.arg(i), [&](const Value* cur) {
      was_live = live(cur, ctx.now_ms) != nullptr;
      return cur != nullptr ? U::erase() : U::keep();
    });
    removed += was_live ? 1 : 0;
  }
  ctx.reply.integer(removed);
}

void exists_cmd(CommandContext& ctx) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < ctx.argc(); ++i)
    if (read_live(ctx, ctx.arg(i), [](const Value&) {})) ++n;
  ctx.reply.integer(n);
}

std::string_view type_name(ObjectType t) {
  switch (t) {
    case ObjectType::kString: return "string";
    case ObjectType::kList: return "list";
    case ObjectType::kSet: return "set";
    case ObjectType::kHash: return "hash";
    case ObjectType::kZSet: return "zset";
  }
  return "none";
}

// "none" for a container that was emptied and is being unlinked (see server/container.hpp).
std::string_view value_type_name(const Value& v) {
  if (live_container_is_dead(v)) return "none";
  return type_name(v.obj->type());
}

void type_cmd(CommandContext& ctx) {
  std::string_view name = "none";
  read_live(ctx, ctx.arg(1), [&](const Value& v) { name = value_type_name(v); });
  ctx.reply.simple(name);
}

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX|XX|GT|LT]
void expire_generic(CommandContext& ctx, TimeUnit unit, bool absolute, std::string_view name) {
  bool nx = false, xx = false, gt = false, lt = false;
  for (std::size_t i = 3; i < ctx.argc(); ++i) {
    const std::string_view a = ctx.arg(i);
    if (iequals(a, "nx")) {
      nx = true;
    } else if (iequals(a, "xx")) {
      xx = true;
    } else if (iequals(a, "gt")) {
      gt = true;
    } else if (iequals(a, "lt")) {
      lt = true;
    } else {
      ctx.reply.error(err::unsupported_option(a));
      return;
    }
  }
  if (nx && (xx || gt || lt)) {
    ctx.reply.error(err::kExpireNxXxGtLt);
    return;
  }
  if (gt && lt) {
    ctx.reply.error(err::kExpireGtLt);
    return;
  }
  std::int64_t when = 0;
  if (!arg_i64(ctx, ctx.arg(2), &when)) return;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  if (unit == TimeUnit::kSeconds) {
    if (when > kMax / 1000 || when < kMin / 1000) {
      ctx.reply.error(err::invalid_expire(name));
      return;
    }
    when *= 1000;
  }
  if (!absolute) {
    if (when > kMax - ctx.now_ms) {
      ctx.reply.error(err::invalid_expire(name));
      return;
    }
    when += ctx.now_ms;
  }
  // A non-positive absolute time is "already expired"; 0 is our "no expiry" marker, so clamp.
  const std::int64_t at = when <= 0 ? 1 : when;
  bool applied = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    applied = false;
    if (v == nullptr) return U::keep();
    const bool has_ttl = v->expire_ms != 0;
    if (nx && has_ttl) return U::keep();
    if (xx && !has_ttl) return U::keep();
    if (gt && (!has_ttl || at <= v->expire_ms)) return U::keep();
    if (lt && has_ttl && at >= v->expire_ms) return U::keep();
    applied = true;
    if (at <= ctx.now_ms) return U::erase();
    return U::assign(Value{v->obj, at});
  });
  if (applied && at > ctx.now_ms) ctx.worker.track_expiry(ctx.arg(1), at);
  ctx.reply.integer(applied ? 1 : 0);
}

void expire_cmd(CommandContext& ctx) { expire_generic(ctx, TimeUnit::kSeconds, false, "expire"); }
void pexpire_cmd(CommandContext& ctx) {
  expire_generic(ctx, TimeUnit::kMilliseconds, false, "pexpire");
}
void expireat_cmd(CommandContext& ctx) {
  expire_generic(ctx, TimeUnit::kSeconds, true, "expireat");
}
void pexpireat_cmd(CommandContext& ctx) {
  expire_generic(ctx, TimeUnit::kMilliseconds, true, "pexpireat");
}

enum class TtlKind { kTtl, kPttl, kExpireTime, kPExpireTime };

void ttl_generic(CommandContext& ctx, TtlKind kind) {
  std::int64_t expire = -3;
  if (!read_live(ctx, ctx.arg(1), [&](const Value& v) { expire = v.expire_ms; })) {
    ctx.reply.integer(-2);
    return;
  }
  if (expire == 0) {
    ctx.reply.integer(-1);
    return;
  }
  const std::int64_t left = std::max<std::int64_t>(expire - ctx.now_ms, 0);
  switch (kind) {
    case TtlKind::kTtl: ctx.reply.integer((left + 500) / 1000); break;
    case TtlKind::kPttl: ctx.reply.integer(left); break;
    case TtlKind::kExpireTime: ctx.reply.integer(expire / 1000); break;
    case TtlKind::kPExpireTime: ctx.reply.integer(expire); break;
  }
}
void ttl_cmd(CommandContext& ctx) { ttl_generic(ctx, TtlKind::kTtl); }
void pttl_cmd(CommandContext& ctx) { ttl_generic(ctx, TtlKind::kPttl); }
void expiretime_cmd(CommandContext& ctx) { ttl_generic(ctx, TtlKind::kExpireTime); }
void pexpiretime_cmd(CommandContext& ctx) { ttl_generic(ctx, TtlKind::kPExpireTime); }

void persist_cmd(CommandContext& ctx) {
  bool removed = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    removed = v != nullptr && v->expire_ms != 0;
    return removed ? U::assign(Value{v->obj, 0}) : U::keep();
  });
  ctx.reply.integer(removed ? 1 : 0);
}

// KEYS, SCAN and RANDOMKEY walk the keyspace. Backends whose for_each needs quiescent writers
// (traits().concurrent_for_each == false) may only do so when this is the only worker.
bool can_walk(CommandContext& ctx) {
  if (ctx.ks.traits().concurrent_for_each || ctx.server.num_workers() == 1) return true;
  ctx.reply.error("ERR backend " + std::string(ctx.ks.traits().name) +
                  " cannot iterate keys while other workers write (no concurrent_for_each); "
                  "restart with --threads 1 or another backend");
  return false;
}

void keys_cmd(CommandContext& ctx) {
  if (!can_walk(ctx)) return;
  const std::string_view pattern = ctx.arg(1);
  const bool all = pattern == "*";
  std::vector<std::string> out;
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (v.expired_at(ctx.now_ms)) return;
    if (all || glob_match(pattern, key)) out.emplace_back(key);
  });
  ctx.reply.array(out.size());
  for (const auto& k : out) ctx.reply.bulk(k);
}

constexpr std::size_t kScanSnapshot = 100000;

std::uint64_t key_hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

void rebuild_scan(CommandContext& ctx, std::uint64_t from) {
  auto& sc = ctx.conn.scan;
  sc.keys.clear();
  sc.truncated = false;
  std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
  auto by_hash = [](const auto& a, const auto& b) { return a.first < b.first; };
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (v.expired_at(ctx.now_ms)) return;
    const std::uint64_t h = key_hash(key);
    if (h < from || h > limit) return;
    sc.keys.emplace_back(h, std::string(key));
    if (sc.keys.size() >= 2 * kScanSnapshot) {
      std::nth_element(sc.keys.begin(), sc.keys.begin() + kScanSnapshot - 1, sc.keys.end(), by_hash);
      sc.keys.resize(kScanSnapshot);
      limit = sc.keys.back().first;
      for (const auto& e : sc.keys) limit = std::max(limit, e.first);
      sc.truncated = true;
    }
  });
  std::sort(sc.keys.begin(), sc.keys.end(), by_hash);
  if (sc.keys.size() > kScanSnapshot) {
    sc.keys.resize(kScanSnapshot);
    sc.truncated = true;
  }
  sc.pos = 0;
  sc.cursor = from;
  sc.valid = true;
}

void scan_cmd(CommandContext& ctx) {
  std::uint64_t cursor = 0;
  if (!parse_scan_cursor(ctx.arg(1), &cursor)) {
    ctx.reply.error(err::kInvalidCursor);
    return;
  }
  std::string_view pattern;
  std::string_view type;
  bool has_pattern = false, has_type = false;
  std::int64_t count = 10;
  for (std::size_t i = 2; i < ctx.argc(); i += 2) {
    const std::string_view a = ctx.arg(i);
    if (i + 1 >= ctx.argc()) {
      ctx.reply.error(err::kSyntax);
      return;
    }
    if (iequals(a, "count")) {
      if (!arg_i64(ctx, ctx.arg(i + 1), &count)) return;
      if (count < 1) {
        ctx.reply.error(err::kSyntax);
        return;
      }
    } else if (iequals(a, "match")) {
      pattern = ctx.arg(i + 1);
      has_pattern = pattern != "*";
    } else if (iequals(a, "type")) {
      type = ctx.arg(i + 1);
      has_type = true;
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  auto& sc = ctx.conn.scan;
  if (!sc.valid || sc.cursor != cursor) {
    if (!can_walk(ctx)) return;
    rebuild_scan(ctx, cursor);
  }
  std::vector<std::string_view> out;
  std::size_t examined = 0;
  while (sc.pos < sc.keys.size() && examined < static_cast<std::size_t>(count)) {
    const auto& [h, key] = sc.keys[sc.pos++];
    ++examined;
    if (has_pattern && !glob_match(pattern, key)) continue;
    if (has_type) {
      std::string_view actual = "none";
      read_live(ctx, key, [&](const Value& v) { actual = value_type_name(v); });
      if (!iequals(type, actual)) continue;
    }
    out.push_back(key);
  }
  std::uint64_t next = 0;
  if (sc.pos < sc.keys.size()) {
    next = sc.keys[sc.pos].first;
    if (next == 0) next = 1;  // 0 means "done"; only a key hashing to exactly 0 could hit this
  } else if (sc.truncated && !sc.keys.empty() &&
             sc.keys.back().first != std::numeric_limits<std::uint64_t>::max()) {
    next = sc.keys.back().first + 1;
  }
  ctx.reply.array(2);
  ctx.reply.bulk(std::to_string(next));  // cursors are unsigned 64-bit
  ctx.reply.array(out.size());
  for (auto k : out) ctx.reply.bulk(k);
  if (next == 0 || sc.pos >= sc.keys.size()) {
    sc.valid = false;  // the next call (a new scan, or the next snapshot) rebuilds
  } else {
    sc.cursor = next;
  }
  if (!sc.valid) {
    sc.keys.clear();
    sc.keys.shrink_to_fit();
  }
}

void randomkey_cmd(CommandContext& ctx) {
  if (!can_walk(ctx)) return;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string chosen;
  std::uint64_t seen = 0;
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (v.expired_at(ctx.now_ms)) return;
    ++seen;
    if (rng() % seen == 0) chosen.assign(key);
  });
  if (seen == 0) {
    ctx.reply.null();
  } else {
    ctx.reply.bulk(chosen);
  }
}

const CommandSpec kKeyCommands[] = {
    {"del", -2, kWrite | kMultiKeyPerKeyAtomic, del_cmd, 1, -1, 1, "generic", "Delete a key",
     "key ...", "1.0.0", "O(N) where N is the number of keys that will be removed"},
    {"unlink", -2, kWrite | kFast | kMultiKeyPerKeyAtomic, del_cmd, 1, -1, 1, "generic",
     "Delete a key (memory is reclaimed as soon as no reader holds it)", "key ...", "4.0.0",
     "O(1) for each key removed"},
    {"exists", -2, kReadOnly | kFast | kMultiKeyPerKeyAtomic, exists_cmd, 1, -1, 1, "generic",
     "Determine if a key exists", "key ...", "1.0.0", "O(N) where N is the number of keys"},
    {"type", 2, kReadOnly | kFast, type_cmd, 1, 1, 1, "generic",
     "Determine the type stored at key", "key"},
    {"expire", -3, kWrite | kFast, expire_cmd, 1, 1, 1, "generic",
     "Set a key's time to live in seconds", "key seconds [NX|XX|GT|LT]"},
    {"pexpire", -3, kWrite | kFast, pexpire_cmd, 1, 1, 1, "generic",
     "Set a key's time to live in milliseconds", "key milliseconds [NX|XX|GT|LT]", "2.6.0"},
    {"expireat", -3, kWrite | kFast, expireat_cmd, 1, 1, 1, "generic",
     "Set the expiration for a key as a UNIX timestamp", "key unix-time-seconds [NX|XX|GT|LT]",
     "1.2.0"},
    {"pexpireat", -3, kWrite | kFast, pexpireat_cmd, 1, 1, 1, "generic",
     "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
     "key unix-time-milliseconds [NX|XX|GT|LT]", "2.6.0"},
    {"ttl", 2, kReadOnly | kFast, ttl_cmd, 1, 1, 1, "generic", "Get the time to live for a key",
     "key"},
    {"pttl", 2, kReadOnly | kFast, pttl_cmd, 1, 1, 1, "generic",
     "Get the time to live for a key in milliseconds", "key", "2.6.0"},
    {"expiretime", 2, kReadOnly | kFast, expiretime_cmd, 1, 1, 1, "generic",
     "Get the expiration Unix timestamp for a key", "key", "7.0.0"},
    {"pexpiretime", 2, kReadOnly | kFast, pexpiretime_cmd, 1, 1, 1, "generic",
     "Get the expiration Unix timestamp for a key in milliseconds", "key", "7.0.0"},
    {"persist", 2, kWrite | kFast, persist_cmd, 1, 1, 1, "generic",
     "Remove the expiration from a key", "key", "2.2.0"},
    {"keys", 2, kReadOnly, keys_cmd, 0, 0, 0, "generic", "Find all keys matching the given pattern",
     "pattern", "1.0.0", "O(N) with N being the number of keys in the database"},
    {"scan", -2, kReadOnly, scan_cmd, 0, 0, 0, "generic",
     "Incrementally iterate the keys space", "cursor [MATCH pattern] [COUNT count] [TYPE type]",
     "2.8.0", "O(1) for every call. O(N) for a complete iteration"},
    {"randomkey", 1, kReadOnly, randomkey_cmd, 0, 0, 0, "generic",
     "Return a random key from the keyspace", "", "1.0.0",
     "O(N) in kvlab (the keyspace interface has no random access)"},
};

}  // namespace

std::span<const CommandSpec> key_commands() { return kKeyCommands; }

}  // namespace kvlab::server
