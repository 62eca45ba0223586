// The process-wide state of kvlab-server: configuration, the shared keyspace, the workers, client
// registry and statistics. Workers (worker.hpp) own connections and event loops; this object owns
// what they share.
//
// Thread safety: configuration fields that CONFIG SET may change are atomics or guarded by
// config_mu_; the keyspace is a concurrent map; statistics are per-worker counters read with
// relaxed loads (INFO needs no snapshot consistency); the client registry has its own mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/atomicity.hpp"
#include "server/core/client_info.hpp"
#include "server/util/clock.hpp"
#include "server/features/cluster.hpp"
#include "server/features/db.hpp"
#include "server/features/eviction.hpp"
#include "server/features/host.hpp"
#include "server/features/monitor.hpp"
#include "server/data/object.hpp"
#include "server/features/pubsub.hpp"
#include "structures/any_keyspace.hpp"

namespace kvlab::server {

using Keyspace = AnyKeyspace<Value>;

struct Config {
  std::string bind = "127.0.0.1";
  int port = 6379;
  unsigned threads = 0;  // 0 = CPUs allowed to the process
  std::string backend;   // empty = kvlab::default_map_backend()
  unsigned maxclients = 10000;
  std::string requirepass;
  std::string placement = "none";
  std::string smt = "auto";
  bool protected_mode = true;
  bool prefetch = true;  // --prefetch: keyspace prefetch hint for pipelined windows (worker.cpp)
  // --yield: a busy worker yields the CPU once before it polls again (worker.cpp, Worker::run).
  // "auto" resolves in main(): on when the workers are at least as many as the allowed CPUs.
  std::string yield = "auto";
  bool yield_on = false;
  std::string queue = "queue/kvlab-mpsc";  // pub/sub inbox backend (--queue)
  std::string atomicity = "key-locks";     // multi-key atomicity scheme (--atomicity)
  // --mode: how the workers share the data. shared: every worker reaches one concurrent keyspace
  // (the only mode built so far; papers/execution-models-plan.md plans sharded and io-threads).
  std::string mode = "shared";
  std::size_t queue_capacity = 65536;      // bounded queue backends only (--queue-capacity)
  // --lua-undeclared-keys: scripts may touch keys outside KEYS, as in Redis (each then escalates
  // over every key); no is the opt-in research option that refuses them.
  bool lua_undeclared_keys = true;
  // --enable-debug-command no|yes|local: whether DEBUG runs (commands/debug.cpp), as Redis's.
  std::string enable_debug_command = "no";
  // Cluster protocol (server/features/cluster.hpp): --cluster-mode no|emulated|yes, the node id (random
  // when empty), the address announced in CLUSTER SLOTS/NODES (the bind address when empty), and
  // a configuration file loaded at startup (yes mode).
  std::string cluster_mode = "no";
  std::string cluster_node_id;
  std::string cluster_announce_ip;
  std::string cluster_config_file;
  // maxmemory (server/features/eviction.hpp): --maxmemory (bytes, 0 = no limit), --maxmemory-policy,
  // --maxmemory-samples, and the queue backend of allkeys-s3fifo (--eviction-queue).
  std::uint64_t maxmemory = 0;
  std::string maxmemory_policy = "noeviction";
  int maxmemory_samples = 5;
  std::string eviction_queue = "queue/kvlab";
  std::size_t expected_keys = 1024;  // --expected-keys: the keyspace's initial capacity hint
};

// One class of Redis's client-output-buffer-limit: disconnect at `hard` unsent bytes, or when
// above `soft` for `soft_seconds`. Zero disables a limit.
struct ObufLimit {
  std::uint64_t hard = 0, soft = 0, soft_seconds = 0;
};
// Redis's default for pubsub clients: 32mb 8mb 60.
inline constexpr ObufLimit kDefaultPubSubObufLimit{32ull << 20, 8ull << 20, 60};

// Sizes and limits of the connection layer (Redis's defaults where Redis has one).
inline constexpr std::size_t kQueryBufferLimit =
    1024ull * 1024 * 1024;  // client-query-buffer-limit
inline constexpr std::size_t kReadChunk = 16 * 1024;
// Above this many unsent reply bytes a connection stops reading and parsing (backpressure): a
// client that pipelines without reading stalls on its own socket instead of growing our memory.
inline constexpr std::size_t kOutputPauseBytes = 4 * 1024 * 1024;
// A single command whose reply would push the pending output beyond this closes the connection.
inline constexpr std::size_t kOutputHardLimit = 1536ull * 1024 * 1024;
// A client that has not authenticated while a password is required is closed when its unsent
// replies pass this (CVE-2025-21605: without it a client that never authenticates and never reads
// holds kOutputPauseBytes, so maxclients of them hold gigabytes). Redis's rule is "more than
// 1024 bytes beyond its 16 KiB per-client reply buffer"; kvlab has one buffer, so the same point.
inline constexpr std::size_t kUnauthOutputLimit = 16 * 1024 + 1024;
// maxmemory-clients below this acts as this, as in Redis: a limit so small that no client could
// run a command would lock every client out.
inline constexpr std::size_t kMinClientEvictionLimit = 128 * 1024;

struct CommandSpec;

// Per-command counters of one worker (INFO commandstats), indexed by CommandSpec::stat_id.
// Written only by the owning worker (relaxed single-writer counters); INFO sums them.
struct CommandStat {
  std::atomic<std::uint64_t> calls{0}, nanos{0}, rejected{0}, failed{0};
  std::atomic<std::uint64_t> hist[kLatencyBuckets] = {};  // LATENCY HISTOGRAM (monitor.hpp)
};

// Error replies of one worker by error code (INFO errorstats), as Redis: the first word of the
// error. The owning worker fills slots in order: it writes a code, then publishes it by a release
// store of `used`; readers load `used` with acquire before reading codes. Past kSlots codes, errors
// are counted in total_error_replies only (Redis caps its table at 128 codes).
struct ErrorStats {
  static constexpr std::size_t kSlots = 32;
  struct Slot {
    char code[32] = {};
    std::atomic<std::uint64_t> count{0};
  };
  Slot slots[kSlots];
  std::atomic<std::size_t> used{0};
  void add(std::string_view code);  // owning worker only
};

// One worker's counters, on its own cache line so that workers never share a line they write.
struct alignas(64) WorkerStats {
  // Written only by the owning worker (relaxed: a counter, read approximately by INFO).
  std::atomic<std::uint64_t> commands{0}, hits{0}, misses{0}, expired{0}, errors{0};
  std::atomic<std::uint64_t> net_in{0}, net_out{0}, connections{0};
  std::atomic<std::uint64_t> expiry_index{0};  // entries in the worker's expiry heap
  std::atomic<std::uint64_t> migrate_sockets{0};  // MIGRATE connections cached (a gauge)
  // Pub/sub, written only by the owning worker (relaxed counters/gauges for INFO).
  std::atomic<std::uint64_t> pubsub_clients{0};     // connections with >= 1 subscription
  std::atomic<std::uint64_t> pubsub_delivered{0};   // messages appended to subscriber output
  std::atomic<std::uint64_t> pubsub_dropped{0};     // messages whose connection had closed
  std::atomic<std::uint64_t> obuf_limit_closes{0};  // clients closed by an output limit
  // maxmemory-clients (Worker::evict_clients): the memory of this worker's connections (the sum
  // of their Connection::mem_counted), the memory of its largest evictable connection as of its
  // last look, and the clients it evicted. Single writer (the owning worker); relaxed: the other
  // workers read them as estimates to decide who evicts (worker.cpp says why staleness is safe).
  std::atomic<std::uint64_t> client_mem{0}, largest_evictable{0}, evicted_clients{0};
  // --yield: extra polls after a yield, and how many of them found events.
  std::atomic<std::uint64_t> yields{0}, yield_hits{0};
  std::atomic<int> cpu{-1};            // CPU the worker last reported running on
  std::unique_ptr<CommandStat[]> cmd;  // CommandTable::stat_count() entries
  ErrorStats errorstats;
};

// Sums over the workers since the last CONFIG RESETSTAT (INFO). RESETSTAT does not write the
// workers' counters (each has one writer); it records the sums as a base that later reads subtract.
struct StatTotals {
  std::uint64_t hits = 0, misses = 0, expired = 0, errors = 0, net_in = 0, net_out = 0,
                connections = 0, rejected_connections = 0, obuf_closes = 0, evicted_clients = 0;
  struct Cmd {
    std::uint64_t calls = 0, nanos = 0, rejected = 0, failed = 0;
    std::uint64_t hist[kLatencyBuckets] = {};
  };
  std::vector<Cmd> cmd;  // by CommandSpec::stat_id
  std::map<std::string, std::uint64_t> errors_by_code;
};

class Worker;

class Server final : public FeatureHost {
 public:
  explicit Server(Config config, std::unique_ptr<Keyspace> ks, std::string backend_name);
  ~Server();

