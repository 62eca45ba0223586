// The generic key family: DEL/UNLINK, EXISTS, TOUCH, TYPE, the expiry commands, KEYS, SCAN,
// RANDOMKEY, RENAME/RENAMENX, COPY, MOVE, SWAPDB, OBJECT and WAIT (SORT is in sort.cpp).
//
// kvlab has one database (CONFIG GET databases answers 1), so MOVE, SWAPDB and COPY ... DB answer
// what Redis 7.0 answers when started with `--databases 1`: index 0 is the only valid one, any
// other is "ERR DB index is out of range", and MOVE to db 0 is the same-database error.
//
// Multi-key commands here (RENAME, COPY) are plain sequential code (read the source, write the
// destination, remove the source): the atomicity layer locks both keys and runs them as if alone.
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
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "server/core/blocking.hpp"
#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/commands/scan_args.hpp"
#include "server/data/set_types.hpp"
#include "server/data/stream.hpp"
#include "server/data/value_types.hpp"
#include "server/data/container.hpp"

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
    // An expired key's "expired" came first (invoke(): expire_before_write).
    if (was_live) notify_keyspace_event(ctx, kNotifyGeneric, "del", ctx.arg(i));
  }
  ctx.reply.integer(removed);
}

void exists_cmd(CommandContext& ctx) {
  std::int64_t n = 0;
  for (std::size_t i = 1; i < ctx.argc(); ++i)
    if (read_live(
            ctx, ctx.arg(i), [](const Value&) {}, /*touch=*/false))
      ++n;  // NOTOUCH
  ctx.reply.integer(n);
}

std::string_view type_name(ObjectType t) {
  switch (t) {
    case ObjectType::kString:
      return "string";
    case ObjectType::kList:
      return "list";
    case ObjectType::kSet:
      return "set";
    case ObjectType::kHash:
      return "hash";
    case ObjectType::kZSet:
      return "zset";
    case ObjectType::kStream:
      return "stream";
  }
  return "none";
}

// "none" for a container that was emptied and is being unlinked (see server/data/container.hpp).
std::string_view value_type_name(const Value& v) {
  if (live_container_is_dead(v)) return "none";
  return type_name(v.obj->type());
}

void type_cmd(CommandContext& ctx) {
  std::string_view name = "none";
  read_live(
      ctx, ctx.arg(1), [&](const Value& v) { name = value_type_name(v); }, /*touch=*/false);
  ctx.reply.simple(name);
}

// EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX|XX|GT|LT]
void expire_generic(CommandContext& ctx, TimeUnit unit, bool absolute, std::string_view name) {
  bool nx = false, xx = false, gt = false, lt = false;
  ArgParser p(ctx.argv, 3);
  while (!p.done()) {
    if (p.check("nx")) {
      nx = true;
    } else if (p.check("xx")) {
      xx = true;
    } else if (p.check("gt")) {
      gt = true;
    } else if (p.check("lt")) {
      lt = true;
    } else {
      p.fail(err::unsupported_option(p.peek()));
    }
  }
  if (p.reply_error(ctx.reply)) return;
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
  // A time already past deletes the key: a "del" event, as Redis.
  if (applied)
    notify_keyspace_event(ctx, kNotifyGeneric, at <= ctx.now_ms ? "del" : "expire", ctx.arg(1));
  ctx.reply.integer(applied ? 1 : 0);
}

void expire_cmd(CommandContext& ctx) {
  expire_generic(ctx, TimeUnit::kSeconds, false, "expire");
}
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
  if (!read_live(
          ctx, ctx.arg(1), [&](const Value& v) { expire = v.expire_ms; }, /*touch=*/false)) {
    ctx.reply.integer(-2);
    return;
  }
  if (expire == 0) {
    ctx.reply.integer(-1);
    return;
  }
  const std::int64_t left = std::max<std::int64_t>(expire - ctx.now_ms, 0);
  switch (kind) {
    case TtlKind::kTtl:
      ctx.reply.integer((left + 500) / 1000);
      break;
    case TtlKind::kPttl:
      ctx.reply.integer(left);
      break;
    case TtlKind::kExpireTime:
      ctx.reply.integer((expire + 500) / 1000);  // rounded, as Redis does
      break;
    case TtlKind::kPExpireTime:
      ctx.reply.integer(expire);
      break;
  }
}
void ttl_cmd(CommandContext& ctx) {
  ttl_generic(ctx, TtlKind::kTtl);
}
void pttl_cmd(CommandContext& ctx) {
  ttl_generic(ctx, TtlKind::kPttl);
}
void expiretime_cmd(CommandContext& ctx) {
  ttl_generic(ctx, TtlKind::kExpireTime);
}
void pexpiretime_cmd(CommandContext& ctx) {
  ttl_generic(ctx, TtlKind::kPExpireTime);
}

