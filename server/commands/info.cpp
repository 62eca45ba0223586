// INFO: the sections Redis 7.0 prints (server, clients, memory, persistence, stats, replication,
// cpu, modules, errorstats, cluster, keyspace, commandstats, latencystats), the kvlab section, and
// which of them "default", "all" and "everything" select.

#include <malloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "server/commands/admin_internal.hpp"
#include "server/commands/common.hpp"
#include "server/features/scripting.hpp"
#include "server/util/memory.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {

namespace {

// ---- INFO ----

std::string human_bytes(std::size_t n) {
  char buf[64];
  const double d = static_cast<double>(n);
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%zuB", n);
  } else if (n < 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fK", d / 1024);
  } else if (n < 1024ull * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fM", d / (1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2fG", d / (1024.0 * 1024 * 1024));
  }
  return buf;
}

std::string random_hex_id() {
  std::random_device rd;
  std::string s;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) s += kHex[rd() % 16];
  return s;
}

// A random 40-hex-digit id for this process, as Redis's run_id.
const std::string& run_id() {
  static const std::string id = random_hex_id();
  return id;
}

// The replication id a Redis master without replicas reports (its own, random at start; the
// secondary id all zeros).
const std::string& repl_id() {
  static const std::string id = random_hex_id();
  return id;
}

// What the section writers read, computed once per INFO.
struct InfoInput {
  CommandContext& ctx;
  Server& s;
  const StatTotals& t;
  std::uint64_t total_calls, expiry_index, pubsub_clients, delivered, dropped;
  std::int64_t uptime;
};

void info_server(const InfoInput& in, std::ostringstream& o) {
  Server& s = in.s;
  const std::int64_t uptime = in.uptime;
  struct utsname un {};
  uname(&un);
  timeval tv{};
  gettimeofday(&tv, nullptr);
  o << "redis_version:" << kRedisCompatVersion << "\r\n"
    << "redis_git_sha1:00000000\r\n"
    << "redis_git_dirty:0\r\n"
    << "kvlab_version:" << KVLAB_VERSION << "\r\n"
    << "kvlab_git_sha1:" << KVLAB_GIT_SHA << "\r\n"
    << "redis_mode:standalone\r\n"
    << "os:" << un.sysname << " " << un.release << " " << un.machine << "\r\n"
    << "arch_bits:64\r\n"
    << "monotonic_clock:POSIX clock_gettime\r\n"
    << "multiplexing_api:epoll\r\n"
    << "gcc_version:" << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__ << "\r\n"
    << "process_id:" << getpid() << "\r\n"
    << "process_supervised:no\r\n"
    << "run_id:" << run_id() << "\r\n"
    << "tcp_port:" << s.config().port << "\r\n"
    << "server_time_usec:" << static_cast<std::int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec << "\r\n"
    << "uptime_in_seconds:" << uptime << "\r\n"
    << "uptime_in_days:" << uptime / 86400 << "\r\n"
    << "hz:10\r\n"
    << "configured_hz:10\r\n"
    << "config_file:\r\n"
    << "io_threads_active:" << (s.num_workers() > 1 ? 1 : 0) << "\r\n";
}

void info_clients(const InfoInput& in, std::ostringstream& o) {
  Server& s = in.s;
  const std::uint64_t pubsub_clients = in.pubsub_clients;
  o << "connected_clients:" << s.connected_clients() << "\r\n"
    << "cluster_connections:0\r\n"
    << "maxclients:" << s.maxclients() << "\r\n"
    << "blocked_clients:" << s.blocking().blocked_clients() + s.postponed_clients() << "\r\n"
    << "tracking_clients:" << s.tracking().clients() << "\r\n"
    << "clients_in_timeout_table:0\r\n"
    << "pubsub_clients:" << pubsub_clients << "\r\n";
}

