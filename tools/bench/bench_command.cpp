// `kvlab bench`: structure microbenchmarks (see tools/bench/bench.hpp for the method).
// Compiled into the kvlab executable; registered by add_bench().
#include <csignal>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "structures/registry.hpp"
#include "tools/bench/bench.hpp"
#include "tools/cli/subcommands.hpp"

namespace kvlab::cli {
namespace {

struct BenchArgs {
  bench::BenchConfig config;
  std::string backend;  // empty: from --family, else "map"
  std::string family;
  std::string threads;
  std::string dist = "uniform";
  std::string duration = "2s";
  std::string format = "table";
  std::string out;
  bool list = false;
  bool no_floor = false;
  std::string workload;
};

// SIGINT/SIGTERM stop the run (bench::request_stop); the finished measurements are still
// printed and written. A second signal ends the process at once (the handler is reset to the
// default after the first).
extern "C" void on_stop_signal(int sig) {
  bench::request_stop(sig);
  std::signal(sig, SIG_DFL);
}

std::vector<std::string> own_command_line() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> out;
  std::string arg;
  while (std::getline(f, arg, '\0')) out.push_back(arg);
  return out;
}

[[noreturn]] void fail(const std::string& msg, int code = 2) {
  std::fprintf(stderr, "kvlab bench: %s\n", msg.c_str());
  throw CLI::RuntimeError(code);
}

void run(BenchArgs& a) {
  if (a.list) {
    std::fputs(format_backend_table(TableFormat::text).c_str(), stdout);
    return;
  }
  bench::BenchConfig& c = a.config;
  if (!a.backend.empty()) {
    c.backends = a.backend;
  } else if (!a.family.empty()) {
    c.backends = a.family;
  }
  if (!a.family.empty() && !a.backend.empty()) {
    // Both given: keep the named backends of that family only.
    std::string error;
    const auto sel = select_backends(a.backend, &error);
    if (sel.empty()) fail(error);
    std::string names;
    for (const auto* t : sel) {
      if (t->family != a.family && !(a.family == "map" && t->family != "queue")) continue;
      names += (names.empty() ? "" : ",") + std::string(t->name);
    }
    if (names.empty()) fail("no backend of family '" + a.family + "' in '" + a.backend + "'");
    c.backends = names;
  }
  if (a.threads.empty()) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    c.threads = n > 1 ? std::vector<unsigned>{1, n} : std::vector<unsigned>{1};
  } else if (!bench::parse_thread_list(a.threads, &c.threads)) {
    fail("--threads: expected a list like 1,2,4, got '" + a.threads + "'");
  }
  std::string error;
  if (!bench::parse_dist(a.dist, &c.dist, &error)) fail(error);
  if (!bench::parse_duration(a.duration, &c.duration_s))
    fail("--duration: expected e.g. 2s, 500ms or 1.5, got '" + a.duration + "'");
  c.floor = !a.no_floor;
  c.ycsb = a.workload;
  c.argv = own_command_line();

