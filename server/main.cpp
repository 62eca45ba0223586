// kvlab-server: a multi-threaded RESP2 server on kvlab's pluggable keyspace.
//
// Start-up: read the parameters (flags and config files, through the one parameter table of
// commands/config.cpp), choose and check the backend, plan worker placement, open one
// SO_REUSEPORT listener per worker, print the start-up log, then wait for SIGINT/SIGTERM (or
// SHUTDOWN) and stop gracefully with exit status 0.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "server/core/command.hpp"
#include "server/commands/config.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/net/server.hpp"
#include "structures/registry.hpp"

#ifdef KVLAB_SERVER_HAVE_TOPO
#include "topology/placement.hpp"
#endif

namespace {

unsigned allowed_cpus(std::vector<unsigned>* list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  for (unsigned i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) list->push_back(i);
  return list->empty() ? 1u : static_cast<unsigned>(list->size());
}

std::string cpu_list_text(const std::vector<unsigned>& cpus) {
#ifdef KVLAB_SERVER_HAVE_TOPO
  return kvlab::topo::format_cpu_list(cpus);
#else
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  using kvlab::server::Config;
  Config cfg;
  kvlab::server::StartupConfig startup;
  std::vector<std::string> actions;
  std::string error;
  if (!startup.parse_args(argc, argv, &actions, &error) || !startup.to_config(&cfg, &error)) {
    std::fprintf(stderr, "kvlab-server: %s\n", error.c_str());
    return 2;
  }
  auto action = [&](std::string_view name) {
    return std::find(actions.begin(), actions.end(), name) != actions.end();
  };
  const bool list_commands = action("list-commands"), list_atomicity = action("list-atomicity");
  const bool list_backends = action("list-backends"), dry_run = action("placement-dry-run");
  if (action("help")) {
    std::fputs(kvlab::server::config_usage().c_str(), stdout);
    return 0;
  }
  if (action("version")) {
    std::printf("kvlab-server %s (%s)\n", KVLAB_VERSION, KVLAB_GIT_SHA);
    return 0;
  }
  if (action("list-config")) {
    std::fputs(kvlab::server::config_table_text().c_str(), stdout);
    return 0;
  }

  if (list_commands) {
    const auto& table = kvlab::server::CommandTable::instance();
    for (const auto* c : table.all())
      std::printf("%s\t%s\n", std::string(c->group).c_str(), table.full_name(c));
    return 0;
  }
  if (list_atomicity) {
    for (const auto& s : kvlab::server::Atomicity::schemes())
      std::printf("%-10s %s\n", std::string(s.name).c_str(), std::string(s.summary).c_str());
    return 0;
  }
  if (list_backends) {
    std::fputs(kvlab::format_backend_table(kvlab::TableFormat::text).c_str(), stdout);
    return 0;
  }

  std::vector<unsigned> allowed;
  const unsigned ncpus = allowed_cpus(&allowed);
  if (cfg.threads == 0) cfg.threads = ncpus;
  cfg.yield_on = cfg.yield == "yes" || (cfg.yield == "auto" && cfg.threads >= ncpus);
  if (cfg.backend.empty()) cfg.backend = std::string(kvlab::default_map_backend());

  const kvlab::BackendTraits* traits = kvlab::find_backend(cfg.backend);
  if (traits == nullptr) {
    std::fprintf(stderr, "kvlab-server: unknown backend '%s' (--list-backends shows them)\n",
                 cfg.backend.c_str());
    return 2;
  }
  if (traits->family == "queue") {
    std::fprintf(stderr, "kvlab-server: '%s' is a queue backend; the keyspace needs a map\n",
                 cfg.backend.c_str());
    return 2;
  }
  // The pub/sub inboxes: any FIFO queue backend fits, single-consumer ones included, because each
  // worker is the only consumer of its own inbox (any number of workers produce into it); a
  // quasi-FIFO one (fifo = false) would reorder one publisher's messages, so it is refused.
  const kvlab::BackendTraits* queue_traits = kvlab::find_backend(cfg.queue);
  if (queue_traits == nullptr) {
    std::fprintf(stderr,
                 "kvlab-server: unknown queue backend '%s' for --queue (--list-backends shows "
                 "them; queue backends are named queue/…)\n",
                 cfg.queue.c_str());
    return 2;
  }
  if (queue_traits->family != "queue") {
    std::fprintf(stderr,
                 "kvlab-server: --queue %s: '%s' is a %s backend, not a queue; --queue needs a "
                 "queue/… backend (default queue/kvlab-mpsc)\n",
                 cfg.queue.c_str(), cfg.queue.c_str(), std::string(queue_traits->family).c_str());
    return 2;
  }
  if (!queue_traits->fifo) {
    std::fprintf(stderr,
                 "kvlab-server: --queue %s: the backend lacks the fifo capability (per-producer "
                 "order), so pub/sub messages from one publisher could arrive out of order; use a "
                 "FIFO queue such as queue/kvlab-mpsc\n",
                 cfg.queue.c_str());
    return 2;
  }
  if (const kvlab::BackendTraits* eq = kvlab::find_backend(cfg.eviction_queue);
      eq == nullptr || eq->family != "queue" || eq->bounded) {
    std::fprintf(stderr,
                 "kvlab-server: --eviction-queue %s: needs an unbounded queue/… backend "
                 "(default queue/kvlab)\n",
                 cfg.eviction_queue.c_str());
    return 2;
  }
  if (!traits->concurrent_erase && cfg.threads > 1) {
    std::fprintf(stderr,
                 "kvlab-server: backend '%s' lacks the concurrent_erase capability (its erase may "
                 "not run concurrently with other operations), so DEL/expiry would race with "
                 "other workers; use --threads 1 or another backend\n",
                 cfg.backend.c_str());
    return 2;
  }

  // Placement.
  std::vector<std::vector<unsigned>> worker_cpus(cfg.threads);
  std::vector<std::string> reasons(cfg.threads, "not bound (placement none)");
  std::string summary;
  std::vector<std::string> warnings;
#ifdef KVLAB_SERVER_HAVE_TOPO
  {
    const kvlab::topo::PlanResult plan =
        kvlab::topo::plan_live(cfg.threads, cfg.placement, cfg.smt);
    if (!plan.ok) {
      std::fprintf(stderr, "kvlab-server: --placement %s: %s\n", cfg.placement.c_str(),
                   plan.error.c_str());
      return 2;
    }
    summary = plan.topology_summary;
    warnings = plan.warnings;
    for (const auto& w : plan.workers) {
      if (w.worker >= cfg.threads) continue;
      worker_cpus[w.worker] = w.cpus;
      reasons[w.worker] =
          w.cpus.empty() ? w.reason : "cpus " + cpu_list_text(w.cpus) + ": " + w.reason;
    }
  }
#else
  if (cfg.placement != "none") {
    std::fprintf(
        stderr, "kvlab-server: --placement %s needs the topology library, which this build lacks\n",
        cfg.placement.c_str());
    return 2;
  }
#endif
  if (dry_run) {
    std::printf("placement plan: %u workers, policy %s, smt %s\n", cfg.threads,
                cfg.placement.c_str(), cfg.smt.c_str());
    if (!summary.empty()) std::printf("machine: %s\n", summary.c_str());
    std::printf("allowed cpus: %s\n", cpu_list_text(allowed).c_str());
    for (unsigned i = 0; i < cfg.threads; ++i)
      std::printf("worker %u: %s\n", i, reasons[i].c_str());
    for (const auto& w : warnings) std::printf("warning: %s\n", w.c_str());
    return 0;
  }

  auto ks = kvlab::server::make_value_keyspace(cfg.backend, cfg.expected_keys);
  if (!ks) {
    std::fprintf(stderr, "kvlab-server: cannot create backend '%s'\n", cfg.backend.c_str());
    return 2;
  }

  // Room for maxclients connections plus listeners, epoll and the like (Redis does the same).
  {
    rlimit r{};
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < cfg.maxclients + 64u + cfg.threads * 4u) {
      r.rlim_cur = std::min<rlim_t>(r.rlim_max, cfg.maxclients + 64u + cfg.threads * 4u);
      setrlimit(RLIMIT_NOFILE, &r);
      getrlimit(RLIMIT_NOFILE, &r);
      if (r.rlim_cur < cfg.maxclients + 64u)
        std::fprintf(stderr, "kvlab-server: warning: open-file limit %llu is below maxclients %u\n",
                     static_cast<unsigned long long>(r.rlim_cur), cfg.maxclients);
    }
  }

