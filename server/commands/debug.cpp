// DEBUG: the subcommands that Redis's, Valkey's and the client libraries' test suites send, as
// Redis 7.0 answers them, behind Redis's `enable-debug-command` (no by default: every DEBUG
// answers Redis's "not allowed" error; `local` allows loopback connections only).
//
//   PROTOCOL <type>          a test value of each RESP3 type (and its RESP2 form), for clients'
//                            parser tests
//   ERROR <string>           the string as an error reply, for clients' error tests
//   SLEEP <seconds>          stops the server's keyed commands: DEBUG runs as a keyspace-wide
//                            operation, so a command on any worker that names a key waits for
//                            it, as behind Redis's single thread (keyless ones, PING, still run)
//   SET-ACTIVE-EXPIRE <0|1>  stops (0) or restarts the workers' background expiry sweeps; keys
//                            still expire when read
//   POPULATE <n> [prefix] [size]  creates prefix:0..n-1 = "value:<j>" (cut or zero-padded to
//                            size), leaving existing keys alone
//   DIGEST                   a 40-hex digest of the dataset, all zeros when empty
//   DIGEST-VALUE <key> ...   one digest per key (its value and TTL), all zeros when absent
//                            (see "DIGEST and DIGEST-VALUE" below for what they guarantee)
//   OBJECT <key>             Redis's one-line summary: address, refcount, encoding, serialized
//                            length, LRU clock and idle seconds (quicklist figures for lists)
//   STRINGMATCH-TEST         fuzzes the glob matcher
//   SET-SKIP-CHECKSUM-VALIDATION <0|1>  RESTORE skips the payload's CRC64
//   LOG, CHANGE-REPL-ID, PAUSE-CRON, QUICKLIST-PACKED-THRESHOLD, RELOAD: accepted, validated as
//                            Redis does; they act on machinery kvlab does not have (persistence,
//                            replication, the cron, quicklists) and leave the dataset as it is —
//                            which is what a successful RELOAD yields.
// Other Redis subcommands (crashes, AOF, allocator, cluster links) answer Redis's unknown
// subcommand error.
//
// Thread safety: the two switches are process-wide relaxed atomics (see active_expire_enabled()).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/data/set_types.hpp"
#include "server/data/stream.hpp"
#include "server/data/value_types.hpp"
#include "server/data/zset.hpp"
#include "server/data/container.hpp"
#include "server/features/eviction.hpp"
#include "server/data/rdb.hpp"
#include "server/features/scripting.hpp"
#include "server/util/sha1.hpp"