  // Starts the workers; returns false (and logs) when a listener cannot be opened.
  bool start(const std::vector<std::vector<unsigned>>& worker_cpus,
             const std::vector<std::string>& worker_reasons);
  // In-process use (Worker::run_in_process): what start() builds for `n` workers — statistics,
  // the atomicity scheme, the workers and their inboxes — with no listener and no thread. False
  // (with *error) when an inbox cannot be created.
  bool start_in_process(unsigned n, std::string* error);
  // Blocks until SIGINT/SIGTERM (or SHUTDOWN), then stops the workers gracefully.
  void run_until_signal();
  // SHUTDOWN: makes run_until_signal() return (raises SIGTERM at the process).
  void request_shutdown();

  Keyspace& keyspace() { return *ks_; }
  Db& db() { return db_; }
  BlockingRegistry& blocking() { return blocking_; }
  TrackingRegistry& tracking() override { return tracking_; }
  Atomicity& atomicity() { return *atomicity_; }
  Cluster& cluster() { return *cluster_; }
  Eviction& eviction() { return *eviction_; }
  const Config& config() const { return config_; }
  std::string_view backend_name() const { return backend_name_; }
  unsigned num_workers() const override { return static_cast<unsigned>(workers_.size()); }
  Worker& worker(unsigned i) { return *workers_[i]; }
  // FeatureHost (features/host.hpp): the workers' delivery, for pub/sub, tracking and
  // notifications.
  void deliver(unsigned self, std::uint64_t conn, std::string_view bytes) override;
  void post(unsigned worker, PubSubBatch* batch) override;
  void post_unblock(unsigned worker, std::uint64_t conn, const BlockedClient* b, std::string reply,
                    std::vector<std::string> after) override;
  WorkerStats& stats(unsigned i) { return stats_[i]; }
  ClientRegistry& clients() override { return clients_; }
  int port() const { return config_.port; }

