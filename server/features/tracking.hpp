// Client-side caching (Redis 6+/7.0 CLIENT TRACKING): the server remembers which keys a tracking
// client read and tells it, once, when one of them changes, so the client may cache values.
//
// Modes (Redis 7.0 semantics, tracking.c):
//   default  a read-only command run by a tracking connection adds (key → client id) to the
//            tracking table *before* it reads. A modification of the key (any client, any worker,
//            expiry, FLUSHALL/FLUSHDB) sends `invalidate [key]` to every id of the key's entry
//            and removes the entry ("once and forget"). OPTIN: only reads right after
//            CLIENT CACHING YES are remembered; OPTOUT: every read except right after
//            CLIENT CACHING NO. NOLOOP: no message about a key the client itself modified.
//   BCAST    no table: every modified key that starts with one of the client's prefixes ("" when
//            none were given) is sent, one message per (prefix, command) with that command's
//            matching keys, sorted and without duplicates.
//   flush    FLUSHALL/FLUSHDB send a null invalidation to every tracking client and empty the
//            table.
//   bound    the table holds at most tracking-table-max-keys keys (0: no bound); remembering one
//            more, or lowering the bound, evicts keys, invalidating them for their clients, as
//            Redis does.
//
// Delivery: the thread that modified keys (or evicted them) computes the messages under the
// registry's mutex *after* its command has replied (Worker::execute calls flush(); the expiry sweep
// too), then delivers them like pub/sub: a target on its own worker gets the bytes at once, one on
// another worker through that worker's inbox (PubSubBatch / Worker::post, pubsub.hpp). The frame
// carries a tag and the message kind; the receiving worker renders it for the receiving
// connection as Redis's sendTrackingMessage does: RESP3 → push `>2 invalidate <keys>`;
// RESP2 redirect target in pub/sub mode → `message __redis__:invalidate <keys>`; otherwise dropped.
// A client whose blocked command the writer's command served (BLMOVE's push to a key it tracks)
// gets its own invalidations with that reply, right behind it, in one unblock item
// (tracking_defer_unblock), as Redis sends them after the served command's reply.
// A redirect whose target has gone sends `tracking-redir-broken <id>` (RESP3) to the tracking
// client instead, and marks it (TRACKINGINFO's broken_redirect), at invalidation time as Redis.
//
// Why nothing stale survives (the property tests/server/tracking_test.cpp checks): a reader
// registers key k under mu_ and then reads; a writer writes k and later, under mu_, looks k up.
// If the writer's lock comes second it finds the reader's entry and sends an invalidation; if
// first, its write happened before the reader's registration, hence before the read, and the
// reader reads the new value. An invalidation reaches the reader's connection only between its
// event batches (inbox) or after the command (local), so never before the reply to the read it
// concerns.
//
// Thread safety: one mutex (mu_) guards every table. clients_ (the number of tracking clients) is
// written under mu_ and read relaxed on every keyspace modification (Db::modified): CLIENT
// TRACKING ON runs as a keyspace-wide operation of the atomicity layer (atomicity.hpp), so a write
// command either finished before it (and the client reads its value) or started after it and
// sees the count through the gate's release/acquire; a stale non-zero count after OFF only costs a
// lookup. The thread-local outbox and pending keys belong to the thread that fills them.
//
// Invariants:
//  1. items_ is the sum of the sizes of table_'s id vectors; no vector is empty, no id repeats.
//  2. prefixes_ maps a prefix to the non-empty list of BCAST clients registered for it, and
//     clients_map_[id].prefixes lists exactly the prefixes whose list holds id.
//  3. clients_ == clients_map_.size().
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "server/features/pubsub.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::server {

class FeatureHost;
struct Connection;
struct CommandContext;
struct CommandSpec;
struct BlockedClient;

// A connection's own view of its tracking state (worker-local; mirrored in the registry).
struct TrackingFlags {
  bool on = false, bcast = false, optin = false, optout = false, noloop = false;
  bool caching = false;  // CLIENT CACHING YES/NO given: applies to the next command
  std::uint64_t redirect = 0;
};

class TrackingRegistry {
 public:
  // True when some client tracks: the one load the write path pays when nobody does.
  bool active() const {
    // relaxed: see "Thread safety" above (ON runs as a keyspace-wide operation).
    return clients_.load(std::memory_order_relaxed) != 0;
  }

  // CLIENT TRACKING ON after its checks: (re)registers client `self` (prefixes are added to those
  // it has, as in Redis).
  void enable(SubscriberRef self, std::uint64_t redirect, bool bcast, bool noloop,
              const std::vector<std::string>& prefixes);
  // CLIENT TRACKING OFF, or the connection closes. Table entries naming it are dropped lazily.
  void disable(std::uint64_t id);
  // The Redis error text when one of `prefixes` overlaps an existing prefix of `id` or another
  // given prefix; empty when none.
  std::string check_prefixes(std::uint64_t id, const std::vector<std::string>& prefixes);
  // TRACKINGINFO's prefixes and broken flag.
  std::vector<std::string> prefixes_of(std::uint64_t id);
  bool broken_redirect(std::uint64_t id);

  // Default mode: remembers that client `id` reads `keys` (before it reads them).
  void remember(FeatureHost& server, std::uint64_t id, std::span<const std::string_view> keys);
  // CONFIG SET tracking-table-max-keys: evicts keys (invalidating them) until the table fits the
  // new bound at once, as Redis's next event-loop iteration does, not at the next read.
  void enforce_bound(FeatureHost& server);