void info_memory(const InfoInput& in, std::ostringstream& o) {
  Server& s = in.s;
  const std::size_t rss = memory::rss_bytes();
  // used_memory counts what operator new and the pool's large blocks hold
  // (server/util/memory.hpp), as Redis's zmalloc counts, whichever allocator is linked;
  // maxmemory compares with it.
  const std::size_t used = memory::used_bytes();
  const std::uint64_t maxmem = s.eviction().maxmemory();
  const scripting::CacheCounts cached = scripting::cache_counts();
  // The zeros: eviction compares all of used_memory with maxmemory (Redis leaves out replica
  // and AOF buffers, which kvlab does not have); there is no active defrag; there is no
  // lazy-free thread: UNLINK and FLUSHALL/FLUSHDB ASYNC run as DEL and FLUSHALL do (a value
  // goes when its last reference does, the keyspace's entries through the backend's
  // reclamation, INFO kvlab), so no lazy-free job is ever pending or done.
  o << "used_memory:" << used << "\r\n"
    << "used_memory_human:" << human_bytes(used) << "\r\n"
    << "used_memory_rss:" << rss << "\r\n"
    << "used_memory_rss_human:" << human_bytes(rss) << "\r\n"
    << "maxmemory:" << maxmem << "\r\n"
    << "maxmemory_human:" << human_bytes(maxmem) << "\r\n"
    << "maxmemory_policy:" << evict_policy_name(s.eviction().policy()) << "\r\n"
    << "mem_not_counted_for_evict:0\r\n"
    << "mem_allocator:" KVLAB_SERVER_MALLOC "\r\n"
    << "active_defrag_running:0\r\n"
    << "lazyfree_pending_objects:0\r\n"
    << "lazyfreed_objects:0\r\n"
    << "number_of_cached_scripts:" << cached.scripts << "\r\n"
    << "number_of_functions:" << cached.functions << "\r\n"
    << "number_of_libraries:" << cached.libraries << "\r\n"
    << "kvlab_eviction_tracked_keys:" << s.eviction().tracked_keys() << "\r\n"
    << "kvlab_eviction_queue:" << s.eviction().queue_name() << "\r\n";
}

void info_persistence(const InfoInput& in, std::ostringstream& o) {
  Server& s = in.s;
  o << "loading:0\r\n"
    << "async_loading:0\r\n"
    << "rdb_changes_since_last_save:0\r\n"
    << "rdb_bgsave_in_progress:0\r\n"
    << "rdb_last_save_time:" << s.start_ms() / 1000 << "\r\n"
    << "rdb_last_bgsave_status:ok\r\n"
    << "rdb_saves:0\r\n"
    << "aof_enabled:0\r\n"
    << "aof_rewrite_in_progress:0\r\n"
    << "aof_rewrite_scheduled:0\r\n"
    << "aof_last_bgrewrite_status:ok\r\n"
    << "aof_rewrites:0\r\n"
    << "aof_last_write_status:ok\r\n";
}

void info_stats(const InfoInput& in, std::ostringstream& o) {
  CommandContext& ctx = in.ctx;
  Server& s = in.s;
  const StatTotals& t = in.t;
  const std::uint64_t total_calls = in.total_calls;
  std::uint64_t migrate_sockets = 0;  // relaxed: per-worker gauges (WorkerStats)
  for (unsigned i = 0; i < s.num_workers(); ++i)
    migrate_sockets += s.stats(i).migrate_sockets.load(std::memory_order_relaxed);
  o << "total_connections_received:" << t.connections << "\r\n"
    << "total_commands_processed:" << total_calls << "\r\n"
    << "instantaneous_ops_per_sec:"
    << static_cast<std::uint64_t>(s.instantaneous_ops_per_sec(ctx.now_ms)) << "\r\n"
    << "total_net_input_bytes:" << t.net_in << "\r\n"
    << "total_net_output_bytes:" << t.net_out << "\r\n"
    << "rejected_connections:" << t.rejected_connections << "\r\n"
    << "expired_keys:" << t.expired << "\r\n"
    << "evicted_keys:" << s.eviction().evicted_keys() << "\r\n"
    << "evicted_clients:" << t.evicted_clients << "\r\n"
    << "keyspace_hits:" << t.hits << "\r\n"
    << "keyspace_misses:" << t.misses << "\r\n"
    << "pubsub_channels:" << s.pubsub().channel_count() << "\r\n"
    << "pubsub_patterns:" << s.pubsub().pattern_count() << "\r\n"
    << "pubsubshard_channels:" << s.pubsub().channel_count(true) << "\r\n"
    << "migrate_cached_sockets:" << migrate_sockets << "\r\n"
    << "tracking_total_keys:" << s.tracking().total_keys() << "\r\n"
    << "tracking_total_items:" << s.tracking().total_items() << "\r\n"
    << "tracking_total_prefixes:" << s.tracking().total_prefixes() << "\r\n"
    << "unexpected_error_replies:0\r\n"
    << "total_error_replies:" << t.errors << "\r\n";
}