namespace kvlab::server {
namespace {

// Relaxed: each is a switch read once per worker loop iteration (or per RESTORE); no data is
// published through it, and a worker seeing the change one iteration late is harmless.
std::atomic<bool> g_active_expire{true};

bool debug_allowed(CommandContext& ctx) {
  const std::string& mode = ctx.server.config().enable_debug_command;
  if (mode == "yes") return true;
  if (mode == "local") {
    const std::string& a = ctx.conn.info->addr;
    if (a.rfind("127.", 0) == 0 || a.rfind("[::1]", 0) == 0 || a.rfind("::1", 0) == 0 ||
        a.rfind("in-process", 0) == 0)
      return true;
  }
  ctx.reply.error(err::kDebugNotAllowed);
  return false;
}

// C's atoi, as Redis reads these switches: leading digits, anything else 0.
int c_atoi(std::string_view s) {
  return std::atoi(std::string(s).c_str());
}

void protocol(CommandContext& ctx, std::string_view type) {
  ReplyWriter& r = ctx.reply;
  if (iequals(type, "string")) {
    r.bulk("Hello World");
  } else if (iequals(type, "integer")) {
    r.integer(12345);
  } else if (iequals(type, "double")) {
    r.dbl(3.141);
  } else if (iequals(type, "bignum")) {
    r.big_number("1234567999999999999999999999999999999");
  } else if (iequals(type, "null")) {
    r.null();
  } else if (iequals(type, "array")) {
    r.array(3);
    for (int j = 0; j < 3; ++j) r.integer(j);
  } else if (iequals(type, "set")) {
    r.set(3);
    for (int j = 0; j < 3; ++j) r.integer(j);
  } else if (iequals(type, "map")) {
    r.map(3);
    for (int j = 0; j < 3; ++j) {
      r.integer(j);
      r.boolean(j == 1);
    }
  } else if (iequals(type, "attrib")) {
    if (r.resp3()) {  // RESP2 has no attributes: only the reply that follows
      r.attribute(1);
      r.bulk("key-popularity");
      r.array(2);
      r.bulk("key:123");
      r.integer(90);
    }
    r.bulk("Some real reply following the attribute");
  } else if (iequals(type, "push")) {
    if (!r.resp3()) {
      r.error(err::kResp2NotSupported);
      return;
    }
    r.push(2);
    r.bulk("server-cpu-usage");
    r.integer(42);
    r.bulk("Some real reply following the push reply");
  } else if (iequals(type, "true")) {
    r.boolean(true);
  } else if (iequals(type, "false")) {
    r.boolean(false);
  } else if (iequals(type, "verbatim")) {
    r.verbatim("txt", "This is a verbatim\nstring");
  } else {
    r.error(err::kDebugProtocolType);
  }
}

// POPULATE count [prefix] [size]: Redis's positive-integer checks, then the keys.
void populate(CommandContext& ctx) {
  std::int64_t count = 0, size = 0;
  auto positive = [&](std::string_view a, std::int64_t* out) {
    if (!parse_i64(a, out) || *out < 0) {
      ctx.reply.error(err::kOutOfRangePositive);
      return false;
    }
    return true;
  };
  if (!positive(ctx.arg(2), &count)) return;
  const std::string prefix = ctx.argc() > 3 ? std::string(ctx.arg(3)) : std::string("key");
  if (ctx.argc() > 4 && !positive(ctx.arg(4), &size)) return;
  std::string key, value;
  for (std::int64_t j = 0; j < count; ++j) {
    key = prefix + ":" + std::to_string(j);
    value = "value:" + std::to_string(j);
    if (size != 0) value.resize(static_cast<std::size_t>(size), '\0');
    const ObjectRef obj(Object::make_string(value));
    if (ctx.ks.insert(key, Value{obj, 0})) continue;
    ctx.ks.update(key, [&](const Value* cur) -> Update<Value> {
      if (live(cur, ctx.now_ms) != nullptr) return Update<Value>::keep();
      return Update<Value>::assign(Value{obj, 0});
    });
  }
  ctx.reply.ok();
}

// STRINGMATCH-TEST: random patterns over random strings; a crash is the failure.
void stringmatch_test(CommandContext& ctx) {
  std::mt19937 rng(12345);
  static constexpr char kAlphabet[] = "ab*?[]^-\\!xyz";
  std::string pattern, text;
  for (int i = 0; i < 100000; ++i) {
    pattern.assign(rng() % 32, ' ');
    for (char& c : pattern) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];
    text.assign(rng() % 32, ' ');
    for (char& c : text) c = static_cast<char>(rng());
    glob_match(pattern, text, (i & 1) != 0);
  }
  ctx.reply.simple("Apparently Redis did not crash: test passed");
}

// OBJECT <key>, as Redis 7.0 prints it. The serialized length is DUMP's value bytes (kvlab's
// LZF finds other matches than Redis's, so compressed values may differ by a few bytes); the LRU
// clock and idle seconds come from the access word when an LRU-tracking policy runs (0 else).
void debug_object(CommandContext& ctx, std::string_view key) {
  // The stored value, expired or not, as Redis 7.0 finds it (a dictionary lookup): DEBUG OBJECT
  // neither expires the key nor touches it.
  Value v;
  ctx.ks.find(key, [&](const Value& found) {
    if (!live_container_is_dead(found)) v = found;
  });
  if (!v.obj) {
    ctx.reply.error(err::kNoSuchKey);
    return;
  }
  std::string payload;
  const std::size_t serialized = rdb::dump_value(v.obj, &payload) ? payload.size() - 11 : 0;
  const Eviction& ev = ctx.server.eviction();
  std::int64_t idle = 0, clock = 0;
  if (ev.lru()) {
    idle = ev.idle_ms(*v.obj, ctx.now_ms) / 1000;
    clock = (ctx.now_ms / 1000 - idle) & ((1 << 24) - 1);  // Redis's 24-bit LRU clock
  }
  const std::string_view encoding = redis_encoding(v.obj);
  char buf[512];
  int n = std::snprintf(buf, sizeof buf,
                        "Value at:%p refcount:%lld encoding:%.*s serializedlength:%zu lru:%lld "
                        "lru_seconds_idle:%lld",
                        static_cast<const void*>(v.obj.get()),
                        static_cast<long long>(redis_refcount(v.obj)),
                        static_cast<int>(encoding.size()), encoding.data(), serialized,
                        static_cast<long long>(clock), static_cast<long long>(idle));
  rdb::QuicklistShape q;
  if (v.obj->type() == ObjectType::kList && rdb::quicklist_shape(v.obj, &q)) {
    n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n),
                       " ql_nodes:%zu ql_avg_node:%.2f ql_listpack_max:-2 ql_compressed:0 "
                       "ql_uncompressed_size:%zu",
                       q.nodes, static_cast<double>(q.entries) / static_cast<double>(q.nodes),
                       q.bytes);
  }
  ctx.reply.simple(std::string_view(buf, static_cast<std::size_t>(n)));
}

