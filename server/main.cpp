// kvlab-server: a multi-threaded RESP2 server on kvlab's pluggable keyspace.
//
// Start-up: parse flags (CLI11; --config FILE reads the same flags from a file), choose and check
// the backend, plan worker placement, open one SO_REUSEPORT listener per worker, print the start-up
// log, then wait for SIGINT/SIGTERM (or SHUTDOWN) and stop gracefully with exit status 0.
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "server/command.hpp"
#include "server/keyspace_factory.hpp"
#include "server/server.hpp"
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
  bool list_backends = false, dry_run = false;
  std::string protected_mode = "yes";
  std::string prefetch = "yes";
  std::string lua_undeclared = "yes";
  std::string enable_debug = "no";
  std::size_t expected_keys = 1024;

  CLI::App app{"kvlab-server: a multi-threaded RESP2 server on kvlab's pluggable keyspace"};
  app.set_version_flag("--version",
                       std::string("kvlab-server ") + KVLAB_VERSION + " (" + KVLAB_GIT_SHA + ")");
  app.set_config("--config", "", "Read flags from a config file (TOML or INI: `port = 7000`)");
  // A name the server does not know is an error, not a setting silently dropped: `bakend = …`
  // would otherwise start the server on the default backend.
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_option("--bind", cfg.bind, "Address to listen on")->capture_default_str();
  app.add_option("--port", cfg.port, "TCP port")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option(
         "--threads", cfg.threads,
         "Worker threads, each with its own event loop (default: CPUs allowed to the process)")
      ->check(CLI::Range(1u, 1024u));
  app.add_option("--backend", cfg.backend,
                 std::string("Keyspace backend (default: ") +
                     std::string(kvlab::default_map_backend()) + "; see --list-backends)");
  app.add_option("--queue", cfg.queue,
                 "Queue backend of the per-worker pub/sub inboxes (a queue/… name; see "
                 "--list-backends)")
      ->capture_default_str();
  app.add_option("--queue-capacity", cfg.queue_capacity,
                 "Capacity of each inbox for bounded queue backends (queue/cds-vyukov); a full "
                 "inbox spills to an overflow list, nothing is dropped")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{2}, std::size_t{1} << 30));
  app.add_flag("--list-backends", list_backends, "Print the registered backends and exit");
  std::string atomicity_help = "How multi-key commands, EXEC and scripts are made atomic:";
  for (const auto& s : kvlab::server::Atomicity::schemes())
    atomicity_help += " " + std::string(s.name) + " (" + std::string(s.summary) + ");";
  app.add_option("--atomicity", cfg.atomicity, atomicity_help)
      ->capture_default_str()
      ->check([](const std::string& v) {
        return kvlab::server::Atomicity::find(v) != nullptr
                   ? std::string()
                   : "unknown atomicity scheme '" + v + "' (--list-atomicity shows them)";
      });
  bool list_atomicity = false;
  app.add_flag("--list-atomicity", list_atomicity, "Print the atomicity schemes and exit");
  bool list_commands = false;
  app.add_flag("--list-commands", list_commands,
               "Print every command as 'group<TAB>name' (Redis's COMMAND DOCS groups) and exit");
  app.add_option("--maxclients", cfg.maxclients, "Maximum simultaneous clients")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10000000u));
  std::string maxmemory = "0";
  app.add_option("--maxmemory", maxmemory,
                 "Memory limit for the dataset (bytes; units k kb m mb g gb as Redis); 0 = none")
      ->capture_default_str()
      ->check([](const std::string& v) {
        std::uint64_t b = 0;
        return kvlab::server::parse_memory_units(v, &b) ? std::string()
                                                        : "invalid memory value '" + v + "'";
      });
  app.add_option("--maxmemory-policy", cfg.maxmemory_policy,
                 "What to evict above maxmemory: noeviction, allkeys-lru, allkeys-lfu, "
                 "allkeys-random, volatile-lru, volatile-lfu, volatile-random, volatile-ttl, "
                 "allkeys-sieve, allkeys-s3fifo")
      ->capture_default_str()
      ->check([](const std::string& v) {
        return kvlab::server::parse_evict_policy(v) ? std::string()
                                                    : "unknown maxmemory policy '" + v + "'";
      });
  app.add_option("--maxmemory-samples", cfg.maxmemory_samples, "Keys sampled per eviction")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--eviction-queue", cfg.eviction_queue,
                 "Queue backend of allkeys-s3fifo's FIFOs (any unbounded queue/… backend)")
      ->capture_default_str();
  app.add_option("--requirepass", cfg.requirepass, "Require AUTH with this password");
  app.add_option("--protected-mode", protected_mode,
                 "yes: refuse non-loopback clients unless --requirepass is set")
      ->capture_default_str()
      ->check(CLI::IsMember({"yes", "no"}));
  app.add_option("--prefetch", prefetch,
                 "yes: before running a window of pipelined commands, prefetch their keys' "
                 "buckets, entries and values (backends with a prefetch hint: hash/kvlab)")
      ->capture_default_str()
      ->check(CLI::IsMember({"yes", "no"}));
  app.add_option("--yield", cfg.yield,
                 "yes: a worker that just served events yields the CPU once and polls again "
                 "before it sleeps, so clients sharing its CPU run first; auto: yes when the "
                 "workers are at least as many as the allowed CPUs")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "yes", "no"}));
  app.add_option("--enable-debug-command", enable_debug,
                 "Redis's enable-debug-command: yes allows DEBUG (test suites use it), local only "
                 "from loopback connections, no refuses it")
      ->capture_default_str()
      ->check(CLI::IsMember({"no", "yes", "local"}));
  app.add_option("--lua-undeclared-keys", lua_undeclared,
                 "yes (Redis's behaviour): scripts may access keys they did not declare in KEYS; "
                 "every script then runs exclusive of every other command. no (a research "
                 "option): under --atomicity key-locks such an access is an error, and scripts "
                 "lock only their declared keys, so scripts on disjoint keys run in parallel")
      ->capture_default_str()
      ->check(CLI::IsMember({"yes", "no"}));
  app.add_option("--cluster-mode", cfg.cluster_mode,
                 "Redis Cluster protocol: no; emulated (one node owning every slot, for cluster "
                 "clients); yes (the slots a KVLAB CLUSTER CONFIG gives this node)")
      ->capture_default_str()
      ->check(CLI::IsMember({"no", "emulated", "yes"}));
  app.add_option("--cluster-node-id", cfg.cluster_node_id,
                 "This node's id (40 lowercase hex characters); random when not given")
      ->check([](const std::string& v) {
        const bool ok =
            v.size() == 40 && v.find_first_not_of("0123456789abcdef") == std::string::npos;
        return ok ? std::string() : "a node id is 40 lowercase hex characters";
      });
  app.add_option("--cluster-announce-ip", cfg.cluster_announce_ip,
                 "Address shown to cluster clients in CLUSTER SLOTS/NODES (default: --bind)");
  app.add_option("--cluster-config", cfg.cluster_config_file,
                 "Cluster configuration (JSON, as KVLAB CLUSTER CONFIG takes) loaded at startup "
                 "(--cluster-mode yes)");
  app.add_option("--placement", cfg.placement,
                 "Worker placement: none, compact, scatter, per-l3, per-l3:pin, per-numa, "
                 "explicit:LIST")
      ->capture_default_str();
  app.add_option("--smt", cfg.smt, "SMT use for placement: auto, on, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "on", "off"}));
  app.add_flag("--placement-dry-run", dry_run, "Print the placement plan and exit");
  app.add_option("--expected-keys", expected_keys, "Initial capacity hint for the keyspace")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  cfg.protected_mode = protected_mode == "yes";
  kvlab::server::parse_memory_units(maxmemory, &cfg.maxmemory);
  cfg.prefetch = prefetch == "yes";
  cfg.lua_undeclared_keys = lua_undeclared == "yes";
  cfg.enable_debug_command = enable_debug;

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

  auto ks = kvlab::server::make_value_keyspace(cfg.backend, expected_keys);
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
  std::fprintf(stderr, "threads: %u, mode: shared, placement: %s, allowed cpus: %s\n", cfg.threads,
               placement.c_str(), cpu_list_text(allowed).c_str());
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