void info_replication(const InfoInput&, std::ostringstream& o) {
  // A master that never had a replica, as Redis 7.0 reports one: no backlog, offset 0.
  o << "role:master\r\nconnected_slaves:0\r\n"
    << "master_failover_state:no-failover\r\n"
    << "master_replid:" << repl_id() << "\r\n"
    << "master_replid2:0000000000000000000000000000000000000000\r\n"
    << "master_repl_offset:0\r\n"
    << "second_repl_offset:-1\r\n"
    << "repl_backlog_active:0\r\n"
    << "repl_backlog_size:" << config_soft_value("repl-backlog-size") << "\r\n"
    << "repl_backlog_first_byte_offset:0\r\n"
    << "repl_backlog_histlen:0\r\n";
}

void info_cpu(const InfoInput&, std::ostringstream& o) {
  struct rusage self {
  }, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  char buf[256];
  auto tv = [](const timeval& v) {
    return std::make_pair(static_cast<long>(v.tv_sec), static_cast<long>(v.tv_usec));
  };
  std::snprintf(buf, sizeof buf,
                "used_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n"
                "used_cpu_sys_children:%ld.%06ld\r\nused_cpu_user_children:%ld.%06ld\r\n",
                tv(self.ru_stime).first, tv(self.ru_stime).second, tv(self.ru_utime).first,
                tv(self.ru_utime).second, tv(children.ru_stime).first, tv(children.ru_stime).second,
                tv(children.ru_utime).first, tv(children.ru_utime).second);
  o << buf;
}

void info_commandstats(const InfoInput& in, std::ostringstream& o) {
  const StatTotals& t = in.t;
  for (std::size_t id = 0; id < t.cmd.size(); ++id) {
    const StatTotals::Cmd& c = t.cmd[id];
    if (c.calls == 0 && c.failed == 0 && c.rejected == 0) continue;
    const std::uint64_t usec = c.nanos / 1000;
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
                  "failed_calls=%llu\r\n",
                  CommandTable::instance().full_name(CommandTable::instance().by_stat_id(id)),
                  static_cast<unsigned long long>(c.calls), static_cast<unsigned long long>(usec),
                  c.calls == 0 ? 0.0 : static_cast<double>(usec) / static_cast<double>(c.calls),
                  static_cast<unsigned long long>(c.rejected),
                  static_cast<unsigned long long>(c.failed));
    o << buf;
  }
}

void info_errorstats(const InfoInput& in, std::ostringstream& o) {
  const StatTotals& t = in.t;
  for (const auto& [code, count] : t.errors_by_code)
    o << "errorstat_" << code << ":count=" << count << "\r\n";
}

void info_cluster(const InfoInput& in, std::ostringstream& o) {
  CommandContext& ctx = in.ctx;
  o << "cluster_enabled:" << (ctx.server.cluster().enabled() ? 1 : 0) << "\r\n";
}