// ---- DIGEST and DIGEST-VALUE ----
// kvlab's own digests, built on SHA-1. They are not Redis's bytes (Redis hashes its encodings'
// contents in its own way); what they promise is what the tests that use them rely on: equal
// datasets (or values) digest equally, whatever the internal encoding of their values and the
// internal order of set members and hash fields, so a key and its COPY or RESTOREd DUMP digest
// alike, and a dataset before and after DEBUG RELOAD too. Any change to a key name, a value, a
// type or an expiry time changes the digest (but for SHA-1 collisions).
//
// The scheme. mix(d, s) replaces the 20-byte d with SHA1(d || s): a chain, so order matters and
// each string is hashed on its own (["ab", "c"] and ["a", "bc"] mix apart). A value's digest
// starts at zero and mixes its type name, then:
//   string  its bytes
//   list    each element, head to tail
//   set     its size, then the XOR of SHA1(member) over the members: order-independent
//   hash    its size, then the XOR of SHA1(len(f) || f || v) over the fields: order-independent
//   zset    each member and its score (%.17g: exact), in rank order (unique for a sorted set)
//   stream  each entry in ID order (ID, field count, fields and values in order), the last ID,
//           entries added and the max deleted ID, then each consumer group by name (last ID,
//           entries read, the PEL in ID order with owner and delivery count, each consumer by
//           name with its pending IDs). Left out: kvlab's node layout, and the wall-clock times
//           (delivery and seen times), as every value's LRU clock is: the same commands run a
//           millisecond later, or on another server, build the same dataset.
// and, when the key has a TTL, "expire" and the absolute expiry in ms (Redis mixes in only that
// there is a TTL; kvlab binds its time too, so moving a TTL changes the digest). DIGEST-VALUE
// answers that per key (Redis too mixes the TTL into it). DIGEST is the XOR, over the live keys,
// of mix(mix(0, key), value digest): independent of the keyspace's order, all zeros for an empty
// keyspace. DIGEST skips logically expired keys (what clients see: the same dataset whether
// or not a sweep has removed them yet); DIGEST-VALUE, like DEBUG OBJECT, digests the stored value
// even past its expiry, as Redis does.

// n as 8 little-endian bytes: a hash field's length, hashed before the field and its value so
// that ("ab", "c") and ("a", "bc") hash apart.
struct Length {
  explicit Length(std::size_t n) {
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>(static_cast<std::uint64_t>(n) >> (8 * i));
  }
  std::string_view view() const { return {bytes, sizeof bytes}; }
  char bytes[8];
};

