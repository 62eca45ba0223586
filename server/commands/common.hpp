// Helpers shared by the command families: expiry-aware lookups over the keyspace and argument
// parsing with Redis's error replies.
//
// Expiry model: a Value carries its absolute expiry; an expired value is treated as absent by every
// command (lazy expiry) and removed by a conditional erase that re-checks the value it removes, so
// a concurrent SET that replaced it is never lost. Workers also sweep the keys they saw get a TTL
// (Worker::track_expiry), so expired keys do not pile up.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string_view>

#include "server/commands/args.hpp"
#include "server/core/command.hpp"
#include "server/core/command_util.hpp"
#include "server/features/db.hpp"
#include "server/protocol/errors.hpp"
#include "server/features/notify.hpp"
#include "server/data/object.hpp"
#include "server/net/server.hpp"
#include "server/util/strings_util.hpp"
#include "server/net/worker.hpp"

namespace kvlab::server {

// CLIENT UNBLOCK: ends conn_id's wait with the timeout reply or an UNBLOCKED error. False when it
// was not blocked (or was being served).
bool unblock_client(CommandContext& ctx, std::uint64_t conn_id, bool with_error);
// Cluster mode, after a new configuration was published (KVLAB CLUSTER CONFIG, with every key
// locked): ends the wait of every client blocked on a key of a slot this node neither owns nor
// imports, with -MOVED slot host:port (-CLUSTERDOWN when the slot has no owner or the node is
// not in the configuration), as Redis 7.0's clusterRedirectBlockedClientIfNeeded. A slot that
// migrates away is still this node's: its waiters stay, as in 7.0. Returns how many it ended.
std::size_t redirect_blocked_clients(CommandContext& ctx, const ClusterConfig& cfg);
// Serves a client blocked by XREAD (argv as it registered, with "$" resolved) from key, writing
// its reply to w; false when key holds nothing after the client's ID (streams.cpp).
bool serve_blocked_xread(CommandContext& ctx, std::span<const std::string_view> argv,
                         std::string_view key, ReplyWriter& w);


// Calls fn(const Value&) for key's live value while the backend protects it. Returns false when
// the key is absent or expired (and then removes the expired value, unless clients are paused).
// Counts keyspace hits/misses. touch: update the key's LRU/LFU word; false for the commands Redis
// runs with LOOKUP_NOTOUCH (TYPE, EXISTS, TTL and its kin, OBJECT, MEMORY USAGE). read_lookup:
// a read command's lookup, whose miss is a "keymiss" event; false for a write command's lookup.
template <class F>
bool read_live(CommandContext& ctx, std::string_view key, F&& fn, bool touch = true,
               bool read_lookup = true) {
  bool expired = false;
  const bool found = ctx.ks.find(key, [&](const Value& v) {
    if (v.expired_at(ctx.now_ms)) {
      expired = true;
      return;
    }
    if (touch) ctx.server.eviction().touch(*v.obj, ctx.now_ms);  // LRU/LFU/SIEVE metadata
    fn(v);
  });
  WorkerStats& st = ctx.server.stats(ctx.worker.index());
  if (found && !expired) {
    st.hits.store(st.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return true;
  }
  st.misses.store(st.misses.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  // During a CLIENT PAUSE an expired key reads as absent but stays (Redis 7.0 keeps the dataset
  // static); the first read after the pause removes it.
  if (expired && ctx.server.paused(ctx.now_ms) == Server::kPauseNone &&
      expire_if_due(ctx.ks, key, ctx.now_ms)) {
    st.expired.store(st.expired.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  if (read_lookup) notify_keyspace_event(kNotifyKeyMiss, "keymiss", key);  // after "expired"
  return false;
}

// KEYS, SCAN, RANDOMKEY and DEBUG DIGEST walk the keyspace. Backends whose for_each needs
// quiescent writers (traits().concurrent_for_each == false) may only do so when this is the only
// worker; otherwise replies an error naming the backend and returns false (keys.cpp).
bool can_walk(CommandContext& ctx);



// Parses a SCAN-family cursor as Redis does (strtoul, base 10): an optional sign, then digits; an
// empty string is cursor 0 and "-N" wraps to 2^64 - N. Leading spaces, other characters and values
// beyond 64 bits are invalid (the caller replies "invalid cursor"). Like strtoul on Redis's C
// string, the cursor ends at its first NUL byte ("\0x" is cursor 0).
inline bool parse_scan_cursor(std::string_view s, std::uint64_t* out) {
  s = s.substr(0, s.find('\0'));
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
    if (s.empty()) return false;  // a sign without digits
  }
  std::uint64_t v = 0;
  for (char c : s) {
    const unsigned d = static_cast<unsigned char>(c) - '0';
    if (d > 9 || v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = negative ? 0 - v : v;
  return true;
}

enum class TimeUnit { kSeconds, kMilliseconds };

// Converts an expiry argument to absolute milliseconds as Redis does for SET/GETEX/SETEX:
// non-integer -> "not an integer"; <= 0 or overflow -> "invalid expire time in '<cmd>'".
inline bool arg_expire(CommandContext& ctx, std::string_view s, TimeUnit unit, bool absolute,
                       std::string_view cmd_lower, std::int64_t* at_ms) {
  std::int64_t v = 0;
  if (!arg_i64(ctx, s, &v)) return false;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (v <= 0 || (unit == TimeUnit::kSeconds && v > kMax / 1000)) {
    ctx.reply.error(err::invalid_expire(cmd_lower));
    return false;
  }
  if (unit == TimeUnit::kSeconds) v *= 1000;
  if (!absolute) {
    if (v > kMax - ctx.now_ms) {
      ctx.reply.error(err::invalid_expire(cmd_lower));
      return false;
    }
    v += ctx.now_ms;
  }
  *at_ms = v;
  return true;
}



// The tail "numkeys key [key ...] SIDE [COUNT count]" of LMPOP, ZMPOP, BLMPOP and BZMPOP, with
// numkeys at argv[at]. Checked in Redis's order, with its texts: numkeys, then the side (`first`
// or `second`, any case), then COUNT (at most once). Returns the error reply's text, or an empty
// view when the arguments are good.
struct MultiPopArgs {
  std::size_t first_key = 0;  // the keys are argv[first_key, end_key)
  std::size_t end_key = 0;
  bool first_side = false;  // LEFT or MIN
  std::int64_t count = 1;
  bool has_count = false;
};
// Every text returned is an errors.hpp constant, so the view outlives the parser.
inline std::string_view parse_multi_pop(std::span<const std::string_view> argv, std::size_t at,
                                        std::string_view first, std::string_view second,
                                        MultiPopArgs* out) {
  ArgParser p(argv, at);
  const std::size_t numkeys = p.next_keys(kNumkeysMultiPop).size();
  if (!p.ok()) return p.error();
  out->first_key = at + 1;
  out->end_key = out->first_key + numkeys;
  if (p.check(first)) {
    out->first_side = true;
  } else if (p.check(second)) {
    out->first_side = false;
  } else {
    return err::kSyntax;
  }
  while (!p.done()) {
    if (out->has_count || !p.check("count", 1)) return err::kSyntax;
    out->count = p.next_int(1, std::numeric_limits<std::int64_t>::max(), err::kCountPositive,
                            err::kCountPositive);
    if (!p.ok()) return p.error();
    out->has_count = true;
  }
  return {};
}


// What OBJECT REFCOUNT and OBJECT ENCODING answer for a value (keys.cpp), also shown by DEBUG
// OBJECT.
std::int64_t redis_refcount(const ObjectRef& o);
std::string_view redis_encoding(const ObjectRef& o);

}  // namespace kvlab::server
