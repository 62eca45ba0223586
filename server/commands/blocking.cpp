// Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP, and the
// serving of blocked clients (see server/core/blocking.hpp for the protocol).
//
// Every blocking command escalates over its keys (kEscalate): it looks at its keys in order and
// pops from the first that has something (WRONGTYPE at the first key of another type, as Redis);
// when none has, it registers as a waiter, unless it runs inside MULTI/EXEC, where it answers the
// timeout reply at once. A waiter is served with the same pop on the key that became ready, and
// answers the same reply it would have given at once.
#include "server/core/blocking.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "server/features/cluster.hpp"
#include "server/commands/containers.hpp"
#include "server/data/set_types.hpp"
#include "server/data/value_types.hpp"
#include "server/features/monitor.hpp"
#include "server/features/tracking.hpp"
#include "server/protocol/errors.hpp"

namespace kvlab::server {

namespace {

using List = ListObject::Data;

enum class Kind { kPop, kMove, kMultiPop, kZPop, kZMultiPop };

// A blocking command, parsed: what to pop, from which keys, for how long.
struct Spec {
  Kind kind = Kind::kPop;
  bool left = true;     // lists: pop side; zsets: true = min
  bool to_left = true;  // BLMOVE: push side
  std::size_t count = 1;
  std::int64_t timeout_ms = 0;  // 0: forever
  std::vector<std::string_view> keys;
  std::string_view dst;
};

// Redis's timeout rules (seconds as a double): a bad number, a negative one and one too large for
// milliseconds each have their text.
bool parse_timeout(std::string_view s, std::int64_t* ms, std::string* error) {
  long double v = 0;
  if (!parse_long_double(s, &v)) {
    *error = err::kTimeoutNotFloat;
    return false;
  }
  const long double t = std::ceil(v * 1000.0L);
  if (!(t >= 0) || t > static_cast<long double>(std::numeric_limits<std::int64_t>::max() / 2)) {
    *error = err::kTimeoutNegative;
    return false;
  }
  *ms = static_cast<std::int64_t>(t);
  return true;
}

// Parses argv of any blocking command; false with *error set on a bad argument.
bool parse_spec(std::span<const std::string_view> argv, Spec* s, std::string* error) {
  const std::string name = lower_name(argv[0]);
  if (name == "blpop" || name == "brpop" || name == "bzpopmin" || name == "bzpopmax") {
    const bool zset = name[1] == 'z';
    s->kind = zset ? Kind::kZPop : Kind::kPop;
    s->left = name == "blpop" || name == "bzpopmin";
    s->keys.assign(argv.begin() + 1, argv.end() - 1);
    return parse_timeout(argv.back(), &s->timeout_ms, error);
  }
  if (name == "blmove" || name == "brpoplpush") {
    s->kind = Kind::kMove;
    s->keys = {argv[1]};
    s->dst = argv[2];
    std::string_view timeout = argv[3];
    if (name == "blmove") {
      timeout = argv[5];
      auto side = [&](std::string_view a, bool* left) {
        if (iequals(a, "left")) return *left = true, true;
        if (iequals(a, "right")) return *left = false, true;
        return false;
      };
      if (!side(argv[3], &s->left) || !side(argv[4], &s->to_left)) {
        *error = std::string(err::kSyntax);
        return false;
      }
    } else {
      s->left = false;
      s->to_left = true;
    }
    return parse_timeout(timeout, &s->timeout_ms, error);
  }
  // BLMPOP / BZMPOP timeout numkeys key [key ...] LEFT|RIGHT|MIN|MAX [COUNT count]
  const bool zset = name == "bzmpop";
  s->kind = zset ? Kind::kZMultiPop : Kind::kMultiPop;
  // As Redis: numkeys, the side and COUNT are checked before the timeout.
  MultiPopArgs m;
  const std::string_view e =
      parse_multi_pop(argv, 2, zset ? "min" : "left", zset ? "max" : "right", &m);
  if (!e.empty()) {
    *error = std::string(e);
    return false;
  }
  s->keys.assign(argv.begin() + m.first_key, argv.begin() + m.end_key);
  s->left = m.first_side;
  s->count = static_cast<std::size_t>(m.count);
  return parse_timeout(argv[1], &s->timeout_ms, error);
}

enum class Pop { kDone, kEmpty, kWrongType, kDstWrongType };

// Pops from key as spec says and writes the reply to r. Nothing is written unless kDone.
Pop pop_from(CommandContext& ctx, const Spec& s, std::string_view key, ReplyWriter& r) {
  const bool zset = s.kind == Kind::kZPop || s.kind == Kind::kZMultiPop;
  if (zset) {
    std::vector<std::pair<std::string, double>> popped;
    const Access a = write_container<ZSetObject>(
        ctx, key, false,
        [&](ZSet& z) {
          const std::size_t n = std::min(s.count, z.size());
          for (std::size_t k = 0; k < n; ++k) popped.push_back(z.pop(!s.left));
        },
        /*reply_wrongtype=*/false);
    if (a == Access::kWrongType) return Pop::kWrongType;
    if (a == Access::kMissing || popped.empty()) return Pop::kEmpty;
    notify_container_write(ctx, kNotifyZset, s.left ? "zpopmin" : "zpopmax", key);
    if (s.kind == Kind::kZPop) {
      r.array(3);
      r.bulk(key);
      r.bulk(popped[0].first);
      reply_score(r, popped[0].second);
    } else {
      r.array(2);
      r.bulk(key);
      r.array(popped.size());
      for (const auto& [m, score] : popped) {
        r.array(2);
        r.bulk(m);
        reply_score(r, score);
      }
    }
    return Pop::kDone;
  }
  if (s.kind == Kind::kMove && key != s.dst) {
    // As Redis: an empty source waits whatever the destination holds; with elements, the
    // destination's type is checked before anything is popped (WRONGTYPE, nothing moved).
    ObjectRef src, d;
    const Access a = lookup_container<ListObject>(ctx, key, &src, false, false);
    if (a == Access::kWrongType) return Pop::kWrongType;
    if (a == Access::kMissing) return Pop::kEmpty;
    if (lookup_container<ListObject>(ctx, s.dst, &d, false, false) == Access::kWrongType)
      return Pop::kDstWrongType;
  }
  std::vector<std::string> popped;
  const Access a = write_container<ListObject>(
      ctx, key, false,
      [&](List& l) {
        const std::size_t n = std::min(s.count, l.size());
        for (std::size_t k = 0; k < n; ++k) {
          if (s.left) {
            popped.push_back(std::move(l.front()));
            l.pop_front();
          } else {
            popped.push_back(std::move(l.back()));
            l.pop_back();
          }
        }
        if (s.kind == Kind::kMove && key == s.dst) {  // a rotation: one locked step
          if (s.to_left) {
            l.push_front(popped[0]);
          } else {
            l.push_back(popped[0]);
          }
        }
      },
      /*reply_wrongtype=*/false);
  if (a == Access::kWrongType) return Pop::kWrongType;
  if (a == Access::kMissing || popped.empty()) return Pop::kEmpty;
  const bool emptied = t_container_emptied;
  const std::string_view pop_event = s.left ? "lpop" : "rpop";
  switch (s.kind) {
    case Kind::kPop:
      r.array(2);
      r.bulk(key);
      r.bulk(popped[0]);
      break;
    case Kind::kMove:
      if (key != s.dst) {
        write_container<ListObject>(ctx, s.dst, true, [&](List& l) {
          if (s.to_left) {
            l.push_front(popped[0]);
          } else {
            l.push_back(popped[0]);
          }
        });
      }
      // Redis's order: the push on the destination, then the pop on the source.
      notify_keyspace_event(ctx, kNotifyList, s.to_left ? "lpush" : "rpush", s.dst);
      r.bulk(popped[0]);
      break;
    default:
      r.array(2);
      r.bulk(key);
      r.array(popped.size());
      for (const auto& v : popped) r.bulk(v);
      break;
  }
  notify_keyspace_event(ctx, kNotifyList, pop_event, key);
  if (emptied) notify_keyspace_event(ctx, kNotifyGeneric, "del", key);
  return Pop::kDone;
}

// The error code of a raw RESP reply ("NOGROUP" for "-NOGROUP the consumer group ..."); empty
// when it is not an error.
std::string_view error_code_of(std::string_view reply) {
  if (reply.empty() || reply[0] != '-') return {};
  reply.remove_prefix(1);
  return reply.substr(0, std::min(reply.find(' '), reply.find('\r')));
}

// How a wait ended, for the statistics. Redis 7.0 counts a blocking command's call when it
// blocks; when its wait ends it counts, beyond any error reply (errorstats, total_error_replies):
// served by a push (with data or an error: NOGROUP, UNBLOCKED, WRONGTYPE) -> a slow log entry,
// and a failed call when it answers an error; CLIENT UNBLOCK -> a failed call, even with the
// timeout reply; a timeout, or a cluster redirection -> nothing more.
enum class WaitEnd { kServed, kUnblocked, kRedirected };

// Ends b's wait with reply (raw RESP). REQUIRES: this thread moved b->state to kDone and removed
// b from the registry. Counts on this worker (the single writer of its statistics) before the
// reply is posted, so that a client that reads the reply and then INFO or SLOWLOG sees it.
void end_wait(CommandContext& ctx, const BlockedClient& b, std::string reply, WaitEnd how,
              std::uint64_t served_us = 0) {
  const std::string_view code = error_code_of(reply);
  const bool failed = how == WaitEnd::kUnblocked || (how == WaitEnd::kServed && !code.empty());
  if (!code.empty() || failed) count_unblocked(ctx, b.argv[0], code, failed);
  if (how == WaitEnd::kServed) {
    const std::int64_t slow = slowlog_slower_than(), lat = latency_threshold_ms();
    if ((slow >= 0 && served_us >= static_cast<std::uint64_t>(slow)) ||
        (lat > 0 && served_us / 1000 >= static_cast<std::uint64_t>(lat))) {
      std::string addr, name;
      ctx.server.clients().addr_and_name(b.conn_id, &addr, &name);
      monitor_unblocked(b.argv, std::move(addr), std::move(name), served_us);
    }
    // The invalidations this command causes for the served client follow its reply.
    if (ctx.ks.tracking().active()) {
      tracking_defer_unblock(b.worker, b.conn_id, &b, std::move(reply));
      return;
    }
  }
  ctx.server.worker(b.worker).post_unblock(b.conn_id, &b, std::move(reply));
}

void blocking_cmd(CommandContext& ctx) {
  Spec s;
  std::string error;
  if (!parse_spec(ctx.argv, &s, &error)) {
    ctx.reply.error(error);
    return;
  }
  for (std::string_view key : s.keys) {
    switch (pop_from(ctx, s, key, ctx.reply)) {
      case Pop::kDone:
        return;
      case Pop::kWrongType:
      case Pop::kDstWrongType:
        ctx.reply.error(err::kWrongType);
        return;
      case Pop::kEmpty:
        break;
    }
  }
  if (ctx.conn.in_exec) {  // inside MULTI/EXEC (or a script) a blocking command does not block
    // Redis 7.0 answers a null bulk for BLMOVE/BRPOPLPUSH there (their timeout is a null array).
    if (s.kind == Kind::kMove) {
      ctx.reply.null();
    } else {
      ctx.reply.null_array();
    }
    return;
  }
  auto b = std::make_shared<BlockedClient>();
  b->conn_id = ctx.conn.id;
  b->worker = ctx.worker.index();
  b->resp = ctx.conn.resp;
  b->deadline_ms = s.timeout_ms == 0 ? 0 : ctx.now_ms + s.timeout_ms;
  b->argv.assign(ctx.argv.begin(), ctx.argv.end());
  for (std::string_view k : s.keys) {
    bool seen = false;
    for (const auto& o : b->keys) seen = seen || o == k;
    if (!seen) b->keys.emplace_back(k);
  }
  ctx.server.blocking().add(b);
  ctx.worker.block(ctx.conn, std::move(b));
}

constexpr std::uint32_t kBlock = kWrite | kEscalate;

const CommandSpec kBlockingCommands[] = {
    {"blpop", -3, kBlock, blocking_cmd, 1, -2, 1, "list",
     "Remove and get the first element in a list, or block until one is available",
     "key [key ...] timeout", "2.0.0", "O(N) where N is the number of provided keys."},
    {"brpop", -3, kBlock, blocking_cmd, 1, -2, 1, "list",
     "Remove and get the last element in a list, or block until one is available",
     "key [key ...] timeout", "2.0.0", "O(N) where N is the number of provided keys."},
    {"blmove", 6, kBlock | kDenyOom, blocking_cmd, 1, 2, 1, "list",
     "Pop an element from a list, push it to another list and return it; or block until one is "
     "available",
     "source destination LEFT|RIGHT LEFT|RIGHT timeout", "6.2.0"},
    {"brpoplpush", 4, kBlock | kDenyOom, blocking_cmd, 1, 2, 1, "list",
     "Pop an element from a list, push it to another list and return it; or block until one is "
     "available",
     "source destination timeout", "2.2.0"},
    {"blmpop",
     -5,
     kBlock,
     blocking_cmd,
     0,
     0,
     0,
     "list",
     "Pop elements from the first non-empty list, or block until one is available",
     "timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]",
     "7.0.0",
     "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
     {},
     keys_after_numkeys<2>},
    {"bzpopmin", -3, kBlock | kFast, blocking_cmd, 1, -2, 1, "sorted-set",
     "Remove and return the member with the lowest score from one of the sorted sets, or block "
     "until one is available",
     "key [key ...] timeout", "5.0.0",
     "O(log(N)) with N being the number of elements in the sorted set."},
    {"bzpopmax", -3, kBlock | kFast, blocking_cmd, 1, -2, 1, "sorted-set",
     "Remove and return the member with the highest score from one of the sorted sets, or block "
     "until one is available",
     "key [key ...] timeout", "5.0.0",
     "O(log(N)) with N being the number of elements in the sorted set."},
    {"bzmpop",
     -5,
     kBlock,
     blocking_cmd,
     0,
     0,
     0,
     "sorted-set",
     "Remove and return members with scores in a sorted set, or block until one is available",
     "timeout numkeys key [key ...] MIN|MAX [COUNT count]",
     "7.0.0",
     "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements "
     "in the sorted set, and M being the number of elements popped.",
     {},
     keys_after_numkeys<2>},
};

}  // namespace

std::span<const CommandSpec> blocking_commands() {
  return kBlockingCommands;
}

namespace {
void serve_blocked_clients(CommandContext& ctx);
// The core calls up into this file through the hook (core/blocking.hpp), set before main() runs.
const bool kServeBlockedSet = (set_serve_blocked(&serve_blocked_clients), true);
}  // namespace

namespace {
void serve_blocked_clients(CommandContext& ctx) {
  BlockingRegistry& reg = ctx.server.blocking();
  ReadyKeys& r = ready_keys();
  std::vector<std::string>& ready = r.keys;
  // Serving pops (and BLMOVE pushes), which append to `ready` again: a push into a BLMOVE's
  // destination serves that key's waiters in turn. Bounded so that a cycle of BLMOVEs with
  // elements to spare cannot spin forever.
  for (std::size_t i = 0; i < ready.size() && i < 100000; ++i) {
    const std::string key = ready[i];
    if (!reg.has_waiters(key)) continue;
    const std::vector<std::shared_ptr<BlockedClient>> waiters = reg.waiters(key);
    // A change that stored no poppable value counts only for stream waiters (ReadyKeys).
    if (!r.wakes[i] && std::none_of(waiters.begin(), waiters.end(), [](const auto& b) {
          return iequals(b->argv[0], "xread") || iequals(b->argv[0], "xreadgroup");
        }))
      continue;
    for (const auto& b : waiters) {
      int expected = BlockedClient::kWaiting;
      if (!b->state.compare_exchange_strong(expected, BlockedClient::kServing,
                                            std::memory_order_acq_rel))
        continue;  // timed out, unblocked or disconnected meanwhile
      const std::uint64_t t0 = monotonic_ns();
      std::vector<std::string_view> argv(b->argv.begin(), b->argv.end());
      Spec s;
      std::string error;
      Buffer out;
      ReplyWriter w(out, b->resp);
      if (iequals(argv[0], "xread") || iequals(argv[0], "xreadgroup")) {
        // XREAD consumes nothing: every waiter whose ID the key has passed is served.
        if (!serve_blocked_xread(ctx, argv, key, w)) {
          b->state.store(BlockedClient::kWaiting, std::memory_order_release);
          continue;
        }
        b->state.store(BlockedClient::kDone, std::memory_order_release);
        reg.remove(*b);
        end_wait(ctx, *b, std::string(out.data(), out.size()), WaitEnd::kServed,
                 (monotonic_ns() - t0) / 1000);
        continue;
      }
      const Pop p = parse_spec(argv, &s, &error) ? pop_from(ctx, s, key, w) : Pop::kEmpty;
      if (p == Pop::kDstWrongType) {
        // As Redis 7.0: a move whose destination holds another type ends with WRONGTYPE (the
        // element stays in the source) and the next waiter is served. Leaving it blocked would
        // never answer it: the source now has elements, so no later push wakes the key again.
        w.error(err::kWrongType);
      } else if (p != Pop::kDone) {
        // release: nothing changed; a later server or the waiter's own timeout may take it.
        b->state.store(BlockedClient::kWaiting, std::memory_order_release);
        break;  // the key has nothing more to give (or holds another type)
      }
      b->state.store(BlockedClient::kDone, std::memory_order_release);
      reg.remove(*b);
      end_wait(ctx, *b, std::string(out.data(), out.size()), WaitEnd::kServed,
               (monotonic_ns() - t0) / 1000);
    }
  }
  r.stop();
}
}  // namespace

bool unblock_client(CommandContext& ctx, std::uint64_t conn_id, bool with_error) {
  Server& server = ctx.server;
  std::shared_ptr<BlockedClient> b = server.blocking().find(conn_id);
  if (!b) return false;
  int expected = BlockedClient::kWaiting;
  if (!b->state.compare_exchange_strong(expected, BlockedClient::kDone, std::memory_order_acq_rel))
    return false;
  server.blocking().remove(*b);
  end_wait(ctx, *b,
           with_error                  ? "-" + std::string(err::kUnblocked) + "\r\n"
           : !b->timeout_reply.empty() ? b->timeout_reply
                                       : std::string(b->resp == 3 ? "_\r\n" : "*-1\r\n"),
           WaitEnd::kUnblocked);
  return true;
}

std::size_t redirect_blocked_clients(CommandContext& ctx, const ClusterConfig& cfg) {
  Server& server = ctx.server;
  if (!server.blocking().active()) return 0;
  std::size_t ended = 0;
  for (const auto& b : server.blocking().all()) {
    if (b->keys.empty()) continue;
    // Every key of a blocked command hashes to one slot (CROSSSLOT otherwise): the first decides.
    const unsigned slot = key_hash_slot(b->keys[0]);
    const int owner = cfg.owner[slot];
    if (cfg.self >= 0 && (owner == cfg.self || cfg.migrating_to[slot] == cfg.self)) continue;
    std::string reply;
    if (cfg.self < 0) {
      reply = "-" + std::string(err::kClusterDown) + "\r\n";
    } else if (owner < 0) {
      reply = "-" + std::string(err::kSlotNotServed) + "\r\n";
    } else {
      const ClusterNode& n = cfg.shards[static_cast<std::size_t>(owner)].master;
      reply = "-" + err::moved(slot, n.ip, n.port) + "\r\n";
    }
    int expected = BlockedClient::kWaiting;
    // acq_rel, as unblock_client: the winner of kWaiting owns the waiter's single reply.
    if (!b->state.compare_exchange_strong(expected, BlockedClient::kDone,
                                          std::memory_order_acq_rel))
      continue;  // served, timed out or disconnected meanwhile
    server.blocking().remove(*b);
    end_wait(ctx, *b, std::move(reply), WaitEnd::kRedirected);
    ++ended;
  }
  return ended;
}

}  // namespace kvlab::server