class Digest {
 public:
  const Sha1Digest& bytes() const { return d_; }

  void mix(std::string_view s) { d_ = sha1({view(d_), s}); }
  void mix_int(std::int64_t v) { mix(std::to_string(v)); }
  void mix_uint(std::uint64_t v) { mix(std::to_string(v)); }
  void mix_id(StreamId id) { mix(id.str()); }
  void mix_score(double v) {
    char buf[32];
    const int n = std::snprintf(buf, sizeof buf, "%.17g", v);
    mix(std::string_view(buf, static_cast<std::size_t>(n)));
  }
  void xor_in(const Sha1Digest& o) {
    for (std::size_t i = 0; i < kSha1Bytes; ++i) d_[i] ^= o[i];
  }

  static std::string_view view(const Sha1Digest& d) {
    return {reinterpret_cast<const char*>(d.data()), d.size()};
  }

 private:
  Sha1Digest d_{};
};

// fn(data) under the container's lock; false when it was emptied (the key is gone meanwhile).
template <class C, class F>
bool with_container(const ObjectRef& o, F&& fn) {
  C* c = as_container<C>(o);
  std::lock_guard<std::mutex> lock(c->mu);
  if (c->dead.load(std::memory_order_relaxed) || c->data.empty()) return false;
  fn(std::as_const(c->data));
  return true;
}

void digest_stream(const Stream& s, Digest& d) {
  for (const auto& [id, fv] : s.entries()) {
    d.mix_id(id);
    d.mix_uint(fv.size() / 2);
    for (const std::string& x : fv) d.mix(x);
  }
  d.mix_id(s.last_id());
  d.mix_uint(s.entries_added());
  d.mix_id(s.max_deleted());
  d.mix_uint(s.groups().size());
  for (const auto& [name, g] : s.groups()) {
    d.mix(name);
    d.mix_id(g.last_id);
    d.mix_int(g.entries_read);
    d.mix_uint(g.pel.size());
    for (const auto& [id, nack] : g.pel) {
      d.mix_id(id);
      d.mix(nack.consumer);
      d.mix_uint(nack.delivery_count);
    }
    d.mix_uint(g.consumers.size());
    for (const auto& [cname, c] : g.consumers) {
      d.mix(cname);
      d.mix_uint(c.pel.size());
      for (const StreamId& id : c.pel) d.mix_id(id);
    }
  }
}

// The digest of a stored value with its expiry (see above); nullopt when a container was emptied
// meanwhile (the key is gone).
std::optional<Sha1Digest> value_digest(const Value& v) {
  Digest d;
  bool present = true;
  const ObjectRef& o = v.obj;
  switch (o->type()) {
    case ObjectType::kString:
      d.mix("string");
      d.mix(o->str());
      break;
    case ObjectType::kList:
      d.mix("list");
      present = with_container<ListObject>(o, [&](const std::deque<std::string>& l) {
        for (const std::string& e : l) d.mix(e);
      });
      break;
    case ObjectType::kSet:
      d.mix("set");
      present = with_container<SetObject>(o, [&](const MemberSet& s) {
        Digest members;
        for (std::size_t i = 0; i < s.size(); ++i) members.xor_in(sha1(s.at(i).view()));
        d.mix_uint(s.size());
        d.mix(Digest::view(members.bytes()));
      });
      break;
    case ObjectType::kHash:
      d.mix("hash");
      present = with_container<HashObject>(o, [&](const HashFields& h) {
        Digest fields;
        for (const auto& [f, val] : h) fields.xor_in(sha1({Length(f.size()).view(), f, val}));
        d.mix_uint(h.size());
        d.mix(Digest::view(fields.bytes()));
      });
      break;
    case ObjectType::kZSet:
      d.mix("zset");
      present = with_container<ZSetObject>(o, [&](const ZSet& z) {
        for (const ZSet::Node* n = z.list().first(); n != nullptr; n = n->next()) {
          d.mix(n->member);
          d.mix_score(n->score);
        }
      });
      break;
    case ObjectType::kStream:
      d.mix("stream");
      present = with_container<StreamObject>(o, [&](const Stream& s) { digest_stream(s, d); });
      break;
  }
  if (!present) return std::nullopt;
  if (v.expire_ms != 0) {
    d.mix("expire");
    d.mix_int(v.expire_ms);
  }
  return d.bytes();
}