void persist_cmd(CommandContext& ctx) {
  bool removed = false;
  ctx.ks.update(ctx.arg(1), [&](const Value* cur) {
    const Value* v = live(cur, ctx.now_ms);
    removed = v != nullptr && v->expire_ms != 0;
    return removed ? U::assign(Value{v->obj, 0}) : U::keep();
  });
  if (removed) notify_keyspace_event(ctx, kNotifyGeneric, "persist", ctx.arg(1));
  ctx.reply.integer(removed ? 1 : 0);
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

std::uint64_t key_hash(std::string_view key) {
  return std::hash<std::string_view>{}(key);
}

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
      std::nth_element(sc.keys.begin(), sc.keys.begin() + kScanSnapshot - 1, sc.keys.end(),
                       by_hash);
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
  ScanArgs args;
  if (!parse_scan_cursor_arg(ctx, 1, &args) || !parse_scan_options(ctx, 2, kScanType, &args))
    return;
  const std::uint64_t cursor = args.cursor;
  const std::string_view pattern = args.pattern, type = args.type;
  const bool has_pattern = args.has_pattern, has_type = args.has_type;
  const std::int64_t count = static_cast<std::int64_t>(args.count);
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
      // A key removed since the snapshot has no type: it is skipped, even for TYPE none (Redis
      // walks its live table and never returns a missing key).
      std::string_view actual = "none";
      read_live(ctx, key, [&](const Value& v) { actual = value_type_name(v); });
      if (actual == "none" || !iequals(type, actual)) continue;
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

void touch_cmd(CommandContext& ctx) {
  std::int64_t n = 0;  // a key named twice counts twice, as in Redis
  for (std::size_t i = 1; i < ctx.argc(); ++i)
    if (read_live(ctx, ctx.arg(i), [](const Value& v) { (void)v; })) ++n;
  ctx.reply.integer(n);
}

// The live value of key (a container that was emptied and is being unlinked counts as absent).
// read_lookup: as read_live's (RENAME and COPY look their keys up as writes: no "keymiss").
bool get_value(CommandContext& ctx, std::string_view key, Value* out, bool touch = true,
               bool read_lookup = true) {
  bool dead = false;
  const bool found = read_live(
      ctx, key,
      [&](const Value& v) {
        dead = live_container_is_dead(v);
        if (!dead) *out = v;
      },
      touch, read_lookup);
  return found && !dead;
}

// Removes key if it still holds obj (a concurrent writer that replaced it wins).
void erase_if_holds(CommandContext& ctx, std::string_view key, const Object* obj) {
  ctx.ks.update(key, [&](const Value* cur) {
    return (cur != nullptr && cur->obj.get() == obj) ? U::erase() : U::keep();
  });
}

// RENAME / RENAMENX source destination. The value moves with its TTL; the source goes away.
// Renaming a key to itself answers OK (RENAME) or 0 (RENAMENX) when it exists, as Redis 7.0 does.
void rename_generic(CommandContext& ctx, bool nx) {
  const std::string_view src = ctx.arg(1), dst = ctx.arg(2);
  Value v;
  if (!get_value(ctx, src, &v, true, false)) {
    ctx.reply.error(err::kNoSuchKey);
    return;
  }
  if (src == dst) {
    if (nx) {
      ctx.reply.integer(0);
    } else {
      ctx.reply.ok();
    }
    return;
  }
  Value existing;
  if (nx && get_value(ctx, dst, &existing, true, false)) {
    ctx.reply.integer(0);
    return;
  }
  const Object* moved = v.obj.get();
  const std::int64_t expire = v.expire_ms;
  // Redis deletes an existing destination and adds the key anew: "new" either way.
  if (!ctx.ks.insert_or_assign(dst, std::move(v)))
    notify_keyspace_event(ctx, kNotifyNew, "new", dst);
  if (expire != 0) ctx.worker.track_expiry(dst, expire);
  erase_if_holds(ctx, src, moved);
  notify_keyspace_event(ctx, kNotifyGeneric, "rename_from", src);
  notify_keyspace_event(ctx, kNotifyGeneric, "rename_to", dst);
  if (nx) {
    ctx.reply.integer(1);
  } else {
    ctx.reply.ok();
  }
}
void rename_cmd(CommandContext& ctx) {
  rename_generic(ctx, false);
}
void renamenx_cmd(CommandContext& ctx) {
  rename_generic(ctx, true);
}

// A deep copy of a value's object: strings are immutable and shared; each container type copies
// itself (see Container::clone). Empty when the container was emptied meanwhile.
ObjectRef clone_object(const ObjectRef& o) {
  switch (o->type()) {
    case ObjectType::kString:
      return o;
    case ObjectType::kList:
      return ObjectRef(clone_list(*as_container<ListObject>(o)));
    case ObjectType::kSet:
      return ObjectRef(clone_set(*as_container<SetObject>(o)));
    case ObjectType::kHash:
      return ObjectRef(clone_hash(*as_container<HashObject>(o)));
    case ObjectType::kZSet:
      return ObjectRef(clone_zset(*as_container<ZSetObject>(o)));
    case ObjectType::kStream:
      return ObjectRef(clone_stream(*as_container<StreamObject>(o)));
  }
  return {};
}

// A database index argument as Redis's getIntFromObjectOrReply reads it. Replies and returns
// false on a non-integer or a value outside int32.
bool arg_db_index(CommandContext& ctx, std::string_view s, std::int64_t* out) {
  if (!arg_i64(ctx, s, out)) return false;
  if (*out < std::numeric_limits<std::int32_t>::min() ||
      *out > std::numeric_limits<std::int32_t>::max()) {
    ctx.reply.error(err::kOutOfRangeInt);
    return false;
  }
  return true;
}

// COPY source destination [DB destination-db] [REPLACE]. The copy keeps the source's TTL.
void copy_cmd(CommandContext& ctx) {
  bool replace = false;
  ArgParser p(ctx.argv, 3);
  while (!p.done()) {
    if (p.check("replace")) {
      replace = true;
    } else if (p.check("db", 1)) {
      // arg_db_index's texts: an int, then the one database kvlab has.
      const std::int64_t db =
          p.next_int(std::numeric_limits<std::int32_t>::min(),
                     std::numeric_limits<std::int32_t>::max(), err::kOutOfRangeInt);
      if (p.ok() && db != 0) p.fail(err::kDbIndexOutOfRange);
    } else {
      p.fail(err::kSyntax);
    }
  }
  if (p.reply_error(ctx.reply)) return;
  const std::string_view src = ctx.arg(1), dst = ctx.arg(2);
  if (src == dst) {
    ctx.reply.error(err::kSameObject);
    return;
  }
  Value v;
  if (!get_value(ctx, src, &v)) {  // a read lookup in Redis's COPY ("keymiss")
    ctx.reply.integer(0);
    return;
  }
  Value existing;
  if (!replace && get_value(ctx, dst, &existing, true, false)) {
    ctx.reply.integer(0);
    return;
  }
  ObjectRef copy = clone_object(v.obj);
  if (!copy) {  // the source container was emptied between the lookup and the copy
    ctx.reply.integer(0);
    return;
  }
  // As RENAME: an existing destination is deleted and the key added anew ("new").
  if (!ctx.ks.insert_or_assign(dst, Value{std::move(copy), v.expire_ms}))
    notify_keyspace_event(ctx, kNotifyNew, "new", dst);
  if (v.expire_ms != 0) ctx.worker.track_expiry(dst, v.expire_ms);
  notify_keyspace_event(ctx, kNotifyGeneric, "copy_to", dst);
  ctx.reply.integer(1);
}

// MOVE key db: with one database the only valid index is the source's own.
void move_cmd(CommandContext& ctx) {
  std::int64_t db = 0;
  if (!arg_db_index(ctx, ctx.arg(2), &db)) return;
  ctx.reply.error(db != 0 ? err::kDbIndexOutOfRange : err::kSameObject);
}

// SWAPDB index1 index2: swapping database 0 with itself is a no-op that answers OK.
void swapdb_cmd(CommandContext& ctx) {
  std::int64_t a = 0, b = 0;
  const auto int32 = [](std::int64_t v) {
    return v >= std::numeric_limits<std::int32_t>::min() &&
           v <= std::numeric_limits<std::int32_t>::max();
  };
  if (!parse_i64(ctx.arg(1), &a) || !int32(a)) {
    ctx.reply.error(err::kInvalidFirstDb);
    return;
  }
  if (!parse_i64(ctx.arg(2), &b) || !int32(b)) {
    ctx.reply.error(err::kInvalidSecondDb);
    return;
  }
  if (a != 0 || b != 0) {
    ctx.reply.error(err::kDbIndexOutOfRange);
    return;
  }
  ctx.reply.ok();
}

// OBJECT ENCODING answers what Redis 7.0 would answer for the same value. kvlab has no such
// encodings (a string is one Object, a set a MemberSet, ...): this is a model of Redis's choice,
// computed from the value's contents with the thresholds of encoding_limits() (CONFIG SET
// set-max-intset-entries, hash-/zset-max-listpack-entries/-value). Redis's conversions are one-way
// (a set that once held 513 integers stays "hashtable" after an SREM; a sorted set remembers it,
// see ZSet::listpack()), and some commands store strings "raw" whatever their contents (APPEND,
// SETRANGE) or "embstr" where the contents would give "int" (INCRBYFLOAT): the model answers as if
// the value had been written with SET/SADD/HSET in one go. Lists are always "quicklist" in 7.0.
constexpr std::size_t kEmbstrMax = 44;
constexpr std::int64_t kSharedIntegers = 10000;

bool string_is_int(std::string_view s, std::int64_t* v) {
  return s.size() <= 20 && parse_i64(s, v);
}

// Redis shares the integers 0..9999 unless maxmemory is set with an LRU or LFU policy.
bool shared_integers_enabled() {
  const std::string maxmemory = config_soft_value("maxmemory");
  const bool has_limit = maxmemory.find_first_of("123456789") != std::string::npos;
  const std::string policy = config_soft_value("maxmemory-policy");
  const bool lru_or_lfu =
      policy.find("lru") != std::string::npos || policy.find("lfu") != std::string::npos;
  return !has_limit || !lru_or_lfu;
}

std::string_view string_encoding(std::string_view s) {
  std::int64_t v = 0;
  if (string_is_int(s, &v)) return "int";
  return s.size() <= kEmbstrMax ? "embstr" : "raw";
}

std::string_view container_encoding(const ObjectRef& o) {
  switch (o->type()) {
    case ObjectType::kString:
      return string_encoding(o->str());
    case ObjectType::kList:
      return "quicklist";
    case ObjectType::kSet: {
      SetObject* c = as_container<SetObject>(o);
      std::lock_guard<std::mutex> lock(c->mu);
      return intset_values(c->data, nullptr) ? "intset" : "hashtable";
    }
    case ObjectType::kHash: {
      HashObject* c = as_container<HashObject>(o);
      std::lock_guard<std::mutex> lock(c->mu);
      return hash_is_listpack(c->data) ? "listpack" : "hashtable";
    }
    case ObjectType::kZSet: {
      ZSetObject* c = as_container<ZSetObject>(o);
      std::lock_guard<std::mutex> lock(c->mu);
      return c->data.listpack() ? "listpack" : "skiplist";
    }
    case ObjectType::kStream:
      return "stream";
  }
  return "raw";
}

// OBJECT subcommands on an absent key answer nil, before any policy check (as Redis). OBJECT does
// not touch the key (Redis's LOOKUP_NOTOUCH).
bool object_lookup(CommandContext& ctx, Value* v) {
  if (get_value(ctx, ctx.arg(2), v, /*touch=*/false)) return true;
  ctx.reply.null();
  return false;
}

void object_encoding_cmd(CommandContext& ctx) {
  Value v;
  if (object_lookup(ctx, &v)) ctx.reply.bulk(container_encoding(v.obj));
}

// The access word (server/features/eviction.hpp): FREQ answers the decayed LFU counter under an LFU
// policy, IDLETIME the seconds since the last access under the others (Redis's errors otherwise).
// SIEVE and S3-FIFO keep a read count in the word: neither is tracked there.

void object_freq_cmd(CommandContext& ctx) {
  Value v;
  if (!object_lookup(ctx, &v)) return;
  const Eviction& ev = ctx.server.eviction();
  if (!ev.lfu()) {
    ctx.reply.error(err::kFreqNotLfu);
    return;
  }
  ctx.reply.integer(ev.freq(*v.obj, ctx.now_ms));
}

void object_idletime_cmd(CommandContext& ctx) {
  Value v;
  if (!object_lookup(ctx, &v)) return;
  const Eviction& ev = ctx.server.eviction();
  if (ev.lfu()) {
    ctx.reply.error(err::kIdletimeLfu);
    return;
  }
  if (!ev.lru()) {
    ctx.reply.error(err::kIdletimeNotTracked);
    return;
  }
  ctx.reply.integer(ev.idle_ms(*v.obj, ctx.now_ms) / 1000);
}

// Redis's count: shared integers report INT_MAX (OBJ_SHARED_REFCOUNT), every other value 1 (a
// value stored under one key). kvlab's own count (readers holding the Object) is not shown.
// Redis decides sharing when it stores the value; this model decides it now, so a value written
// while maxmemory was set with an LRU/LFU policy answers INT_MAX here once the policy is gone.
void object_refcount_cmd(CommandContext& ctx) {
  Value v;
  if (object_lookup(ctx, &v)) ctx.reply.integer(redis_refcount(v.obj));
}

void object_help_cmd(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "ENCODING <key>",
      "    Return the kind of internal representation used in order to store the value",
      "    associated with a <key>.",
      "FREQ <key>",
      "    Return the access frequency index of the <key>. The returned integer is",
      "    proportional to the logarithm of the recent access frequency of the key.",
      "IDLETIME <key>",
      "    Return the idle time of the <key>, that is the approximated number of",
      "    seconds elapsed since the last access to the key.",
      "REFCOUNT <key>",
      "    Return the number of references of the value associated with the specified",
      "    <key>.",
      "HELP",
      "    Prints this help.",
  };
  ctx.reply.array(std::size(kLines));
  for (auto l : kLines) ctx.reply.simple(l);
}