void info_keyspace(const InfoInput& in, std::ostringstream& o) {
  CommandContext& ctx = in.ctx;
  Server& s = in.s;
  const std::uint64_t expiry_index = in.expiry_index;
  const std::size_t keys = s.keyspace().size_approx();
  if (keys > 0) {
    o << "db0:keys=" << keys << ",expires=";
    std::int64_t avg_ttl = 0;
    if (s.keyspace().traits().concurrent_for_each || s.num_workers() == 1) {
      std::size_t with_ttl = 0;
      long double ttl_sum = 0;
      s.keyspace().for_each([&](std::string_view, const Value& v) {
        if (v.expire_ms == 0) return;
        ++with_ttl;
        if (v.expire_ms > ctx.now_ms) ttl_sum += static_cast<long double>(v.expire_ms - ctx.now_ms);
      });
      if (with_ttl > 0) avg_ttl = static_cast<std::int64_t>(ttl_sum / with_ttl);
      o << with_ttl;
    } else {
      o << expiry_index;
    }
    o << ",avg_ttl=" << avg_ttl << "\r\n";
  }
}

void info_kvlab(const InfoInput& in, std::ostringstream& o) {
  Server& s = in.s;
  const StatTotals& t = in.t;
  const std::uint64_t expiry_index = in.expiry_index;
  const std::uint64_t delivered = in.delivered;
  const std::uint64_t dropped = in.dropped;
  const BackendTraits& bt = s.keyspace().traits();
  o << "kvlab_backend:" << bt.name << "\r\n"
    << "kvlab_backend_progress:" << to_string(bt.progress) << "\r\n"
    << "kvlab_backend_reclamation:" << to_string(bt.reclamation) << "\r\n"
    << "kvlab_value_reclamation:refcount (strings immutable, containers under their own lock; "
       "the last reference frees)\r\n"
    << "kvlab_mode:" << s.config().mode << "\r\n"
    << "kvlab_threads:" << s.num_workers() << "\r\n"
    << "kvlab_placement:" << s.config().placement << "\r\n"
    << "kvlab_yield:" << (s.config().yield_on ? "on" : "off") << "\r\n"
    << "kvlab_atomicity:" << s.atomicity().name() << "\r\n"
    << "kvlab_atomicity_escalations:" << s.atomicity().escalations() << "\r\n"
    << "kvlab_atomicity_slow_commands:" << s.atomicity().slow_commands() << "\r\n"
    << "kvlab_expiry_index_entries:" << expiry_index << "\r\n";
  if (s.num_workers() > 0) {
    const BackendTraits& q = s.worker(0).queue_traits();
    o << "kvlab_queue:" << q.name << "\r\n"
      << "kvlab_queue_progress:" << to_string(q.progress) << "\r\n"
      << "kvlab_queue_bounded:" << (q.bounded ? 1 : 0) << "\r\n";
  }
  // Redis 7.0 has no such counter (later Redis reports it in stats): kvlab's own section.
  o << "kvlab_client_output_buffer_limit_disconnections:" << t.obuf_closes << "\r\n";
  o << "kvlab_pubsub_delivered:" << delivered << "\r\n"
    << "kvlab_pubsub_dropped_closed:" << dropped << "\r\n";
  const reclaim::Stats rs = reclaim::stats();
  o << "kvlab_epoch_global:" << rs.global_epoch << "\r\n"
    << "kvlab_epoch_lag:" << rs.epoch_lag << "\r\n"
    << "kvlab_epoch_retired_unfreed:" << rs.retired_unfreed << "\r\n"
    << "kvlab_epoch_freed:" << rs.freed << "\r\n"
    << "kvlab_epoch_threads:" << rs.threads << "\r\n";
  for (unsigned i = 0; i < s.num_workers(); ++i) {
    WorkerStats& w = s.stats(i);
    o << "kvlab_worker" << i << ":cpu=" << w.cpu.load(std::memory_order_relaxed)
      << ",ops=" << w.commands.load(std::memory_order_relaxed)
      << ",connections=" << s.worker(i).connection_count()
      << ",expired=" << w.expired.load(std::memory_order_relaxed)
      << ",pubsub_clients=" << w.pubsub_clients.load(std::memory_order_relaxed)
      << ",inbox=" << s.worker(i).inbox_size()
      << ",inbox_overflows=" << s.worker(i).inbox_overflows()
      << ",yields=" << w.yields.load(std::memory_order_relaxed)
      << ",yield_hits=" << w.yield_hits.load(std::memory_order_relaxed);
    if (i < s.worker_placement().size()) o << ",placement=" << s.worker_placement()[i];
    o << "\r\n";
  }
}

