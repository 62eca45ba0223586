// A worker: one thread, one epoll instance, one SO_REUSEPORT listener, and the connections the
// kernel hands to that listener. A connection lives on one worker for its whole life, so its
// buffers and parser need no synchronization; workers share only the keyspace and the statistics.
//
// Per readiness event a connection does at most one read() and parses and executes every complete
// command in its input buffer; after the whole batch of events, each connection's replies leave
// with one write() (as Redis writes before it sleeps, so a client wakes once per batch). When the
// peer does not read, unsent replies accumulate up to kOutputPauseBytes; then the worker stops
// reading from that connection (backpressure through TCP) until the output drains.
//
// Idle workers sleep in epoll_wait; the only timed wake-ups are for keys whose expiry time comes
// due (the active expiry sweep), never a busy poll.
//
// Pub/sub delivery: each worker owns an inbox (a MessageQueue on the `--queue` backend) that
// publishers on other workers push PubSubBatch pointers into (post()); the worker is the inbox's
// only consumer. A publisher writes the worker's eventfd only when it flips `pending_` from false
// to true, so a burst of publishes costs one wake-up per drain, not one per message. The loop
// drains the inbox after each batch of events (bounded work per iteration), appends each message
// to the connection with the envelope's id (dropping it when the connection has closed), and
// flushes the connections it touched. A bounded backend may refuse a push: the batch then goes to
// a mutex-protected overflow list, drained after the queue (see post() for how order is kept).
// Deliveries ignore the read pause (kOutputPauseBytes); instead a subscriber whose unsent output
// passes the pubsub client-output-buffer-limit is disconnected, so publishers never wait.
//
// Thread safety: everything here belongs to the worker's thread, except wake(), stop() and
// post(), which any thread may call.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "server/features/db.hpp"
#include "server/features/pubsub.hpp"
#include "server/net/server.hpp"
#include "server/protocol/resp_parser.hpp"
#include "server/util/buffer.hpp"
#include "server/util/message_queue.hpp"

namespace kvlab::server {

struct Connection {
  int fd = -1;
  std::uint64_t id = 0;
  Buffer in, out;
  RequestParser parser;
  bool authenticated = true;
  int resp = 2;  // protocol version, 2 or 3 (HELLO switches it; ReplyWriter encodes for it)
  bool close_after_reply = false;  // QUIT or a protocol error: close once `out` is flushed
  bool paused = false;             // input not processed because `out` is above kOutputPauseBytes
  // CLIENT PAUSE: the command at the head of `in` waits, unparsed, for the pause to end
  // (Worker::postpone); later input queues behind it.
  bool postponed = false;
  // Shutdown only (Worker::drain_and_close_all): replies flushed and FIN sent; the connection
  // stays open, input discarded, until the client has acknowledged every byte or closed.
  bool write_shut = false;
  int unacked = -1;            // bytes the client had not acknowledged at the last look (SIOCOUTQ)
  std::uint32_t interest = 0;  // epoll events currently registered
  std::shared_ptr<ClientInfo> info;
  std::vector<std::string_view> argv;  // scratch, reused across commands

  // Pub/sub (pubsub.hpp invariant 1: mirrored in the registry).
  SubscriptionSet channels, patterns, shard_channels;
  // The count (P)SUBSCRIBE replies report (Redis 7.0: shard channels are counted apart).
  std::size_t subscriptions() const { return channels.size() + patterns.size(); }
  // Subscriber mode (RESP2): any subscription, shard channels included.
  bool subscribed() const { return subscriptions() + shard_channels.size() > 0; }
  bool counted_pubsub = false;          // counted in WorkerStats::pubsub_clients
  bool touched = false;                 // in the worker's list of connections to flush
  std::uint32_t seen_window = 0;        // the last yield window with input from it (Worker::run)
  std::int64_t obuf_soft_since_ms = 0;  // when output first passed the soft limit (0: below)
  bool no_evict = false;                // CLIENT NO-EVICT ON: never chosen by maxmemory-clients
  // This connection's memory as last added to its worker's WorkerStats::client_mem
  // (Worker::account_memory), so that a change or the close adds or removes exactly that.
  std::size_t mem_counted = 0;
  TrackingFlags tracking;  // CLIENT TRACKING state (tracking.hpp; in the registry too)
  // Refreshes CLIENT LIST's sub/psub and the worker's pubsub client count after a change.
  void update_pubsub_counts(Server& server, unsigned worker);

