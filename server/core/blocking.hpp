// Clients blocked by BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP and
// XREAD BLOCK (registered by streams.cpp; served without consuming, so every ready waiter is), and
// by WAIT (keys.cpp: no keys, only a timeout, as Redis without replicas).
//
// A blocking command that finds nothing to pop registers a BlockedClient on its keys (inside its
// own escalation, so no push can slip between its check and its registration) and its connection
// stops reading commands. A write to a key with waiters runs as an escalation over the whole
// keyspace; after it, serve_blocked() pops for the waiters of every key it made ready, in the
// order they blocked (FIFO), before any other command runs, as Redis serves blocked clients
// right after the command that made a key ready. The reply travels to the waiter's worker through
// Worker::post_unblock(). A waiter is served, times out, is unblocked (CLIENT UNBLOCK) or
// disconnects exactly once: each of these wins the state's compare-and-swap from kWaiting.
//
// Thread safety: the registry's maps are guarded by its mutex; BlockedClient::state is atomic;
// the rest of a BlockedClient is immutable after registration.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kvlab::server {

struct CommandContext;

struct BlockedClient {
  enum State : int { kWaiting, kServing, kDone };
  std::uint64_t conn_id = 0;
  unsigned worker = 0;
  int resp = 2;                   // the waiter's protocol version: its reply is encoded for it
  std::int64_t deadline_ms = 0;   // 0: no timeout
  std::vector<std::string> argv;  // the blocking command, re-read when served
  std::vector<std::string> keys;  // the keys it waits on, deduplicated (none for WAIT)
  std::string timeout_reply;      // RESP sent on timeout or CLIENT UNBLOCK; empty: a null array
  // kWaiting -> kServing (a server of a ready key) -> kDone or back to kWaiting;
  // kWaiting -> kDone (timeout, CLIENT UNBLOCK, disconnect). acq_rel CAS: the winner owns it.
  std::atomic<int> state{kWaiting};
};

class BlockingRegistry {
 public:
  // Relaxed: read by every write command; a stale zero is harmless because registration happens
  // inside an escalation (see atomicity.hpp), which orders it before any write that follows.
  bool active() const { return count_.load(std::memory_order_relaxed) != 0; }
  void add(const std::shared_ptr<BlockedClient>& b);
  void remove(const BlockedClient& b);
  bool has_waiters(std::string_view key);
  // The waiters on key in the order they blocked.
  std::vector<std::shared_ptr<BlockedClient>> waiters(std::string_view key);
  std::shared_ptr<BlockedClient> find(std::uint64_t conn_id);
  // Every registered waiter (a snapshot; any of them may be served or time out meanwhile).
  std::vector<std::shared_ptr<BlockedClient>> all();
  // Every key some client waits on (a snapshot).
  std::vector<std::string> keys();
  std::size_t blocked_clients() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::deque<std::shared_ptr<BlockedClient>>> by_key_;
  std::unordered_map<std::uint64_t, std::shared_ptr<BlockedClient>> by_conn_;
  std::atomic<std::size_t> count_{0};
};

// The keys an escalation that serves blocked clients modified (Db records them while `collecting`,
// between start() and serve_blocked()): the keys serve_blocked() looks at, in the order they were
// first signalled. One per worker thread; outside such an escalation nothing is recorded, so the
// list cannot grow with unrelated writes.
//
// As Redis 7.0 (signalKeyAsReady), a key is ready for list and sorted-set waiters only where it
// got a value they can pop from: a list, sorted set or stream stored at it (`wakes`). Any other
// change (a string stored, a key deleted, a stream changed in place) matters only to stream
// waiters (XREAD, XREADGROUP: a new entry, or a group gone): serve_blocked() skips such an entry
// unless the key has one. The order matters inside MULTI/EXEC and scripts: with BLPOP k1 k2
// waiting, "SET k1 x, DEL k1, RPUSH k2 a, RPUSH k1 b" serves k2 first, as Redis does.
struct ReadyKeys {
  bool collecting = false;
  std::vector<std::string> keys;
  std::vector<bool> wakes;  // parallel to keys
  void start() {
    keys.clear();
    wakes.clear();
    collecting = true;
  }
  void stop() {
    collecting = false;
    keys.clear();
    wakes.clear();
  }
  void add(std::string_view key, bool wake) {
    keys.emplace_back(key);
    wakes.push_back(wake);
  }
};
ReadyKeys& ready_keys();

// Serves the clients blocked on the keys the running command made ready; called by the
// escalation that ran the command, before it releases its locks. Serving runs the blocked
// commands' own code (pops, moves, stream reads), which lives in the command layer:
// commands/blocking.cpp registers it with set_serve_blocked() during static initialization, so
// the core calls up through this hook without including that layer.
using ServeBlockedFn = void (*)(CommandContext&);
void set_serve_blocked(ServeBlockedFn fn);
void serve_blocked(CommandContext& ctx);

}  // namespace kvlab::server