using InfoWriter = void (*)(const InfoInput&, std::ostringstream&);

// INFO's sections in Redis 7.0's order, one row each. `in_default`: listed by a bare INFO and by
// INFO default; `write` prints the section's fields (null: a section with none, as Modules).
struct InfoSection {
  std::string_view name, title;
  bool in_default;
  InfoWriter write;
};
constexpr InfoSection kInfoSections[] = {
    {"server", "Server", true, info_server},
    {"clients", "Clients", true, info_clients},
    {"memory", "Memory", true, info_memory},
    {"persistence", "Persistence", true, info_persistence},
    {"stats", "Stats", true, info_stats},
    {"replication", "Replication", true, info_replication},
    {"cpu", "CPU", true, info_cpu},
    {"modules", "Modules", true, nullptr},
    {"commandstats", "Commandstats", false, info_commandstats},
    {"errorstats", "Errorstats", true, info_errorstats},
    {"latencystats", "Latencystats", false, nullptr},
    {"cluster", "Cluster", true, info_cluster},
    {"keyspace", "Keyspace", true, info_keyspace},
    {"kvlab", "kvlab", true, info_kvlab},
};

std::string info_text(CommandContext& ctx, const std::vector<std::string>& wanted) {
  Server& s = ctx.server;
  auto want = [&](const InfoSection& sec) {
    if (wanted.empty()) return sec.in_default;
    for (const auto& w : wanted) {
      if (w == "all" || w == "everything") return true;
      if (w == "default" && sec.in_default) return true;
      if (w == sec.name) return true;
    }
    return false;
  };
  const StatTotals t = s.stat_totals();
  std::uint64_t total_calls = 0;
  for (const auto& c : t.cmd) total_calls += c.calls;
  std::uint64_t expiry_index = 0, pubsub_clients = 0, delivered = 0, dropped = 0;
  for (unsigned i = 0; i < s.num_workers(); ++i) {
    WorkerStats& w = s.stats(i);
    expiry_index += w.expiry_index.load(std::memory_order_relaxed);
    pubsub_clients += w.pubsub_clients.load(std::memory_order_relaxed);
    delivered += w.pubsub_delivered.load(std::memory_order_relaxed);
    dropped += w.pubsub_dropped.load(std::memory_order_relaxed);
  }
  const std::int64_t uptime = (ctx.now_ms - s.start_ms()) / 1000;
  const InfoInput in{ctx,       s,       t,     total_calls, expiry_index, pubsub_clients,
                     delivered, dropped, uptime};
  std::ostringstream o;
  for (const InfoSection& sec : kInfoSections) {
    if (!want(sec)) continue;
    if (o.tellp() > 0) o << "\r\n";
    o << "# " << sec.title << "\r\n";
    if (sec.write != nullptr) sec.write(in, o);
  }
  return o.str();
}

}  // namespace

void info_cmd(CommandContext& ctx) {
  std::vector<std::string> wanted;
  for (std::size_t i = 1; i < ctx.argc(); ++i) wanted.push_back(lower_name(ctx.arg(i)));
  ctx.reply.verbatim("txt", info_text(ctx, wanted));
}

}  // namespace kvlab::server