  // MULTI/EXEC (server/commands/transactions.cpp).
  struct Transaction {
    bool aborted = false;  // a command failed to queue: EXEC answers EXECABORT
    std::vector<std::vector<std::string>> queued;
    std::size_t bytes = 0;  // the queued arguments' bytes (Redis's multi-mem; client memory)
  };
  std::unique_ptr<Transaction> tx;     // non-null between MULTI and EXEC/DISCARD
  std::unique_ptr<WatchClient> watch;  // non-null while the connection watches keys
  bool in_exec = false;                // running EXEC's queued commands (its locks are held)
  bool asking = false;                 // cluster: ASKING was the previous command (cluster.hpp)
  // SCRIPT DEBUG YES/SYNC was asked: kvlab has no Lua debugger, so EVAL/EVALSHA are refused on
  // this connection until SCRIPT DEBUG NO (server/commands/scripting_registry.cpp, script_debug_cmd).
  bool script_debug = false;
  // Set while a blocking command waits (server/core/blocking.hpp): no further input is processed.
  std::shared_ptr<BlockedClient> blocked;
  // CLIENT REPLY: kSkipNext is set by CLIENT REPLY SKIP and becomes kSkip once that command ends;
  // the replies of a command run under kOff or kSkip are dropped (Worker::execute), also the
  // later answer of a command that blocked then (blocked_reply_dropped).
  enum class ReplyMode : std::uint8_t { kOn, kOff, kSkipNext, kSkip } reply_mode = ReplyMode::kOn;
  bool blocked_reply_dropped = false;

