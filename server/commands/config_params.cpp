// The parameter table: every parameter kvlab-server knows, declared once. A row gives Redis's
// name and alias, the type (which fixes how a value is validated and how CONFIG GET formats it),
// Redis's default, whether Redis refuses to change it at run time (immutable or protected), and
// what it does in kvlab:
//   a setter   - kvlab applies it, at run time and at start-up (maxclients, requirepass,
//                maxmemory and its policy, client-output-buffer-limit, proto-max-bulk-len, the
//                slow log, the encoding thresholds kvlab's replies model, ...);
//   a starter  - it shapes the server before it exists (port, bind, threads, backend, ...);
//   a getter   - CONFIG GET reads the value from the server rather than from the stored text;
//   kFixed     - kvlab has this setting but cannot change it (databases 1, save "", appendonly
//                no, ...): GET reports kvlab's value, SET accepts only that value, and at
//                start-up another value is named in a warning;
//   none       - accepted, validated and remembered exactly as Redis does, with no effect. Most of
//                these tune encodings, persistence, replication, cluster or TLS, which kvlab
//                does not have (list-max-listpack-size, activedefrag, ...).
// kvlab's own parameters (kvlab-threads, ...) have a flag name (--threads) and a help line.
// Aliases (the old ziplist names, slave-*) are one parameter with two names, as in Redis.
//
// Thread safety: the stored values live in one vector under mutex(); acting parameters are read
// and written through Server, which keeps them in atomics or under its own lock.
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "server/core/command.hpp"
#include "server/commands/config_table.hpp"
#include "server/data/encoding_limits.hpp"
#include "server/features/eviction.hpp"
#include "server/util/memory.hpp"
#include "server/features/monitor.hpp"
#include "server/features/notify.hpp"
#include "server/features/scripting.hpp"
#include "server/net/server.hpp"
#include "server/util/strings_util.hpp"
#include "server/features/tracking.hpp"