void object_without_sub(CommandContext& ctx) {
  ctx.reply.error(err::wrong_arity("object"));
}

// WAIT numreplicas timeout: kvlab has no replicas, so it answers 0 at once. (Redis, asked for
// more replicas than acknowledge, would block until the timeout; with timeout 0, forever.)
void wait_cmd(CommandContext& ctx) {
  std::int64_t replicas = 0, timeout = 0;
  if (!arg_i64(ctx, ctx.arg(1), &replicas)) return;
  if (!parse_i64(ctx.arg(2), &timeout)) {
    ctx.reply.error(err::kTimeoutNotInteger);
    return;
  }
  if (timeout < 0) {
    ctx.reply.error(err::kTimeoutNegative);
    return;
  }
  // No replica ever acknowledges: as Redis 7.0 without replicas, WAIT answers 0 at once when it
  // asks for none or runs inside MULTI/EXEC, and otherwise blocks until its timeout (0: for ever;
  // a timeout past the clock's range too, as Redis adds it unchecked), then answers 0. Redis
  // keeps the count of a blocked WAIT in an int: one that wraps to 0 or less (2^31, 2^32…) is
  // met before it sleeps, so it answers 0 at once too.
  const auto wrapped = static_cast<std::int32_t>(static_cast<std::uint32_t>(replicas));
  if (replicas <= 0 || wrapped <= 0 || ctx.conn.in_exec) {
    ctx.reply.integer(0);
    return;
  }
  auto b = std::make_shared<BlockedClient>();
  b->conn_id = ctx.conn.id;
  b->worker = ctx.worker.index();
  b->resp = ctx.conn.resp;
  b->deadline_ms = timeout == 0 || timeout > std::numeric_limits<std::int64_t>::max() - ctx.now_ms
                       ? 0
                       : ctx.now_ms + timeout;
  b->argv.assign(ctx.argv.begin(), ctx.argv.end());
  b->timeout_reply = ":0\r\n";
  ctx.server.blocking().add(b);
  ctx.worker.block(ctx.conn, std::move(b));
}