  // SCAN's per-connection snapshot: keys with hash >= `next`, sorted by hash (see keys.cpp).
  struct ScanCache {
    std::uint64_t cursor = 0;  // the cursor value that continues this snapshot
    bool valid = false;
    bool truncated = false;  // more keys beyond the snapshot's last hash
    std::size_t pos = 0;
    std::vector<std::pair<std::uint64_t, std::string>> keys;
  } scan;
};

class Worker {
 public:
  Worker(Server& server, unsigned index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Binds the listener (SO_REUSEPORT on config bind:port) and builds the inbox and the epoll
  // set; the socket does not take connections until listen(). False on failure, with *error
  // filled.
  bool open(std::string* error);
  // Puts the bound listener into the port's SO_REUSEPORT group: from here the kernel hands it a
  // share of new connections (queued in the backlog until the thread runs).
  bool listen(std::string* error);
  // Starts the thread; it binds itself to cpus (if any) first.
  void start(std::vector<unsigned> cpus);
  void wake();  // any thread
  void stop();  // any thread: asks the loop to finish gracefully
  void join();

  unsigned index() const { return index_; }
  // Remembers that key expires at `at_ms`, for the active sweep. Stale entries are harmless: the
  // sweep re-checks the stored value before deleting.
  void track_expiry(std::string_view key, std::int64_t at_ms);
  // Any thread (INFO). Relaxed: a gauge written only by this worker.
  std::size_t connection_count() const { return conns_.load(std::memory_order_relaxed); }

  // Worker thread: conn waits in blocking command b (registered already) until served, timed out,
  // unblocked or closed.
  void block(Connection& conn, std::shared_ptr<BlockedClient> b);
  // Any thread: the wait b of connection conn_id ended; reply is its answer (raw RESP). The frames
  // of `after` (the invalidations serving it caused, tracking.hpp) are delivered right behind the
  // reply, as deliver() does, before the commands the client sent meanwhile run.
  void post_unblock(std::uint64_t conn_id, const BlockedClient* b, std::string reply,
                    std::vector<std::string> after = {});
  // Any thread: close connection conn_id of this worker (CLIENT KILL), discarding its pending
  // output; done between event batches, so no event in flight refers to it.
  void post_kill(std::uint64_t conn_id);
  // Worker thread: conn's current command waits for the end of a CLIENT PAUSE; dispatch() left it
  // unconsumed in conn.in, and it runs again, from the start, when the pause is over.
  void postpone(Connection& conn);

  // Any thread: hands a batch of pub/sub envelopes to this worker; never blocks, never drops.
  void post(PubSubBatch* batch);
  // Worker thread: appends a pub/sub push to connection `id`'s output (dropped when it has
  // closed), enforcing the pubsub output limit, and schedules a flush.
  void deliver(std::uint64_t id, std::string_view bytes);
  const BackendTraits& queue_traits() const { return inbox_->traits(); }
  // Worker thread, from inside a script that ran past busy-reply-threshold (lua_api.cpp, hook):
  // serves this worker's other connections as Redis does while a script is busy. SCRIPT KILL and
  // FUNCTION KILL run (and FUNCTION STATS when a function runs); every other command is answered
  // BUSY (err::kBusyFunction when a function runs, else err::kBusyScript). Nothing is closed or
  // accepted here (the event batch that runs the script may still name these connections). running
  // (nullptr: none) is the connection whose command runs.
  void serve_while_busy(const Connection* running, bool function);
  // In-process execution, with no socket and no thread (tests/fuzz/command_fuzz.cpp): the calling
  // thread acts as this worker's thread throughout. open_in_process() creates only the pub/sub
  // inbox (no listener, epoll set or eventfd; wake() then writes to no descriptor, harmlessly).
  // connect_in_process() adds a connection without a socket (fd -1) that the worker owns and frees
  // as an accepted one. run_in_process() runs every complete command in c.in exactly as a
  // readiness event would (parser, dispatch, statistics, output limits), then delivers the pub/sub
  // messages posted meanwhile; the replies stay in c.out for the caller.
  bool open_in_process(std::string* error);
  Connection& connect_in_process();
  void run_in_process(Connection& c, std::int64_t now_ms);
  std::size_t inbox_size() { return inbox_->size_approx(); }
  std::uint64_t inbox_overflows() const { return overflow_total_.load(std::memory_order_relaxed); }

 private:
  void run();
  void accept_all();
  void on_event(Connection* c, std::uint32_t events);
  void process_input(Connection& c, std::int64_t now_ms);
  void execute(Connection& c, std::int64_t now_ms);
  bool flush(Connection& c);  // false when the connection was closed
  void update_interest(Connection& c);
  void close_connection(Connection* c);
  void sweep_expired(std::int64_t now_ms);
  int next_timeout_ms(std::int64_t now_ms) const;
  void drain_and_close_all();
  void resume_accept();
  void drain_inbox();
  // The end of an event-loop iteration: BCAST tracking messages of its writes (tracking.hpp).
  void broadcast_tracking();
  void deliver_batch(void* batch);
  void flush_touched();
  // Queues c for flush_touched() (once per batch).
  void mark_touched(Connection& c);
  // A connection paused at kOutputPauseBytes whose output fell below half of it: unpauses it,
  // runs the commands waiting in its input and marks it touched.
  void resume_if_drained(Connection& c);
  // Applies one class of client-output-buffer-limit to `c`'s pending output: past the hard limit,
  // or above the soft one for its seconds, the output is dropped and the connection closed after
  // it (Redis frees such a client at once). True when it closed. `cls` names the class in the log.
  bool enforce_obuf_limit(Connection& c, const ObufLimit& lim, const char* cls);
  // Connections above a soft client-output-buffer-limit: closes those above it for longer than
  // its seconds, forgets those that fell below (end of each loop iteration, while any is listed).
  void check_soft_limits();
  // maxmemory-clients: refreshes c's share of WorkerStats::client_mem and CLIENT LIST's tot-mem
  // after its buffers changed (flush() calls it, so every batch that touched c does).
  void account_memory(Connection& c);
  // maxmemory-clients: while the memory of all workers' connections is at or above the limit,
  // closes this worker's largest evictable connection if none on another worker is larger, or
  // wakes the worker that holds a larger one. Called at the end of each loop iteration.
  void evict_clients();
  void drain_unblocks(std::int64_t now_ms);
  void expire_blocked(std::int64_t now_ms);
  // Ends c's wait with reply; then runs the commands it sent meanwhile, unless !run_input (the
  // caller runs them).
  void resume(Connection& c, std::string_view reply, std::int64_t now_ms, bool run_input = true);
  void resume_postponed(std::int64_t now_ms);
  // Atomicity's wait hook (set in run()): while a command of this worker waits for the gate and
  // a script of any worker is past busy-reply-threshold, serves the other connections as
  // serve_while_busy() does, so that SCRIPT KILL reaches the script from any connection.
  static void gate_wait_hook(void* self);

  Server& server_;
  unsigned index_;
  int epfd_ = -1, listen_fd_ = -1, wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> conns_{0};  // single writer: this worker
  // --prefetch on and a backend that acts on the keyspace's prefetch hint (set in run()).
  bool prefetch_ = false;
  const Connection* running_ = nullptr;  // the connection whose command execute() runs
  bool shutting_down_ = false;           // in drain_and_close_all: flush() half-closes, not closes
  std::int64_t accept_paused_until_ms_ = 0;  // non-zero: listener removed until then (EMFILE)
  std::int64_t evict_warned_ms_ = 0;         // evict_clients() found nothing to evict (logged then)
  std::unordered_set<Connection*> all_;      // every open connection, for shutdown
  std::unordered_map<std::uint64_t, Connection*> by_id_;  // pub/sub delivery by connection id
  std::vector<std::uint64_t> touched_;    // connections with replies or pub/sub output to flush
  std::vector<std::uint64_t> postponed_;  // CLIENT PAUSE: connections to resume, in order
  std::vector<std::uint64_t> soft_over_;  // connections above a soft output limit (ids)

  // The pub/sub inbox (see the file comment). pending_ sits on its own cache line: every
  // publisher to this worker writes it.
  std::unique_ptr<MessageQueue> inbox_;
  bool inbox_bounded_ = false;
  alignas(64) std::atomic<bool> pending_{false};
  alignas(64) std::atomic<std::uint32_t> in_flight_{0};  // bounded inboxes: producers in push()
  std::atomic<bool> overflowed_{false};                  // overflow_ may be non-empty
  std::mutex overflow_mu_;
  std::vector<void*> overflow_;  // guarded by overflow_mu_
  std::atomic<std::uint64_t> overflow_total_{0};

  // Blocked clients: their timeouts (stale entries are skipped: the pointer must still match the
  // connection's current wait), and the replies other workers posted for them.
  struct BlockTimeout {
    std::int64_t at_ms;
    std::uint64_t conn;
    const BlockedClient* b;
    bool operator>(const BlockTimeout& o) const { return at_ms > o.at_ms; }
  };
  std::priority_queue<BlockTimeout, std::vector<BlockTimeout>, std::greater<>> block_timeouts_;
  struct Unblock {
    std::uint64_t conn;
    const BlockedClient* b;  // nullptr with kill
    std::string reply;
    std::vector<std::string> after;  // frames delivered behind the reply
    bool kill = false;               // post_kill: close the connection instead
  };
  std::mutex unblock_mu_;
  std::vector<Unblock> unblocks_;  // guarded by unblock_mu_
  std::atomic<bool> unblock_pending_{false};

  struct ExpiryEntry {
    std::int64_t at_ms;
    std::string key;
    bool operator>(const ExpiryEntry& o) const { return at_ms > o.at_ms; }
  };
  std::priority_queue<ExpiryEntry, std::vector<ExpiryEntry>, std::greater<>> expiry_;
  // track_expiry() compacts expiry_ when it grows past this: twice what the last compaction kept
  // (at least kExpiryCompactMin), so stale entries are at most half of it.
  static constexpr std::size_t kExpiryCompactMin = 1024;
  std::size_t expiry_compact_at_ = kExpiryCompactMin;
};

}  // namespace kvlab::server