  std::uint64_t next_client_id() { return next_client_id_.fetch_add(1, std::memory_order_relaxed); }
  // Admission control for maxclients: true when a slot was taken.
  bool try_admit();
  void release_client() { connected_.fetch_sub(1, std::memory_order_relaxed); }
  int connected_clients() const { return connected_.load(std::memory_order_relaxed); }
  std::uint64_t rejected_connections() const { return rejected_.load(std::memory_order_relaxed); }

  // Mutable configuration (CONFIG SET).
  unsigned maxclients() const { return maxclients_.load(std::memory_order_relaxed); }
  void set_maxclients(unsigned n) { maxclients_.store(n, std::memory_order_relaxed); }
  bool auth_required() const { return auth_required_.load(std::memory_order_acquire); }
  bool check_password(std::string_view pass);
  std::string requirepass();
  void set_requirepass(std::string pass);

  std::int64_t start_ms() const { return start_ms_; }
  const std::string& placement_summary() const { return placement_summary_; }
  void set_placement_summary(std::string s) { placement_summary_ = std::move(s); }
  // Runs once in start(), after the server's parts exist and before any worker serves: the
  // start-up parameters that are applied as CONFIG SET applies them (commands/config.hpp).
  void set_configure(std::function<void(Server&)> f) { configure_ = std::move(f); }
  const std::vector<std::string>& worker_placement() const { return worker_placement_; }

  // instantaneous_ops_per_sec: workers call sample() on their loop iterations; any may win.
  void sample_ops(std::int64_t now_ms);
  double instantaneous_ops_per_sec(std::int64_t now_ms);
  std::uint64_t total_commands();
  std::uint64_t stat_rejected_or_zero() const { return rejected_.load(std::memory_order_relaxed); }

  // INFO's counters since the last reset_stats() (CONFIG RESETSTAT).
  StatTotals stat_totals();
  void reset_stats();