  // Open the output file before measuring for minutes.
  std::ofstream out_file;
  if (!a.out.empty()) {
    out_file.open(a.out, std::ios::trunc);
    if (!out_file) fail("cannot write --out " + a.out, 1);
  }
  bench::BenchReport report;
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const bool ok = bench::run_bench(c, &report, &error);
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!ok) fail(error);

  const std::string formatted = a.format == "json"  ? bench::format_json(report)
                                : a.format == "csv" ? bench::format_csv(report)
                                                    : bench::format_table(report);
  if (!a.out.empty()) {
    out_file << formatted;
    out_file.close();
    if (!out_file) fail("writing " + a.out + " failed", 1);
    std::fputs(bench::format_table(report).c_str(), stdout);
    std::fprintf(stderr, "kvlab bench: %s written to %s\n", a.format.c_str(), a.out.c_str());
  } else {
    std::fputs(formatted.c_str(), stdout);
  }
  std::fflush(stdout);
  if (report.interrupted) {
    // As a shell reports a process ended by that signal: 128 + its number.
    const int sig = bench::stop_signal();
    fail(std::string("interrupted by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + " after " +
             std::to_string(report.results.size()) + " finished measurement(s)",
         128 + sig);
  }
  unsigned invalid = 0;
  for (const auto& m : report.results) invalid += !m.valid;
  if (invalid) fail(std::to_string(invalid) + " measurement(s) failed validation", 3);
}

}  // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand(
      "bench",
      "Microbenchmarks of the backends (Google Benchmark): maps with the ASCYLIB/Synchrobench "
      "knobs and a memory floor, queues with producers/consumers; every run validated");
  bench::BenchConfig& c = a->config;
  sub->add_option("--backend", a->backend,
                  "Backend names, a family (hash, skiplist, map, queue) or all (default: map)");
  sub->add_option("--family", a->family, "Shorthand for --backend FAMILY (e.g. queue)")
      ->check(CLI::IsMember({"hash", "skiplist", "map", "queue"}));
  sub->add_option("--threads", a->threads, "Thread counts, e.g. 1,2,4 (default: 1,nproc)");
  sub->add_option("--keys", c.keys, "Key range")->capture_default_str();
  sub->add_option("--prefill", c.prefill, "Fraction of the key range present at the start")
      ->capture_default_str();
  sub->add_option("--update", c.update_pct,
                  "Percent of operations that write (half insert, half erase)")
      ->capture_default_str();
  sub->add_option("--dist", a->dist, "Key distribution: uniform, zipf or zipf:THETA")
      ->capture_default_str();
  sub->add_option("--key-size", c.key_size, "Key bytes (index big-endian, padded)")
      ->capture_default_str();
  sub->add_option("--value-size", c.value_size,
                  "Value bytes: <= 8 stores std::uint64_t, more stores std::string")
      ->capture_default_str();
  sub->add_option("--duration", a->duration, "Minimum time per repetition (2s, 500ms)")
      ->capture_default_str();
  sub->add_option("--reps", c.reps, "Repetitions (median, min, max reported)")
      ->capture_default_str();
  sub->add_option("--placement", c.placement,
                  "Thread placement: none, compact, scatter, per-l3, per-numa, explicit:LIST")
      ->capture_default_str();
  sub->add_option("--format", a->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  sub->add_option("--out", a->out,
                  "Write the --format output here (the table still goes to stdout)");
  sub->add_flag("--via-adapter", c.via_adapter,
                "Also measure every map through AnyKeyspace (one virtual call per operation)");
  sub->add_flag("--epoch-guards", c.epoch_guards,
                "Own structures: enter an epoch guard per operation (full fence) instead of the "
                "default QSBR mode with a quiescent point every 256 operations");
  sub->add_option("--batch", c.batch,
                  "Maps: run operations in windows of N (1-32) whose keys are drawn ahead and "
                  "passed to the backend's prefetch hint if it has one (hash/kvlab), like a "
                  "pipelined batch in kvlab-server; 1 = one at a time")
      ->capture_default_str();
  sub->add_option("--producers", c.producers,
                  "Queues: producer threads (default: half of each --threads)");
  sub->add_option("--consumers", c.consumers, "Queues: consumer threads");
  sub->add_option("--items", c.items, "Queues: items per repetition")->capture_default_str();
  sub->add_option("--capacity", c.queue_capacity, "Queues: capacity of bounded queues")
      ->capture_default_str();
  sub->add_flag("--no-floor", a->no_floor, "Skip the memory-floor rows");
  sub->add_flag("--counters", c.counters,
                "perf_event_open counters per operation: cycles, instructions, LLC and L1D "
                "misses, branch misses (where the PMU is exposed), task-clock, context "
                "switches, migrations, page faults");
  sub->add_option("--workload", a->workload,
                  "YCSB core workload ycsb-a … ycsb-f over the map backends (--keys records of "
                  "10 x 100 B; ycsb-e needs an ordered backend) instead of the find/insert/erase "
                  "mix");
  sub->add_flag("-q,--quiet", c.quiet, "No progress lines on stderr (prefill progress included)");
  sub->add_flag("--list", a->list, "List the backends and exit");
  sub->callback([a] { run(*a); });
}

}  // namespace kvlab::cli