  // Block the shutdown signals in every thread (workers inherit the mask); the main thread waits
  // for them with sigwait. SIGPIPE is ignored: a peer that vanished is an EPIPE, not a crash.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const std::string placement = cfg.placement;
  kvlab::server::Server server(cfg, std::move(ks), traits->name.data());
  server.set_placement_summary(summary);
  server.set_configure([&startup](kvlab::server::Server& s) { startup.apply(s); });
  if (!cfg.cluster_config_file.empty()) {
    std::ifstream in(cfg.cluster_config_file);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string error;
    auto cc =
        in ? kvlab::server::ClusterConfig::parse(json, server.cluster().my_id(), &error) : nullptr;
    if (cfg.cluster_mode != "yes" || cc == nullptr) {
      std::fprintf(stderr, "kvlab-server: --cluster-config %s: %s\n",
                   cfg.cluster_config_file.c_str(),
                   cfg.cluster_mode != "yes" ? "needs --cluster-mode yes"
                   : !in                     ? "cannot be read"
                                             : error.c_str());
      return 2;
    }
    server.cluster().set_config(std::move(cc));
  }
  if (!server.start(worker_cpus, reasons)) return 1;

  std::fprintf(stderr, "kvlab-server %s (git %s) pid %d\n", KVLAB_VERSION, KVLAB_GIT_SHA,
               static_cast<int>(getpid()));
  std::fprintf(stderr, "backend: %s (%s, reclamation: %s)\n", traits->name.data(),
               std::string(kvlab::to_string(traits->progress)).c_str(),
               std::string(kvlab::to_string(traits->reclamation)).c_str());
  std::fprintf(
      stderr, "queue: %s (%s%s, %s) for the per-worker pub/sub inboxes\n",
      queue_traits->name.data(), std::string(kvlab::to_string(queue_traits->progress)).c_str(),
      queue_traits->single_consumer ? ", single consumer: each worker drains its own" : "",
      queue_traits->bounded
          ? ("bounded to " + std::to_string(cfg.queue_capacity) + " + overflow list").c_str()
          : "unbounded");
  std::fprintf(stderr, "threads: %u (workers), mode: %s, placement: %s, allowed cpus: %s\n",
               cfg.threads, cfg.mode.c_str(), placement.c_str(), cpu_list_text(allowed).c_str());
  std::fprintf(stderr, "pipeline prefetch: %s\n",
               !cfg.prefetch ? "off"
               : server.keyspace().prefetch({}, [](const kvlab::server::Value&) {})
                   ? "on"
                   : "on, but the backend ignores the hint");
  if (server.cluster().enabled())
    std::fprintf(stderr, "cluster: %s, node id %s%s\n", cfg.cluster_mode.c_str(),
                 server.cluster().my_id().c_str(),
                 server.cluster().config() == nullptr ? ", waiting for KVLAB CLUSTER CONFIG" : "");
  std::fprintf(stderr, "atomicity: %s (multi-key commands, EXEC)\n",
               std::string(server.atomicity().name()).c_str());
  std::fprintf(stderr, "yield before sleeping: %s (--yield %s)\n", cfg.yield_on ? "on" : "off",
               cfg.yield.c_str());
  if (!summary.empty()) std::fprintf(stderr, "machine: %s\n", summary.c_str());
  if (const auto idle = startup.without_effect(); !idle.empty()) {
    std::string list;
    for (const auto& w : idle) list += (list.empty() ? "" : ", ") + w;
    std::fprintf(stderr,
                 "warning: accepted with no effect in kvlab (it has no persistence, replication, "
                 "logging or daemon mode): %s\n",
                 list.c_str());
  }
  for (const auto& w : warnings) std::fprintf(stderr, "placement warning: %s\n", w.c_str());
  for (unsigned i = 0; i < cfg.threads; ++i)
    std::fprintf(stderr, "worker %u: running on cpu %d, %s\n", i,
                 server.stats(i).cpu.load(std::memory_order_acquire), reasons[i].c_str());
  std::fprintf(stderr, "listening on %s:%d; ready to accept connections\n", cfg.bind.c_str(),
               cfg.port);
  server.run_until_signal();
  std::fprintf(stderr, "kvlab-server: bye\n");
  return 0;
}