  PubSubRegistry& pubsub() override { return pubsub_; }
  // The pubsub class of client-output-buffer-limit (CONFIG SET may change it at any time).
  ObufLimit pubsub_obuf_limit() const {
    // relaxed: three independent settings; a delivery that mixes an old and a new one is harmless.
    return {pubsub_hard_.load(std::memory_order_relaxed),
            pubsub_soft_.load(std::memory_order_relaxed),
            pubsub_soft_secs_.load(std::memory_order_relaxed)};
  }
  void set_pubsub_obuf_limit(ObufLimit l) {
    pubsub_hard_.store(l.hard, std::memory_order_relaxed);
    pubsub_soft_.store(l.soft, std::memory_order_relaxed);
    pubsub_soft_secs_.store(l.soft_seconds, std::memory_order_relaxed);
  }
  // The normal class (clients that are not subscribed): Redis's default `0 0 0`, no limit beyond
  // the connection layer's own (kOutputHardLimit, and the read pause at kOutputPauseBytes).
  ObufLimit normal_obuf_limit() const {
    // relaxed: as pubsub_obuf_limit().
    return {normal_hard_.load(std::memory_order_relaxed),
            normal_soft_.load(std::memory_order_relaxed),
            normal_soft_secs_.load(std::memory_order_relaxed)};
  }
  void set_normal_obuf_limit(ObufLimit l) {
    normal_hard_.store(l.hard, std::memory_order_relaxed);
    normal_soft_.store(l.soft, std::memory_order_relaxed);
    normal_soft_secs_.store(l.soft_seconds, std::memory_order_relaxed);
  }
  // client-query-buffer-limit: a client whose unparsed input would pass it is closed (Redis
  // closes it too). Read once per read; relaxed: a read that sees the old limit is harmless.
  std::size_t query_buffer_limit() const {
    return query_buffer_limit_.load(std::memory_order_relaxed);
  }
  void set_query_buffer_limit(std::size_t n) {
    query_buffer_limit_.store(n, std::memory_order_relaxed);
  }

  // proto-max-bulk-len: the longest argument the parser accepts and the longest string a command
  // may build (SETRANGE, APPEND, SETBIT, BITFIELD, LCS's table), as in Redis. relaxed: a command
  // that reads the old value right after CONFIG SET behaves as if it ran just before it.
  std::uint64_t proto_max_bulk_len() const {
    return proto_max_bulk_len_.load(std::memory_order_relaxed);
  }
  void set_proto_max_bulk_len(std::uint64_t n) {
    proto_max_bulk_len_.store(n, std::memory_order_relaxed);
  }
  // min-replicas-to-write and min-replicas-max-lag: with both non-zero, Redis refuses writes
  // (NOREPLICAS) while fewer replicas than the first are connected and acknowledged within the
  // lag. kvlab has no replicas, so writes are refused whenever both are set. CONFIG SET stores
  // the pair (under its own lock) and the verdict; relaxed: a write that reads the old verdict
  // right after CONFIG SET behaves as if it ran just before it.
  bool enough_good_replicas() const { return !replicas_required_.load(std::memory_order_relaxed); }
  void set_min_replicas(std::int64_t to_write, std::int64_t max_lag) {
    replicas_required_.store(to_write > 0 && max_lag > 0, std::memory_order_relaxed);
  }
  // maxmemory-clients as Redis stores it: bytes, or minus a percentage of maxmemory ("10%" is
  // -10); 0 = no client eviction. relaxed: a worker that reads the old value evicts by it once.
  std::int64_t maxmemory_clients() const {
    return maxmemory_clients_.load(std::memory_order_relaxed);
  }
  void set_maxmemory_clients(std::int64_t v) {
    maxmemory_clients_.store(v, std::memory_order_relaxed);
  }
  // The limit in bytes that client eviction enforces now (0: none): a percentage of maxmemory
  // only while maxmemory is set, never below kMinClientEvictionLimit.
  std::size_t client_eviction_limit();
  // The memory of every connection (each worker's WorkerStats::client_mem), an estimate: a sum
  // of relaxed loads that other workers change meanwhile.
  std::size_t client_memory_total();