// DIGEST: the XOR of every live key's digest. DEBUG runs escalated over the whole keyspace
// (kKeyspaceWide), so no other command runs meanwhile and the digest is of one state. The keys
// are copied out of the walk before any container is locked, so that no container lock is ever
// taken while the backend's for_each holds its own protection (a shard lock, on some backends).
void digest(CommandContext& ctx) {
  if (!can_walk(ctx)) return;
  std::vector<std::pair<std::string, Value>> keys;
  ctx.ks.for_each([&](std::string_view key, const Value& v) {
    if (v.expired_at(ctx.now_ms) || live_container_is_dead(v)) return;
    keys.emplace_back(std::string(key), v);
  });
  Digest total;
  for (const auto& [key, v] : keys) {
    const std::optional<Sha1Digest> vd = value_digest(v);
    if (!vd) continue;
    Digest k;
    k.mix(key);
    k.mix(Digest::view(*vd));
    total.xor_in(k.bytes());
  }
  ctx.reply.simple(to_hex(total.bytes()));
}

// DIGEST-VALUE key...: the stored value's digest per key, expired or not (as DEBUG OBJECT finds
// it); all zeros for an absent key.
void digest_value(CommandContext& ctx) {
  ctx.reply.array(ctx.argc() - 2);
  for (std::size_t j = 2; j < ctx.argc(); ++j) {
    Value v;
    ctx.ks.find(ctx.arg(j), [&](const Value& found) {
      if (!live_container_is_dead(found)) v = found;
    });
    std::optional<Sha1Digest> vd;
    if (v.obj) vd = value_digest(v);
    ctx.reply.simple(to_hex(vd.value_or(Sha1Digest{})));
  }
}

void help(CommandContext& ctx) {
  reply_help(ctx, {"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "CHANGE-REPL-ID",
                   "    Accepted (kvlab has no replication).",
                   "DIGEST",
                   "    Output a hex signature representing the current DB content.",
                   "DIGEST-VALUE <key> [<key> ...]",
                   "    Output a hex signature of the values of all the specified keys.",
                   "ERROR <string>",
                   "    Return a Redis protocol error with <string> as message. Useful for clients",
                   "    unit tests to simulate Redis errors.",
                   "LOG <message>",
                   "    Write <message> to the server log.",
                   "OBJECT <key>",
                   "    Show low level info about `key` and associated value.",
                   "PAUSE-CRON <0|1>",
                   "    Accepted (kvlab has no cron).",
                   "POPULATE <count> [<prefix>] [<size>]",
                   "    Create <count> string keys named key:<num>. If <prefix> is specified then",
                   "    it is used instead of the 'key' prefix. Existing keys are left alone.",
                   "PROTOCOL <type>",
                   "    Reply with a test value of the specified type. <type> can be: string,",
                   "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
                   "    true, false.",
                   "QUICKLIST-PACKED-THRESHOLD <size>",
                   "    Accepted and validated (kvlab has no quicklists).",
                   "RELOAD [option ...]",
                   "    Accepted (kvlab has no persistence: the dataset stays as it is).",
                   "SET-ACTIVE-EXPIRE <0|1>",
                   "    Setting it to 0 disables expiring keys in background when they are not",
                   "    accessed. Setting it to 1 reenables back the default.",
                   "SET-DISABLE-DENY-SCRIPTS <0|1>",
                   "    Lets scripts call DEBUG (1) or not (0, the default). Other commands that",
                   "    scripts may not run stay refused.",
                   "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
                   "    Enables or disables checksum checks for RESTORE's payload.",
                   "SLEEP <seconds>",
                   "    Stop the server for <seconds>. Decimals allowed.",
                   "STRINGMATCH-TEST",
                   "    Run a fuzz tester against the glob matcher.",
                   "HELP",
                   "    Prints this help."});
}