namespace kvlab::server::config {
namespace {

// Rows with hooks: one line per parameter, the hooks beside the Redis description.
Param hooks(Param p, Getter get, Setter set = nullptr, Starter start = nullptr) {
  p.get = get;
  p.set = set;
  p.start = start;
  return p;
}
// kvlab's own parameters: named kvlab-NAME in CONFIG GET, --NAME on the command line and NAME in a
// config file; fixed at start-up.
Param own(Param p, std::string_view cli, Getter get, Starter start, std::string_view help) {
  p.cli = cli;
  p.get = get;
  p.start = start;
  p.help = help;
  return p;
}

// ---- what each parameter reads and does ----

std::string stored(std::string_view name);  // one stored value; REQUIRES: mutex() held
ObufClass g_obuf_replica{256ull << 20, 64ull << 20, 60};  // under g_mu (no replicas: no effect)

std::uint64_t to_u64(const std::string& v) {
  return std::stoull(v);
}
std::int64_t to_i64(const std::string& v) {
  return std::stoll(v);
}
std::string yes_no(bool b) {
  return b ? "yes" : "no";
}

std::string get_protected_mode(Server& s) {
  return yes_no(s.config().protected_mode);
}
bool start_protected_mode(Config& c, const std::string& v, std::string*) {
  c.protected_mode = v == "yes";
  return true;
}
std::string get_requirepass(Server& s) {
  return s.requirepass();
}
void set_requirepass(Server& s, const std::string& v) {
  s.set_requirepass(v);
}
bool start_requirepass(Config& c, const std::string& v, std::string*) {
  c.requirepass = v;
  return true;
}
std::string get_maxmemory_policy(Server& s) {
  return std::string(evict_policy_name(s.eviction().policy()));
}
void set_maxmemory_policy(Server& s, const std::string& v) {
  if (auto p = parse_evict_policy(v)) s.eviction().set_policy(*p);
}
bool start_maxmemory_policy(Config& c, const std::string& v, std::string*) {
  c.maxmemory_policy = v;
  return true;
}
std::string get_databases(Server&) {
  return "1";
}
std::string get_port(Server& s) {
  return std::to_string(s.config().port);
}
bool start_port(Config& c, const std::string& v, std::string* why) {
  c.port = static_cast<int>(to_i64(v));
  if (c.port == 0) *why = "kvlab-server listens on TCP only: port 0 (no TCP) is not supported";
  return c.port != 0;
}
std::string get_io_threads(Server& s) {
  return std::to_string(s.num_workers());
}
void set_lfu_log_factor(Server& s, const std::string& v) {
  s.eviction().set_lfu_log_factor(static_cast<int>(to_i64(v)));
}
void set_lfu_decay_time(Server& s, const std::string& v) {
  s.eviction().set_lfu_decay_time(static_cast<int>(to_i64(v)));
}
std::string get_maxmemory_samples(Server& s) {
  return std::to_string(s.eviction().samples());
}
void set_maxmemory_samples(Server& s, const std::string& v) {
  s.eviction().set_samples(static_cast<int>(to_i64(v)));
}
bool start_maxmemory_samples(Config& c, const std::string& v, std::string* why) {
  c.maxmemory_samples = static_cast<int>(std::min<std::int64_t>(to_i64(v), 64));
  if (to_i64(v) > 64) *why = "kvlab samples at most 64 keys per eviction";
  return to_i64(v) <= 64;
}
std::string get_maxclients(Server& s) {
  return std::to_string(s.maxclients());
}
void set_maxclients(Server& s, const std::string& v) {
  s.set_maxclients(static_cast<unsigned>(to_u64(v)));
}
bool start_maxclients(Config& c, const std::string& v, std::string*) {
  c.maxclients = static_cast<unsigned>(to_u64(v));
  return true;
}
std::string get_proto_max_bulk_len(Server& s) {
  return std::to_string(s.proto_max_bulk_len());
}
void set_proto_max_bulk_len(Server& s, const std::string& v) {
  s.set_proto_max_bulk_len(to_u64(v));
}
std::string get_maxmemory(Server& s) {
  return std::to_string(s.eviction().maxmemory());
}
void set_maxmemory(Server& s, const std::string& v) {
  // Counting starts now: the connections' buffers and the script caches were allocated uncounted,
  // and their frees will be subtracted, so their estimates join the baseline (as the keyspace's
  // does). Without them an idle server counts next to nothing, and a limit below its real size
  // would refuse no write.
  if (s.eviction().set_maxmemory(to_u64(v)))
    memory::add_baseline(
        static_cast<std::int64_t>(s.client_memory_total() + scripting::cache_bytes()));
}
// Writes wait for replicas kvlab does not have (Server::enough_good_replicas); both parameters
// take part, so either one's setter reads both stored values (stored before the setter runs).
void set_min_replicas(Server& s, const std::string&) {
  s.set_min_replicas(std::stoll(stored("min-replicas-to-write")),
                     std::stoll(stored("min-replicas-max-lag")));
}
bool start_maxmemory(Config& c, const std::string& v, std::string*) {
  c.maxmemory = to_u64(v);
  return true;
}
std::string get_query_buffer_limit(Server& s) {
  return std::to_string(s.query_buffer_limit());
}
void set_query_buffer_limit(Server& s, const std::string& v) {
  s.set_query_buffer_limit(static_cast<std::size_t>(to_u64(v)));
}
void set_maxmemory_clients(Server& s, const std::string& v) {
  // Redis's encoding: a percentage of maxmemory is stored negated.
  s.set_maxmemory_clients(v.back() == '%' ? -std::stoll(v.substr(0, v.size() - 1)) : to_i64(v));
}
std::string get_dir(Server&) {
  char buf[4096];
  return getcwd(buf, sizeof buf) != nullptr ? buf : "";
}
std::string obuf_text(const Server& s) {
  // REQUIRES: g_mu held.
  auto one = [](std::string_view cls, std::uint64_t h, std::uint64_t so, std::uint64_t se) {
    return std::string(cls) + " " + std::to_string(h) + " " + std::to_string(so) + " " +
           std::to_string(se);
  };
  const ObufLimit p = s.pubsub_obuf_limit(), nm = s.normal_obuf_limit();
  return one("normal", nm.hard, nm.soft, nm.soft_seconds) + " " +
         one("slave", g_obuf_replica.hard, g_obuf_replica.soft, g_obuf_replica.secs) + " " +
         one("pubsub", p.hard, p.soft, p.soft_seconds);
}
std::string get_obuf(Server& s) {
  return obuf_text(s);
}
void set_obuf(Server& s, const std::string& v) {
  std::vector<std::pair<int, ObufClass>> todo;
  std::string why;
  parse_obuf(v, &todo, &why);
  for (const auto& [cls, c] : todo) {
    if (cls == 0) s.set_normal_obuf_limit({c.hard, c.soft, c.secs});
    if (cls == 1) g_obuf_replica = c;
    if (cls == 2) s.set_pubsub_obuf_limit({c.hard, c.soft, c.secs});
  }
}
std::string get_bind(Server& s) {
  return s.config().bind;
}
bool start_bind(Config& c, const std::string& v, std::string* why) {
  // Redis listens on every address given; kvlab-server on one (its first, without the optional
  // '-' prefix that makes an address optional in Redis).
  const auto w = split_blanks(v);
  if (w.size() != 1 || w[0].empty()) {
    *why = "kvlab-server listens on one address; give one (127.0.0.1, 0.0.0.0, ...)";
    return false;
  }
  c.bind = std::string(w[0].front() == '-' ? w[0].substr(1) : w[0]);
  return true;
}
std::string get_enable_debug(Server& s) {
  return s.config().enable_debug_command;
}
bool start_enable_debug(Config& c, const std::string& v, std::string*) {
  c.enable_debug_command = v;
  return true;
}
bool start_cluster_announce_ip(Config& c, const std::string& v, std::string*) {
  c.cluster_announce_ip = v;
  return true;
}
// The one encoding knob kvlab has: HyperLogLog's sparse limit (hyperloglog.cpp).
void set_hll_sparse(Server&, const std::string& v) {
  set_hll_sparse_max_bytes(to_u64(v));
}
// The thresholds of Redis's small encodings, which kvlab's replies model (keys.cpp); one
// instance per parameter, as a setter has no name argument.
template <const char* Name>
void set_encoding_named(Server&, const std::string& v) {
  set_encoding_limit(Name, to_u64(v));
}
constexpr char kSetIntset[] = "set-max-intset-entries";
constexpr char kHashEntries[] = "hash-max-listpack-entries";
constexpr char kHashValue[] = "hash-max-listpack-value";
constexpr char kZsetEntries[] = "zset-max-listpack-entries";
constexpr char kZsetValue[] = "zset-max-listpack-value";
// Where XADD closes a stream node (streams.cpp).
void set_stream_node_entries(Server&, const std::string& v) {
  set_stream_node_limits(to_u64(v), stream_node_max_bytes());
}
void set_stream_node_bytes(Server&, const std::string& v) {
  set_stream_node_limits(stream_node_max_entries(), to_u64(v));
}
// Scripts' BUSY threshold (scripting.cpp).
void set_busy_reply_threshold(Server&, const std::string& v) {
  scripting::set_busy_threshold_ms(to_i64(v));
}
// The tracking table's bound (tracking.hpp); its messages leave after the reply (tracking_flush).
void set_tracking_table_max_keys(Server& s, const std::string& v) {
  set_tracking_max_keys(to_i64(v));
  s.tracking().enforce_bound(s);
}
// Keyspace notifications (notify.hpp) from the stored form, which keeps n after A; CONFIG GET
// shows Redis's form, which leaves it out ("AKEnm" reads back "AKEm" but notifies "new").
void set_notify(Server&, const std::string& v) {
  set_notify_flags(v);
}
std::string get_notify(Server&) {
  std::string v = stored("notify-keyspace-events");
  if (v.size() >= 2 && v[0] == 'A' && v[1] == 'n') v.erase(1, 1);
  return v;
}
// The slow log and the latency monitor (monitor.hpp).
void set_slowlog_slower(Server&, const std::string& v) {
  set_slowlog_slower_than(to_i64(v));
}
void set_slowlog_len(Server&, const std::string& v) {
  set_slowlog_max_len(to_i64(v));
}
void set_latency_threshold(Server&, const std::string& v) {
  set_latency_threshold_ms(to_i64(v));
}
// Redis keeps what was set but runs (and shows) 1..500.
std::string get_hz(Server&) {
  return std::to_string(std::clamp<std::int64_t>(to_i64(stored("hz")), 1, 500));
}
std::string get_repl_backlog_size(Server&) {
  return std::to_string(std::max<std::uint64_t>(to_u64(stored("repl-backlog-size")), 16384));
}

// kvlab's own.
bool valid_atomicity(std::string_view in, std::string* out, std::string* why) {
  if (Atomicity::find(in) == nullptr) {
    *why = "unknown atomicity scheme '" + std::string(in) + "' (--list-atomicity shows them)";
    return false;
  }
  *out = std::string(in);
  return true;
}
bool valid_node_id(std::string_view in, std::string* out, std::string* why) {
  if (!in.empty() &&
      (in.size() != 40 || in.find_first_not_of("0123456789abcdef") != std::string_view::npos)) {
    *why = "a node id is 40 lowercase hex characters";
    return false;
  }
  *out = std::string(in);
  return true;
}
std::string get_threads(Server& s) {
  return std::to_string(s.num_workers());
}
bool start_threads(Config& c, const std::string& v, std::string*) {
  c.threads = static_cast<unsigned>(to_u64(v));
  return true;
}
std::string get_backend(Server& s) {
  return std::string(s.backend_name());
}
bool start_backend(Config& c, const std::string& v, std::string*) {
  c.backend = v;
  return true;
}
std::string get_queue(Server& s) {
  return s.config().queue;
}
bool start_queue(Config& c, const std::string& v, std::string*) {
  c.queue = v;
  return true;
}
std::string get_queue_capacity(Server& s) {
  return std::to_string(s.config().queue_capacity);
}
bool start_queue_capacity(Config& c, const std::string& v, std::string*) {
  c.queue_capacity = static_cast<std::size_t>(to_u64(v));
  return true;
}
bool valid_mode(std::string_view in, std::string* out, std::string* why) {
  if (in == "shared") {
    *out = std::string(in);
    return true;
  }
  if (in == "sharded" || in == "io-threads")
    *why = "mode '" + std::string(in) + "' is planned but not built yet; this server runs shared";
  else
    *why = "unknown mode '" + std::string(in) + "' (shared; sharded and io-threads are planned)";
  return false;
}
std::string get_mode(Server& s) {
  return s.config().mode;
}
bool start_mode(Config& c, const std::string& v, std::string*) {
  c.mode = v;
  return true;
}
std::string get_atomicity(Server& s) {
  return std::string(s.atomicity().name());
}
bool start_atomicity(Config& c, const std::string& v, std::string*) {
  c.atomicity = v;
  return true;
}
std::string get_placement(Server& s) {
  return s.config().placement;
}
bool start_placement(Config& c, const std::string& v, std::string*) {
  c.placement = v;
  return true;
}
std::string get_smt(Server& s) {
  return s.config().smt;
}
bool start_smt(Config& c, const std::string& v, std::string*) {
  c.smt = v;
  return true;
}
std::string get_yield(Server& s) {
  return s.config().yield;
}
bool start_yield(Config& c, const std::string& v, std::string*) {
  c.yield = v;
  return true;
}
std::string get_prefetch(Server& s) {
  return yes_no(s.config().prefetch);
}
bool start_prefetch(Config& c, const std::string& v, std::string*) {
  c.prefetch = v == "yes";
  return true;
}
std::string get_lua_undeclared(Server& s) {
  return yes_no(s.config().lua_undeclared_keys);
}
bool start_lua_undeclared(Config& c, const std::string& v, std::string*) {
  c.lua_undeclared_keys = v == "yes";
  return true;
}
std::string get_eviction_queue(Server& s) {
  return s.config().eviction_queue;
}
bool start_eviction_queue(Config& c, const std::string& v, std::string*) {
  c.eviction_queue = v;
  return true;
}
std::string get_cluster_mode(Server& s) {
  return s.config().cluster_mode;
}
bool start_cluster_mode(Config& c, const std::string& v, std::string*) {
  c.cluster_mode = v;
  return true;
}
std::string get_cluster_node_id(Server& s) {
  return s.cluster().my_id();
}
bool start_cluster_node_id(Config& c, const std::string& v, std::string*) {
  c.cluster_node_id = v;
  return true;
}
std::string get_cluster_config(Server& s) {
  return s.config().cluster_config_file;
}
bool start_cluster_config(Config& c, const std::string& v, std::string*) {
  c.cluster_config_file = v;
  return true;
}
std::string get_expected_keys(Server& s) {
  return std::to_string(s.config().expected_keys);
}
bool start_expected_keys(Config& c, const std::string& v, std::string*) {
  c.expected_keys = static_cast<std::size_t>(to_u64(v));
  return true;
}

// ---- the table ----

using T = Type;
constexpr std::uint8_t I = kImmutable;
const Param kParams[] = {
    // Booleans.
    {"rdbchecksum", "", T::kBool, I, "yes"},
    {"daemonize", "", T::kBool, I, "no"},
    {"io-threads-do-reads", "", T::kBool, I, "no"},
    {"always-show-logo", "", T::kBool, I, "no"},
    hooks({"protected-mode", "", T::kBool, kFixed, "yes"}, get_protected_mode, nullptr,
          start_protected_mode),
    {"rdbcompression", "", T::kBool, 0, "yes"},
    {"rdb-del-sync-files", "", T::kBool, 0, "no"},
    {"activerehashing", "", T::kBool, 0, "yes"},
    {"stop-writes-on-bgsave-error", "", T::kBool, 0, "yes"},
    {"set-proc-title", "", T::kBool, I, "yes"},
    {"dynamic-hz", "", T::kBool, 0, "yes"},
    {"lazyfree-lazy-eviction", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-expire", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-server-del", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-user-del", "", T::kBool, 0, "no"},
    {"lazyfree-lazy-user-flush", "", T::kBool, 0, "no"},
    {"repl-disable-tcp-nodelay", "", T::kBool, 0, "no"},
    {"repl-diskless-sync", "", T::kBool, 0, "yes"},
    {"aof-rewrite-incremental-fsync", "", T::kBool, 0, "yes"},
    {"no-appendfsync-on-rewrite", "", T::kBool, 0, "no"},
    {"cluster-require-full-coverage", "", T::kBool, 0, "yes"},
    {"rdb-save-incremental-fsync", "", T::kBool, 0, "yes"},
    {"aof-load-truncated", "", T::kBool, 0, "yes"},
    {"aof-use-rdb-preamble", "", T::kBool, 0, "yes"},
    {"aof-timestamp-enabled", "", T::kBool, 0, "no"},
    {"cluster-replica-no-failover", "cluster-slave-no-failover", T::kBool, 0, "no"},
    {"replica-lazy-flush", "slave-lazy-flush", T::kBool, 0, "no"},
    {"replica-serve-stale-data", "slave-serve-stale-data", T::kBool, 0, "yes"},
    {"replica-read-only", "slave-read-only", T::kBool, 0, "yes"},
    {"replica-ignore-maxmemory", "slave-ignore-maxmemory", T::kBool, 0, "yes"},
    {"jemalloc-bg-thread", "", T::kBool, 0, "yes"},
    {"activedefrag", "", T::kBool, 0, "no"},  // "yes" is refused, as by a Redis without jemalloc
    {"syslog-enabled", "", T::kBool, I, "no"},
    {"cluster-enabled", "", T::kBool, I, "no"},
    {"appendonly", "", T::kBool, kFixed, "no"},
    {"cluster-allow-reads-when-down", "", T::kBool, 0, "no"},
    {"cluster-allow-pubsubshard-when-down", "", T::kBool, 0, "yes"},
    {"crash-log-enabled", "", T::kBool, 0, "yes"},
    {"crash-memcheck-enabled", "", T::kBool, 0, "yes"},
    {"disable-thp", "", T::kBool, I, "yes"},
    {"cluster-allow-replica-migration", "", T::kBool, 0, "yes"},
    {"replica-announced", "", T::kBool, 0, "yes"},
    {"latency-tracking", "", T::kBool, 0, "yes"},
    {"aof-disable-auto-gc", "", T::kBool, 0, "no"},
    {"replica-ignore-disk-write-errors", "", T::kBool, 0, "no"},
    {"tls-cluster", "", T::kBool, 0, "no"},
    {"tls-replication", "", T::kBool, 0, "no"},
    {"tls-prefer-server-ciphers", "", T::kBool, 0, "no"},
    {"tls-session-caching", "", T::kBool, 0, "yes"},
    // Strings.
    {"aclfile", "", T::kString, I, ""},
    {"unixsocket", "", T::kString, I, ""},
    {"pidfile", "", T::kString, I, ""},
    {"replica-announce-ip", "slave-announce-ip", T::kString, 0, ""},
    {"masteruser", "", T::kString, 0, ""},
    hooks({"cluster-announce-ip", "", T::kString, 0, ""}, nullptr, nullptr,
          start_cluster_announce_ip),
    {"cluster-config-file", "", T::kString, I, "nodes.conf"},
    {"cluster-announce-hostname", "", T::kString, 0, "", 0, 0, {}, valid_hostname},
    {"syslog-ident", "", T::kString, I, "redis"},
    {"dbfilename", "", T::kString, kProtected, "dump.rdb"},
    {"appendfilename", "", T::kString, I, "appendonly.aof"},
    {"appenddirname", "", T::kString, I, "appendonlydir"},
    {"server_cpulist", "", T::kString, I, ""},
    {"bio_cpulist", "", T::kString, I, ""},
    {"aof_rewrite_cpulist", "", T::kString, I, ""},
    {"bgsave_cpulist", "", T::kString, I, ""},
    {"ignore-warnings", "", T::kString, 0, ""},
    {"proc-title-template",
     "",
     T::kString,
     0,
     "{title} {listen-addr} {server-mode}",
     0,
     0,
     {},
     valid_proc_title},
    {"bind-source-addr", "", T::kString, 0, ""},
    {"logfile", "", T::kString, I, ""},
    {"masterauth", "", T::kString, 0, ""},
    hooks({"requirepass", "", T::kString, kActs, ""}, get_requirepass, set_requirepass,
          start_requirepass),
    {"tls-cert-file", "", T::kString, 0, ""},
    {"tls-key-file", "", T::kString, 0, ""},
    {"tls-key-file-pass", "", T::kString, 0, ""},
    {"tls-client-cert-file", "", T::kString, 0, ""},
    {"tls-client-key-file", "", T::kString, 0, ""},
    {"tls-client-key-file-pass", "", T::kString, 0, ""},
    {"tls-dh-params-file", "", T::kString, 0, ""},
    {"tls-ca-cert-file", "", T::kString, 0, ""},
    {"tls-ca-cert-dir", "", T::kString, 0, ""},
    {"tls-protocols", "", T::kString, 0, ""},
    {"tls-ciphers", "", T::kString, 0, ""},
    {"tls-ciphersuites", "", T::kString, 0, ""},
    // Enumerations.
    {"supervised", "", T::kEnum, I, "no", 0, 0, "upstart,systemd,auto,no"},
    {"syslog-facility", "", T::kEnum, I, "local0", 0, 0,
     "user,local0,local1,local2,local3,local4,local5,local6,local7"},
    {"repl-diskless-load", "", T::kEnum, 0, "disabled", 0, 0, "disabled,on-empty-db,swapdb"},
    {"loglevel", "", T::kEnum, 0, "notice", 0, 0, "debug,verbose,notice,warning"},
    hooks({"maxmemory-policy", "", T::kEnum, kActs, "noeviction", 0, 0,
           "volatile-lru,volatile-lfu,volatile-random,volatile-ttl,allkeys-lru,allkeys-lfu,"
           "allkeys-random,noeviction,allkeys-sieve,allkeys-s3fifo"},
          get_maxmemory_policy, set_maxmemory_policy, start_maxmemory_policy),
    {"appendfsync", "", T::kEnum, 0, "everysec", 0, 0, "everysec,always,no"},
    {"oom-score-adj", "", T::kEnum, 0, "no", 0, 0, "no,yes,relative=yes,absolute"},
    {"acl-pubsub-default", "", T::kEnum, 0, "resetchannels", 0, 0, "allchannels,resetchannels"},
    {"sanitize-dump-payload", "", T::kEnum, 0, "no", 0, 0, "no,yes,clients"},
    {"enable-protected-configs", "", T::kEnum, I, "no", 0, 0, "no,yes,local"},
    hooks({"enable-debug-command", "", T::kEnum, I, "no", 0, 0, "no,yes,local"}, get_enable_debug,
          nullptr, start_enable_debug),
    {"enable-module-command", "", T::kEnum, I, "no", 0, 0, "no,yes,local"},
    {"cluster-preferred-endpoint-type", "", T::kEnum, 0, "ip", 0, 0,
     "ip,hostname,unknown-endpoint"},
    {"propagation-error-behavior", "", T::kEnum, 0, "ignore", 0, 0,
     "ignore,panic,panic-on-replicas"},
    {"tls-auth-clients", "", T::kEnum, 0, "yes", 0, 0, "no,yes,optional"},
    {"shutdown-on-sigint", "", T::kFlags, 0, "default", 0, 0, "default,save,nosave,now,force"},
    {"shutdown-on-sigterm", "", T::kFlags, 0, "default", 0, 0, "default,save,nosave,now,force"},
    // Integers.
    hooks({"databases", "", T::kInt, I | kFixed, "16", 1, kIntMax}, get_databases),
    hooks({"port", "", T::kInt, kFixed, "6379", 0, 65535}, get_port, nullptr, start_port),
    hooks({"io-threads", "", T::kInt, I | kFixed, "1", 1, 128}, get_io_threads),
    {"auto-aof-rewrite-percentage", "", T::kInt, 0, "100", 0, kIntMax},
    {"cluster-replica-validity-factor", "cluster-slave-validity-factor", T::kInt, 0, "10", 0,
     kIntMax},
    {"list-max-listpack-size", "list-max-ziplist-size", T::kInt, 0, "-2", kIntMin, kIntMax},
    {"tcp-keepalive", "", T::kInt, 0, "300", 0, kIntMax},
    {"cluster-migration-barrier", "", T::kInt, 0, "1", 0, kIntMax},
    {"active-defrag-cycle-min", "", T::kInt, 0, "1", 1, 99},
    {"active-defrag-cycle-max", "", T::kInt, 0, "25", 1, 99},
    {"active-defrag-threshold-lower", "", T::kInt, 0, "10", 0, 1000},
    {"active-defrag-threshold-upper", "", T::kInt, 0, "100", 0, 1000},
    hooks({"lfu-log-factor", "", T::kInt, kActs, "10", 0, kIntMax}, nullptr, set_lfu_log_factor),
    hooks({"lfu-decay-time", "", T::kInt, kActs, "1", 0, kIntMax}, nullptr, set_lfu_decay_time),
    {"replica-priority", "slave-priority", T::kInt, 0, "100", 0, kIntMax},
    {"repl-diskless-sync-delay", "", T::kInt, 0, "5", 0, kIntMax},
    hooks({"maxmemory-samples", "", T::kInt, kActs, "5", 1, kIntMax}, get_maxmemory_samples,
          set_maxmemory_samples, start_maxmemory_samples),
    {"maxmemory-eviction-tenacity", "", T::kInt, 0, "10", 0, 100},
    {"timeout", "", T::kInt, 0, "0", 0, kIntMax},
    {"replica-announce-port", "slave-announce-port", T::kInt, 0, "0", 0, 65535},
    {"tcp-backlog", "", T::kInt, I, "511", 0, kIntMax},
    {"cluster-port", "", T::kInt, I, "0", 0, 65535},
    {"cluster-announce-bus-port", "", T::kInt, 0, "0", 0, 65535},
    {"cluster-announce-port", "", T::kInt, 0, "0", 0, 65535},
    {"cluster-announce-tls-port", "", T::kInt, 0, "0", 0, 65535},
    {"repl-timeout", "", T::kInt, 0, "60", 1, kIntMax},
    {"repl-ping-replica-period", "repl-ping-slave-period", T::kInt, 0, "10", 1, kIntMax},
    {"list-compress-depth", "", T::kInt, 0, "0", 0, kIntMax},
    {"active-expire-effort", "", T::kInt, 0, "1", 1, 10},
    hooks({"hz", "", T::kInt, 0, "10", 0, kIntMax},
          get_hz),  // GET shows it clamped to 1..500, as Redis
    hooks({"min-replicas-to-write", "min-slaves-to-write", T::kInt, 0, "0", 0, kIntMax}, nullptr,
          set_min_replicas),
    hooks({"min-replicas-max-lag", "min-slaves-max-lag", T::kInt, 0, "10", 0, kIntMax}, nullptr,
          set_min_replicas),
    {"shutdown-timeout", "", T::kInt, 0, "10", 0, kIntMax},
    {"repl-diskless-sync-max-replicas", "", T::kInt, 0, "0", 0, kIntMax},
    {"socket-mark-id", "", T::kInt, I, "0", 0, kUIntMax},
    hooks({"maxclients", "", T::kInt, kActs, "10000", 1, kUIntMax}, get_maxclients, set_maxclients,
          start_maxclients),
    {"unixsocketperm", "", T::kOctal, I, "0"},
    {"active-defrag-max-scan-fields", "", T::kInt, 0, "1000", 1, kLongMax},
    hooks({"slowlog-max-len", "", T::kInt, 0, "128", 0, kLongMax}, nullptr, set_slowlog_len),
    {"acllog-max-len", "", T::kInt, 0, "128", 0, kLongMax},
    hooks({"busy-reply-threshold", "lua-time-limit", T::kInt, 0, "5000", 0, kLongMax}, nullptr,
          set_busy_reply_threshold),
    {"cluster-node-timeout", "", T::kInt, 0, "15000", 0, kLongMax},
    hooks({"slowlog-log-slower-than", "", T::kInt, 0, "10000", -1, kLongMax}, nullptr,
          set_slowlog_slower),
    hooks({"latency-monitor-threshold", "", T::kInt, 0, "0", 0, kLongMax}, nullptr,
          set_latency_threshold),
    hooks({"stream-node-max-entries", "", T::kInt, 0, "100", 0, kLongMax}, nullptr,
          set_stream_node_entries),
    hooks({"hash-max-listpack-entries", "hash-max-ziplist-entries", T::kInt, 0, "512", 0, kLongMax},
          nullptr, set_encoding_named<kHashEntries>),
    hooks({"set-max-intset-entries", "", T::kInt, 0, "512", 0, kLongMax}, nullptr,
          set_encoding_named<kSetIntset>),
    hooks({"zset-max-listpack-entries", "zset-max-ziplist-entries", T::kInt, 0, "128", 0, kLongMax},
          nullptr, set_encoding_named<kZsetEntries>),
    hooks({"tracking-table-max-keys", "", T::kInt, 0, "1000000", 0, kLongMax}, nullptr,
          set_tracking_table_max_keys),
    {"repl-backlog-ttl", "", T::kInt, 0, "3600", 0, kLongMax},
    {"tls-port", "", T::kInt, 0, "0", 0, 65535},
    {"tls-session-cache-size", "", T::kInt, 0, "20480", 0, kIntMax},
    {"tls-session-cache-timeout", "", T::kInt, 0, "300", 0, kIntMax},
    // Memory sizes.
    hooks({"proto-max-bulk-len", "", T::kMemory, kActs, "536870912", 1024 * 1024, kLongMax},
          get_proto_max_bulk_len, set_proto_max_bulk_len),
    hooks({"repl-backlog-size", "", T::kMemory, 0, "1048576", 1, kLongMax},
          get_repl_backlog_size),  // GET at least 16384
    hooks({"maxmemory", "", T::kMemory, kActs, "0", 0, kULLMax}, get_maxmemory, set_maxmemory,
          start_maxmemory),
    {"cluster-link-sendbuf-limit", "", T::kMemory, 0, "0", 0, kULLMax},
    {"active-defrag-ignore-bytes", "", T::kMemory, 0, "104857600", 1, kLongMax},
    hooks({"hash-max-listpack-value", "hash-max-ziplist-value", T::kMemory, 0, "64", 0, kLongMax},
          nullptr, set_encoding_named<kHashValue>),
    hooks({"stream-node-max-bytes", "", T::kMemory, 0, "4096", 0, kLongMax}, nullptr,
          set_stream_node_bytes),
    hooks({"zset-max-listpack-value", "zset-max-ziplist-value", T::kMemory, 0, "64", 0, kLongMax},
          nullptr, set_encoding_named<kZsetValue>),
    hooks({"hll-sparse-max-bytes", "", T::kMemory, 0, "3000", 0, kLongMax}, nullptr,
          set_hll_sparse),
    hooks({"client-query-buffer-limit", "", T::kMemory, kActs, "1073741824", 1024 * 1024, kLongMax},
          get_query_buffer_limit, set_query_buffer_limit),
    {"auto-aof-rewrite-min-size", "", T::kMemory, 0, "67108864", 0, kLongMax},
    hooks({"maxmemory-clients", "", T::kMemoryPercent, kActs, "0", 0, kLongMax}, nullptr,
          set_maxmemory_clients),
    // Special formats.
    hooks({"dir", "", T::kSpecial, kProtected | kFixed, "", 0, 0, {}, valid_any}, get_dir),
    {"save", "", T::kSpecial, kFixed, "", 0, 0, {}, valid_save},
    hooks({"client-output-buffer-limit",
           "",
           T::kSpecial,
           kActs,
           "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
           0,
           0,
           {},
           valid_obuf},
          get_obuf, set_obuf),
    {"oom-score-adj-values", "", T::kSpecial, 0, "0 200 800", 0, 0, {}, valid_oom_values},
    hooks({"notify-keyspace-events", "", T::kSpecial, kActs, "", 0, 0, {}, valid_notify},
          get_notify, set_notify),
    hooks({"bind", "", T::kSpecial, kFixed, "* -::*", 0, 0, {}, valid_bind}, get_bind, nullptr,
          start_bind),
    {"replicaof", "slaveof", T::kSpecial, I, "", 0, 0, {}, valid_any},
    {"latency-tracking-info-percentiles",
     "",
     T::kSpecial,
     0,
     "50 99 99.9",
     0,
     0,
     {},
     valid_percentiles},
    // Redis's hidden parameters (debugging and test aids): no effect in kvlab.
    {"use-exit-on-panic", "", T::kBool, kHidden, "no"},
    {"lua-enable-deprecated-api", "", T::kBool, I | kHidden, "no"},
    {"rdb-key-save-delay", "", T::kInt, kHidden, "0", kIntMin, kIntMax},
    {"key-load-delay", "", T::kInt, kHidden, "0", kIntMin, kIntMax},
    {"watchdog-period", "", T::kInt, kHidden, "0", 0, kIntMax},
    {"loading-process-events-interval-bytes", "", T::kInt, kHidden, "2097152", 1024, kIntMax},
    // kvlab's own, fixed at start-up: --NAME on the command line, NAME in a config file.
    own({"kvlab-threads", "", T::kInt, I | kFixed, "0", 1, 1024}, "threads", get_threads,
        start_threads,
        "Worker threads, each with its own event loop (default: the CPUs allowed to the process)"),
    own({"kvlab-backend", "", T::kString, I | kFixed, ""}, "backend", get_backend, start_backend,
        "Keyspace backend (default: the registry's default map; see --list-backends)"),
    own({"kvlab-queue", "", T::kString, I | kFixed, "queue/kvlab-mpsc"}, "queue", get_queue,
        start_queue, "Queue backend of the per-worker pub/sub inboxes (a queue/... name)"),
    own({"kvlab-queue-capacity", "", T::kInt, I | kFixed, "65536", 2, 1u << 30}, "queue-capacity",
        get_queue_capacity, start_queue_capacity,
        "Capacity of each inbox for bounded queue backends; a full inbox spills to an overflow "
        "list, nothing is dropped"),
    own({"kvlab-mode", "", T::kString, I | kFixed, "shared", 0, 0, {}, valid_mode}, "mode",
        get_mode, start_mode,
        "How the workers share the data: shared (every worker reaches one concurrent keyspace)"),
    own({"kvlab-atomicity", "", T::kString, I | kFixed, "key-locks", 0, 0, {}, valid_atomicity},
        "atomicity", get_atomicity, start_atomicity,
        "How multi-key commands, EXEC and scripts are made atomic (see --list-atomicity)"),
    own({"kvlab-placement", "", T::kString, I | kFixed, "none"}, "placement", get_placement,
        start_placement,
        "Worker placement: none, compact, scatter, per-l3, per-l3:pin, per-numa, explicit:LIST"),
    own({"kvlab-smt", "", T::kEnum, I | kFixed, "auto", 0, 0, "auto,on,off"}, "smt", get_smt,
        start_smt, "SMT use for placement: auto, on, off"),
    own({"kvlab-yield", "", T::kEnum, I | kFixed, "auto", 0, 0, "auto,yes,no"}, "yield", get_yield,
        start_yield,
        "yes: a worker that served events yields the CPU once and polls again before it sleeps "
        "(while two or more connections are active); auto: yes when the workers are at least as "
        "many as the allowed CPUs"),
    own({"kvlab-prefetch", "", T::kBool, I | kFixed, "yes"}, "prefetch", get_prefetch,
        start_prefetch,
        "yes: before running a window of pipelined commands, prefetch their keys (backends with "
        "a prefetch hint)"),
    own({"kvlab-lua-undeclared-keys", "", T::kBool, I | kFixed, "yes"}, "lua-undeclared-keys",
        get_lua_undeclared, start_lua_undeclared,
        "yes (Redis's behaviour): scripts may access keys they did not declare, and every script "
        "runs exclusive of every other command; no (research option): under --atomicity "
        "key-locks such an access is an error and scripts on disjoint keys run in parallel"),
    own({"kvlab-eviction-queue", "", T::kString, I | kFixed, "queue/kvlab"}, "eviction-queue",
        get_eviction_queue, start_eviction_queue,
        "Queue backend of allkeys-s3fifo's FIFOs (an unbounded queue/... backend)"),
    own({"kvlab-cluster-mode", "", T::kEnum, I | kFixed, "no", 0, 0, "no,emulated,yes"},
        "cluster-mode", get_cluster_mode, start_cluster_mode,
        "Redis Cluster protocol: no; emulated (one node owning every slot); yes (the slots a "
        "KVLAB CLUSTER CONFIG gives this node)"),
    own({"kvlab-cluster-node-id", "", T::kString, I | kFixed, "", 0, 0, {}, valid_node_id},
        "cluster-node-id", get_cluster_node_id, start_cluster_node_id,
        "This node's id (40 lowercase hex characters); random when not given"),
    own({"kvlab-cluster-config", "", T::kString, I | kFixed, ""}, "cluster-config",
        get_cluster_config, start_cluster_config,
        "Cluster configuration (JSON, as KVLAB CLUSTER CONFIG takes) loaded at start-up "
        "(--cluster-mode yes)"),
    own({"kvlab-expected-keys", "", T::kInt, I | kFixed, "1024", 0, kIntMax}, "expected-keys",
        get_expected_keys, start_expected_keys, "Initial capacity hint for the keyspace"),
};
constexpr std::size_t kNumParams = sizeof kParams / sizeof kParams[0];

// ---- values ----

std::vector<std::string> g_values;  // guarded by mutex(); index as kParams

}  // namespace

std::vector<std::string>& values() {
  if (g_values.empty())
    for (const Param& p : kParams) g_values.emplace_back(p.def);
  return g_values;
}

namespace {

std::string stored(std::string_view name) {
  for (std::size_t i = 0; i < kNumParams; ++i)
    if (kParams[i].name == name) return values()[i];
  return {};
}

}  // namespace

std::string get_value(Server& s, std::size_t i) {
  return kParams[i].get != nullptr ? kParams[i].get(s) : values()[i];
}

// Stored first: CONFIG GET shows it unless the row reads its value from the server.
void apply_value(Server& s, std::size_t i, const std::string& v) {
  values()[i] = v;
  if (kParams[i].set != nullptr) kParams[i].set(s, v);
}

const Param* find_param(std::string_view name, bool cli_names) {
  for (const Param& p : kParams)
    if (iequals(p.name, name) || (!p.alias.empty() && iequals(p.alias, name)) ||
        (cli_names && !p.cli.empty() && iequals(p.cli, name)))
      return &p;
  return nullptr;
}

std::span<const Param> params() {
  return kParams;
}

std::mutex& mutex() {
  static std::mutex mu;
  return mu;
}

}  // namespace kvlab::server::config