  // CLIENT PAUSE (Redis 7.0): until a wall-clock end, top-level commands of the paused class wait
  // (kWrite: writes and the commands that may replicate; kAll: every command), and keys neither
  // expire nor get evicted. The state is one word, end_ms << 2 | class, so that a reader sees a
  // class and an end that were set together. Setting takes the later end and the stricter class,
  // as Redis does; an end in the past (a timeout that wrapped, as in Redis) pauses nothing.
  enum PauseClass : std::uint64_t { kPauseNone = 0, kPauseWrite = 1, kPauseAll = 2 };
  // The class in force at now_ms. acquire: pairs with the release in pause()/unpause(); a command
  // that sees the pause set also sees everything before it (the caller's view of the keyspace).
  PauseClass paused(std::int64_t now_ms) const {
    const std::uint64_t s = pause_.load(std::memory_order_acquire);
    if (s == 0 || static_cast<std::int64_t>(s >> 2) <= now_ms) return kPauseNone;
    return static_cast<PauseClass>(s & 3);
  }
  // The end of the pause in force (0: none); workers with postponed clients sleep until then.
  std::int64_t pause_end_ms() const {
    return static_cast<std::int64_t>(pause_.load(std::memory_order_acquire) >> 2);
  }
  void pause(std::int64_t end_ms, PauseClass c, std::int64_t now_ms);
  // CLIENT UNPAUSE: ends any pause and wakes every worker to resume its postponed clients.
  void unpause();
  // Clients whose command waits for the end of a pause (INFO's blocked_clients counts them, as
  // Redis counts its BLOCKED_POSTPONE clients). relaxed: a gauge.
  void add_postponed(int d) { postponed_.fetch_add(d, std::memory_order_relaxed); }
  std::int64_t postponed_clients() const { return postponed_.load(std::memory_order_relaxed); }

 private:
  void prepare(unsigned n);  // statistics and atomicity for n workers (start*)
  Config config_;
  std::unique_ptr<Keyspace> ks_;
  std::string backend_name_;
  WatchRegistry watches_;
  BlockingRegistry blocking_;
  TrackingRegistry tracking_;  // client-side caching (tracking.hpp)
  Db db_{*ks_, watches_, blocking_, tracking_};
  std::unique_ptr<Atomicity> atomicity_;  // created in start(), once the worker count is known
  std::unique_ptr<Cluster> cluster_;      // created in the constructor from the config
  std::unique_ptr<Eviction> eviction_;    // created in start(), once the worker count is known
  std::function<void(Server&)> configure_;  // set_configure
  PubSubRegistry pubsub_;                 // declared before workers_: outlives them
  std::atomic<std::uint64_t> pubsub_hard_{kDefaultPubSubObufLimit.hard};
  std::atomic<std::uint64_t> pubsub_soft_{kDefaultPubSubObufLimit.soft};
  std::atomic<std::uint64_t> pubsub_soft_secs_{kDefaultPubSubObufLimit.soft_seconds};
  std::atomic<std::uint64_t> normal_hard_{0}, normal_soft_{0}, normal_soft_secs_{0};
  std::atomic<std::size_t> query_buffer_limit_{kQueryBufferLimit};
  std::atomic<std::int64_t> maxmemory_clients_{0};
  std::atomic<std::uint64_t> proto_max_bulk_len_{512ull * 1024 * 1024};
  std::atomic<bool> replicas_required_{false};  // enough_good_replicas()
  // CLIENT PAUSE state (paused()); its own line, since every command reads it and it is written
  // only by CLIENT PAUSE/UNPAUSE, under pause_mu_.
  alignas(64) std::atomic<std::uint64_t> pause_{0};
  std::mutex pause_mu_;
  std::atomic<std::int64_t> postponed_{0};
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<WorkerStats[]> stats_;
  ClientRegistry clients_;
  std::atomic<std::uint64_t> next_client_id_{1};
  std::atomic<int> connected_{0};
  std::atomic<std::uint64_t> rejected_{0};
  std::atomic<unsigned> maxclients_;
  std::atomic<bool> auth_required_{false};
  std::mutex config_mu_;
  std::string requirepass_;  // guarded by config_mu_
  std::int64_t start_ms_ = 0;
  std::string placement_summary_;
  std::vector<std::string> worker_placement_;

  std::mutex stat_base_mu_;
  StatTotals stat_base_;  // guarded by stat_base_mu_

  std::mutex sample_mu_;
  static constexpr int kSamples = 16;
  std::int64_t sample_ms_[kSamples] = {};
  std::uint64_t sample_ops_[kSamples] = {};
  int sample_next_ = 0;
  std::atomic<std::int64_t> last_sample_ms_{0};
};

}  // namespace kvlab::server