void debug_cmd(CommandContext& ctx) {
  if (!debug_allowed(ctx)) return;
  const std::string_view sub = ctx.arg(1);
  const std::size_t argc = ctx.argc();
  if (iequals(sub, "help") && argc == 2) {
    help(ctx);
  } else if (iequals(sub, "protocol") && argc == 3) {
    protocol(ctx, ctx.arg(2));
  } else if (iequals(sub, "error") && argc == 3) {
    ctx.reply.error(ctx.arg(2));
  } else if (iequals(sub, "sleep") && argc == 3) {
    // strtod as Redis reads it: "x" sleeps 0 s.
    const double seconds = std::strtod(std::string(ctx.arg(2)).c_str(), nullptr);
    if (seconds > 0) {
      const auto us = static_cast<long long>(std::min(seconds, 1e9) * 1e6);
      timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
    }
    ctx.reply.ok();
  } else if (iequals(sub, "set-active-expire") && argc == 3) {
    g_active_expire.store(c_atoi(ctx.arg(2)) != 0, std::memory_order_relaxed);
    ctx.reply.ok();
  } else if (iequals(sub, "set-disable-deny-scripts") && argc == 3) {
    scripting::set_disable_deny_scripts(c_atoi(ctx.arg(2)) != 0);
    ctx.reply.ok();
  } else if (iequals(sub, "set-skip-checksum-validation") && argc == 3) {
    rdb::set_skip_checksum(c_atoi(ctx.arg(2)) != 0);
    ctx.reply.ok();
  } else if (iequals(sub, "populate") && argc >= 3 && argc <= 5) {
    populate(ctx);
  } else if (iequals(sub, "digest") && argc == 2) {
    digest(ctx);
  } else if (iequals(sub, "digest-value") && argc >= 2) {
    digest_value(ctx);
  } else if (iequals(sub, "object") && argc == 3) {
    debug_object(ctx, ctx.arg(2));
  } else if (iequals(sub, "stringmatch-test") && argc == 2) {
    stringmatch_test(ctx);
  } else if (iequals(sub, "log") && argc == 3) {
    std::fprintf(stderr, "kvlab-server: DEBUG LOG: %.*s\n", static_cast<int>(ctx.arg(2).size()),
                 ctx.arg(2).data());
    ctx.reply.ok();
  } else if (iequals(sub, "reload")) {
    ArgParser p(ctx.argv, 2);
    while (!p.done())
      if (!p.check("merge") && !p.check("noflush") && !p.check("nosave"))
        p.fail(err::kDebugReloadOptions);
    if (p.reply_error(ctx.reply)) return;
    ctx.reply.ok();
  } else if ((iequals(sub, "change-repl-id") && argc == 2) ||
             (iequals(sub, "pause-cron") && argc == 3)) {
    ctx.reply.ok();
  } else if (iequals(sub, "quicklist-packed-threshold") && argc == 3) {
    std::uint64_t size = 0;
    if (!parse_memory_units(ctx.arg(2), &size) || size > (std::uint64_t{1} << 32) - (1 << 20)) {
      ctx.reply.error(err::kDebugMemoryValue);
      return;
    }
    ctx.reply.ok();
  } else {
    ctx.reply.error(err::subcommand_syntax("debug", sub));
  }
}

constexpr CommandSpec kDebugCommands[] = {
    {"debug", -2, kAdmin | kLoading | kStale | kKeyspaceWide, debug_cmd, 0, 0, 0, "server",
     "A container for debugging commands", "subcommand [argument [argument ...]]", "1.0.0",
     "Depends on subcommand."},
};

}  // namespace

bool active_expire_enabled() {
  return g_active_expire.load(std::memory_order_relaxed);
}

std::span<const CommandSpec> debug_commands() {
  return kDebugCommands;
}

}  // namespace kvlab::server