  // INFO.
  std::size_t clients() const { return clients_.load(std::memory_order_relaxed); }
  std::size_t total_keys();
  std::size_t total_items();
  std::size_t total_prefixes();

  // Called by flush(): computes the messages for keys modified by client `origin` (0: none), and
  // the null invalidation when `flushed`, into the calling thread's outbox. Keys under a BCAST
  // prefix are only noted, for broadcast().
  void invalidate(FeatureHost& server, std::uint64_t origin, const std::vector<std::string>& keys,
                  bool flushed);
  // BCAST mode sends as Redis does before it sleeps: the keys modified since the last broadcast,
  // one message per prefix and client (NOLOOP leaves out the keys that client modified last),
  // into the calling thread's outbox. Workers call it at the end of each event-loop iteration,
  // so the messages follow the replies of the commands that caused them, and a pipeline of writes
  // causes one message, not one per write.
  bool broadcast_pending() const {
    // relaxed: a hint read once per loop iteration. The keys are under mu_; the worker that noted
    // them reads its own store, so none waits longer than that worker's current iteration.
    return bcast_pending_.load(std::memory_order_relaxed);
  }
  void broadcast(FeatureHost& server);

 private:
  struct Client {
    unsigned worker = 0;
    std::uint64_t redirect = 0;
    bool bcast = false, noloop = false, broken = false;
    std::vector<std::string> prefixes;
  };
  // REQUIRES: mu_. Queues one message about `keys_resp` (an encoded array, or "" for the null
  // invalidation) for client id.
  void send_locked(FeatureHost& server, std::uint64_t id, Client& c, std::string_view keys_resp);
  // REQUIRES: mu_. Removes key's entry and queues its invalidations.
  void invalidate_key_locked(FeatureHost& server, std::uint64_t origin, std::string_view key);
  // REQUIRES: mu_. Invalidates keys until the table holds at most max (0: no bound).
  void evict_to_bound_locked(FeatureHost& server, std::int64_t max);

  std::mutex mu_;
  std::unordered_map<std::uint64_t, Client> clients_map_;
  std::unordered_map<std::string, std::vector<std::uint64_t>, kvlab::StringHash,
                     kvlab::StringEqual>
      table_;              // default mode: key → ids of the clients that read it
  std::size_t items_ = 0;  // invariant 1
  std::map<std::string, std::vector<std::uint64_t>, std::less<>> prefixes_;  // BCAST
  // BCAST: keys modified since the last broadcast → the client that modified each last (0: none).
  std::map<std::string, std::uint64_t, std::less<>> bcast_keys_;
  std::atomic<bool> bcast_pending_{false};  // bcast_keys_ is not empty; written under mu_
  std::atomic<std::uint32_t> clients_{0};  // invariant 3; written under mu_
};

// tracking-table-max-keys (CONFIG SET): relaxed, an independent setting.
void set_tracking_max_keys(std::int64_t n);

// Db::modified / Db::clear on the calling thread: remember the key (or the flush) for flush().
void tracking_note_modified(std::string_view key);
// While one lives on the calling thread, the keys it notes were changed by the server itself (an
// expired key removed), not by the client whose command runs: NOLOOP does not hide them from that
// client, as in Redis, where an expiry's invalidation names no client.
class TrackingServerChange {
 public:
  TrackingServerChange();
  ~TrackingServerChange();
  TrackingServerChange(const TrackingServerChange&) = delete;
  TrackingServerChange& operator=(const TrackingServerChange&) = delete;

 private:
  bool saved_;
};
void tracking_note_flush();
// serve_blocked() on the calling thread answered connection conn's blocked command b with
// reply while clients track: flush() posts the reply to conn's worker with conn's invalidations
// from this command behind it, in one item (Worker::post_unblock), so that nothing comes between.
void tracking_defer_unblock(unsigned worker, std::uint64_t conn, const BlockedClient* b,
                            std::string reply);
// Whether the calling thread has tracking work to flush: a plain thread-local read, inline,
// because Worker::execute asks after every command.
inline thread_local bool t_tracking_pending = false;
inline bool tracking_pending() {
  return t_tracking_pending;
}
// Sends what the calling thread noted (origin: the connection whose command ran, 0 for none).
void tracking_flush(FeatureHost& server, unsigned self, std::uint64_t origin);

// dispatch(): a tracking connection (conn_id, its flags t) runs a read-only command; remembers its
// keys when its mode says so (default mode, OPTIN after CACHING YES, OPTOUT unless CACHING NO).
void tracking_before_read(CommandContext& ctx, const CommandSpec& cmd, FeatureHost& server,
                          const TrackingFlags& t, std::uint64_t conn_id);

// The tag that starts a tracking frame inside a PubSubFrame (Worker::deliver renders it).
inline constexpr char kTrackingFrameTag = '\x01';
// Worker::deliver: the bytes to append for a tracking frame to a connection speaking RESP `resp`
// (subscribed: in RESP2 pub/sub mode); false to drop.
bool tracking_render(int resp, bool subscribed, std::string_view frame, std::string* out);

// CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO handlers (server/commands/tracking.cpp);
// the close hook, tracking_forget(), is with the session (net/session.hpp).
void client_tracking_cmd(CommandContext& ctx);
void client_caching_cmd(CommandContext& ctx);
void client_getredir_cmd(CommandContext& ctx);
void client_trackinginfo_cmd(CommandContext& ctx);

}  // namespace kvlab::server