const CommandSpec kObjectSubcommands[] = {
    {"encoding", 3, kReadOnly, object_encoding_cmd, 2, 2, 1, "generic",
     "Inspect the internal encoding of a Redis object (kvlab: the encoding Redis 7.0 would use)",
     "key", "2.2.3"},
    {"freq", 3, kReadOnly, object_freq_cmd, 2, 2, 1, "generic",
     "Get the logarithmic access frequency counter of a Redis object", "key", "4.0.0"},
    {"idletime", 3, kReadOnly, object_idletime_cmd, 2, 2, 1, "generic",
     "Get the time since a Redis object was last accessed", "key", "2.2.3"},
    {"refcount", 3, kReadOnly, object_refcount_cmd, 2, 2, 1, "generic",
     "Get the number of references to the value of the key (as Redis counts them)", "key", "2.2.3"},
    {"help", 2, kLoading | kStale, object_help_cmd, 0, 0, 0, "generic",
     "Show helpful text about the different subcommands", "", "6.2.0"},
};

const CommandSpec kKeyCommands[] = {
    {"del", -2, kWrite, del_cmd, 1, -1, 1, "generic", "Delete a key", "key ...", "1.0.0",
     "O(N) where N is the number of keys that will be removed"},
    {"unlink", -2, kWrite | kFast, del_cmd, 1, -1, 1, "generic",
     "Delete a key (memory is reclaimed as soon as no reader holds it)", "key ...", "4.0.0",
     "O(1) for each key removed"},
    {"exists", -2, kReadOnly | kFast, exists_cmd, 1, -1, 1, "generic", "Determine if a key exists",
     "key ...", "1.0.0", "O(N) where N is the number of keys"},
    {"type", 2, kReadOnly | kFast, type_cmd, 1, 1, 1, "generic", "Determine the type stored at key",
     "key"},
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
    {"keys", 2, kReadOnly | kKeyspaceWide, keys_cmd, 0, 0, 0, "generic",
     "Find all keys matching the given pattern", "pattern", "1.0.0",
     "O(N) with N being the number of keys in the database"},
    {"scan", -2, kReadOnly, scan_cmd, 0, 0, 0, "generic", "Incrementally iterate the keys space",
     "cursor [MATCH pattern] [COUNT count] [TYPE type]", "2.8.0",
     "O(1) for every call. O(N) for a complete iteration"},
    {"randomkey", 1, kReadOnly | kKeyspaceWide, randomkey_cmd, 0, 0, 0, "generic",
     "Return a random key from the keyspace", "", "1.0.0",
     "O(N) in kvlab (the keyspace interface has no random access)"},
    {"touch", -2, kReadOnly | kFast, touch_cmd, 1, -1, 1, "generic",
     "Count the keys that exist (kvlab keeps no access time to update)", "key ...", "3.2.1",
     "O(N) where N is the number of keys that will be touched"},
    {"rename", 3, kWrite, rename_cmd, 1, 2, 1, "generic", "Rename a key", "key newkey"},
    {"renamenx", 3, kWrite | kFast, renamenx_cmd, 1, 2, 1, "generic",
     "Rename a key, only if the new key does not exist", "key newkey"},
    {"copy", -3, kWrite | kDenyOom, copy_cmd, 1, 2, 1, "generic",
     "Copy a key (kvlab has one database: DB accepts only 0)",
     "source destination [DB destination-db] [REPLACE]", "6.2.0",
     "O(N) worst case for collections, where N is the number of nested items"},
    {"move", 3, kWrite | kFast, move_cmd, 1, 1, 1, "generic",
     "Move a key to another database (kvlab has one database: always an error)", "key db"},
    {"swapdb", 3, kWrite | kFast, swapdb_cmd, 0, 0, 0, "server",
     "Swaps two Redis databases (kvlab has one database: only SWAPDB 0 0, a no-op)",
     "index1 index2", "4.0.0"},
    {"object", -2, 0, object_without_sub, 0, 0, 0, "generic",
     "A container for object introspection commands", "", "2.2.3", "Depends on subcommand.",
     kObjectSubcommands},
    {"wait", 3, 0, wait_cmd, 0, 0, 0, "generic",
     "Wait for the synchronous replication of all the write commands sent in the context of the "
     "current connection (kvlab has no replicas: blocks until the timeout, then answers 0)",
     "numreplicas timeout", "3.0.0"},
};

}  // namespace

bool can_walk(CommandContext& ctx) {
  if (ctx.ks.traits().concurrent_for_each || ctx.server.num_workers() == 1) return true;
  ctx.reply.error(err::cannot_walk(ctx.ks.traits().name));
  return false;
}

std::int64_t redis_refcount(const ObjectRef& o) {
  std::int64_t n = 0;
  if (o->type() == ObjectType::kString && string_is_int(o->str(), &n) && n >= 0 &&
      n < kSharedIntegers && shared_integers_enabled()) {
    return std::numeric_limits<std::int32_t>::max();
  }
  return 1;
}

std::string_view redis_encoding(const ObjectRef& o) {
  return container_encoding(o);
}

std::span<const CommandSpec> key_commands() {
  return kKeyCommands;
}

}  // namespace kvlab::server
