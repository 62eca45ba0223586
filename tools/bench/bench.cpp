// The kvlab bench driver: knob parsing helpers, the run order (maps, floor, queues) and the
// bookkeeping of the report. Formatting lives in output.cpp.
#include "tools/bench/bench.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <utility>

#include "structures/registry.hpp"
#include "tools/bench/backend_table.hpp"
#include "tools/bench/floor.hpp"
#include "tools/bench/harness.hpp"
#include "tools/bench/ycsb.hpp"
#include "topology/placement.hpp"

namespace kvlab::bench {

std::string KeyDist::describe() const {
  if (!zipf) return "uniform";
  char buf[32];
  std::snprintf(buf, sizeof buf, "zipf:%g", theta);
  return buf;
}

bool parse_dist(const std::string& text, KeyDist* out, std::string* error) {
  if (text == "uniform") {
    *out = KeyDist{};
    return true;
  }
  if (text == "zipf") {
    *out = KeyDist{true, 0.99};
    return true;
  }
  if (text.rfind("zipf:", 0) == 0) {
    char* end = nullptr;
    const double theta = std::strtod(text.c_str() + 5, &end);
    if (end != text.c_str() + 5 && *end == '\0' && theta > 0 && std::isfinite(theta)) {
      *out = KeyDist{true, theta};
      return true;
    }
  }
  *error = "--dist: expected uniform, zipf or zipf:THETA with THETA > 0, got '" + text + "'";
  return false;
}

bool parse_duration(const std::string& text, double* seconds) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string unit(end);
  if (unit == "ms") {
    v /= 1000;
  } else if (unit == "m" || unit == "min") {
    v *= 60;
  } else if (!(unit.empty() || unit == "s")) {
    return false;
  }
  if (!(v > 0) || !std::isfinite(v)) return false;
  *seconds = v;
  return true;
}

bool parse_thread_list(const std::string& text, std::vector<unsigned>* out) {
  std::vector<unsigned> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096) return false;
    v.push_back(static_cast<unsigned>(n));
    pos = comma + 1;
  }
  if (v.empty()) return false;
  *out = std::move(v);
  return true;
}

bool validate_config(const BenchConfig& c, std::string* error) {
  auto fail = [&](std::string msg) {
    *error = std::move(msg);
    return false;
  };
  if (c.keys < 1) return fail("--keys must be >= 1");
  if (!(c.prefill >= 0 && c.prefill <= 1)) return fail("--prefill must be in [0, 1]");
  if (!(c.update_pct >= 0 && c.update_pct <= 100)) return fail("--update must be in [0, 100]");
  if (c.key_size < 1 || c.key_size > 250) return fail("--key-size must be in [1, 250]");
  if (c.key_size < 8 && c.keys > (std::uint64_t{1} << (8 * c.key_size)))
    return fail("--key-size " + std::to_string(c.key_size) + " cannot encode " +
                std::to_string(c.keys) + " distinct keys");
  if (c.value_size < 1) return fail("--value-size must be >= 1");
  if (c.reps < 1) return fail("--reps must be >= 1");
  if (c.batch < 1 || c.batch > 32) return fail("--batch must be in [1, 32]");
  if (c.threads.empty()) return fail("--threads is empty");
  if (c.items < 1 || c.items >= (std::uint64_t{1} << 40))
    return fail("--items must be in [1, 2^40)");
  if (c.producers > 4096 || c.consumers > 4096) return fail("--producers/--consumers too large");
  return true;
}

namespace {

// Set by request_stop() from a signal handler: a lock-free atomic store is async-signal-safe.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// CPU time of the whole machine and of this process, for the busy-machine check: other
// processes' CPU use during the run is the machine's busy time minus ours.
struct CpuTimes {
  double machine_busy_s = 0;  // /proc/stat: user+nice+system+irq+softirq+steal, all CPUs
  double self_s = 0;          // getrusage(RUSAGE_SELF): user + system
  double wall_s = 0;
};

CpuTimes read_cpu_times() {
  CpuTimes t;
  if (std::FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
      const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
      t.machine_busy_s = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz;
    }
    std::fclose(f);
  }
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  t.self_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  t.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return t;
}

// (producers, consumers) pairs for the queue runs: the explicit ones, else half/half of each
// configured thread count (at least one of each).
std::vector<std::pair<unsigned, unsigned>> queue_shapes(const BenchConfig& c) {
  std::vector<std::pair<unsigned, unsigned>> out;
  if (c.producers || c.consumers) {
    out.emplace_back(std::max(1u, c.producers ? c.producers : c.consumers),
                     std::max(1u, c.consumers ? c.consumers : c.producers));
    return out;
  }
  for (const unsigned t : c.threads) {
    const unsigned p = std::max(1u, t / 2), q = std::max(1u, t - p);
    if (std::find(out.begin(), out.end(), std::make_pair(p, q)) == out.end())
      out.emplace_back(p, q);
  }
  return out;
}

std::string read_loadavg() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "";
  char buf[128] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  std::string s = ok ? buf : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

const detail::BenchEntry* find_entry(std::string_view name) {
  for (const auto* e : detail::bench_entries())
    if (e->name == name) return e;
  return nullptr;
}

}  // namespace

void request_stop(int signal_number) {
  g_stop_signal.store(signal_number, std::memory_order_relaxed);  // relaxed: a flag, polled
}
bool stop_requested() {
  return g_stop_signal.load(std::memory_order_relaxed) != 0;
}
int stop_signal() {
  return g_stop_signal.load(std::memory_order_relaxed);
}

bool run_bench(const BenchConfig& config, BenchReport* report, std::string* error) {
  if (!validate_config(config, error)) return false;
  const auto selected = select_backends(config.backends, error);
  if (selected.empty()) {
    if (error->empty()) *error = "no backend selected by '" + config.backends + "'";
    return false;
  }
  if (!config.ycsb.empty()) {
    const auto w = ycsb::workload_by_name(config.ycsb);
    if (!w) {
      *error = "--workload: expected ycsb-a … ycsb-f, got '" + config.ycsb + "'";
      return false;
    }
    std::string unordered, queues;
    for (const auto* t : selected) {
      if (t->family == "queue") {
        queues += (queues.empty() ? "" : ", ") + std::string(t->name);
      } else if (w->scan > 0 && !t->ordered) {
        unordered += (unordered.empty() ? "" : ", ") + std::string(t->name);
      }
    }
    if (!queues.empty()) {
      *error = "--workload " + config.ycsb + " runs on maps, not on queues (" + queues + ")";
      return false;
    }
    if (!unordered.empty()) {
      *error =
          "ycsb-e scans key ranges, which needs an ordered backend; not ordered: " + unordered +
          " (use --backend skiplist)";
      return false;
    }
  }
  report->config = config;
  if (!config.ycsb.empty()) report->config.floor = false;  // no floor for record workloads
  report->loadavg_before = read_loadavg();
  const CpuTimes cpu0 = read_cpu_times();
  detail::RunEnv env(report->config);
  if (config.placement != "none") {
    // Plan every thread count up front: a bad policy is a usage error, not an invalid row.
    std::set<unsigned> counts(config.threads.begin(), config.threads.end());
    for (const auto& [p, q] : queue_shapes(config)) counts.insert(p + q);
    for (const unsigned n : counts) {
      const auto& plan = env.plan(n);
      if (!plan.ok) {
        *error = "--placement " + config.placement + " for " + std::to_string(n) +
                 " threads: " + plan.error;
        return false;
      }
    }
  }

  std::vector<const detail::BenchEntry*> maps, queues;
  for (const auto* t : selected) {
    const auto* e = find_entry(t->name);
    if (!e) {
      Measurement m;
      m.backend = std::string(t->name);
      m.family = std::string(t->family);
      m.invalid_reason = "registered but not built into kvlab bench (tools/bench/meson.build)";
      report->results.push_back(m);
      report->warnings.push_back(m.backend + ": " + m.invalid_reason);
      continue;
    }
    (e->queue ? queues : maps).push_back(e);
  }
  const auto shapes = queue_shapes(config);
  const unsigned per_map =
      static_cast<unsigned>(config.threads.size()) * (config.via_adapter ? 2u : 1u);
  const bool floor = report->config.floor && !maps.empty();
  env.set_total(static_cast<unsigned>(maps.size()) * per_map +
                (floor ? 2u * static_cast<unsigned>(config.threads.size()) : 0u) +
                static_cast<unsigned>(queues.size() * shapes.size()));

  for (const auto* e : maps) {
    if (stop_requested()) break;
    auto rows = e->run_map(env);
    for (auto& r : rows) report->results.push_back(std::move(r));
  }
  if (floor && !stop_requested()) report->floor = detail::run_floor(env, env.max_footprint());
  for (const auto* e : queues) {
    for (const auto& [p, q] : shapes) {
      if (stop_requested()) break;
      auto rows = e->run_queue(env, p, q);
      if (stop_requested()) break;  // interrupted during the run: dropped
      for (auto& r : rows) report->results.push_back(std::move(r));
    }
  }
  report->footprint_method =
      "largest table footprint over all map runs; per table: growth of heap bytes in use "
      "(glibc mallinfo2, all arenas) or of RSS, whichever is larger, from before construction to "
      "after the prefill and again after the run; floor array = max(that, 1 MiB)";
  report->loadavg_after = read_loadavg();
  report->interrupted = stop_requested();
  if (config.counters) report->counters_note = detail::last_counters_note();
  // A busy machine is one where other processes took CPU time while we measured: the machine's
  // busy time minus ours, per second of the run. Asking for more threads than CPUs is not that
  // (cpu% then drops by design), and gets its own note.
  const CpuTimes cpu1 = read_cpu_times();
  const double wall = cpu1.wall_s - cpu0.wall_s;
  const double others = wall > 0 ? std::max(0.0, (cpu1.machine_busy_s - cpu0.machine_busy_s) -
                                                     (cpu1.self_s - cpu0.self_s)) /
                                       wall
                                 : 0;
  report->other_cpu_load = others;
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  if (others > 0.25) {
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "busy machine: other processes kept %.2f of the %u CPUs busy on average while "
                  "this ran (loadavg %s -> %s); rates are then lower and noisier than on an idle "
                  "machine",
                  others, cpus, report->loadavg_before.c_str(), report->loadavg_after.c_str());
    report->warnings.push_back(buf);
  }
  const unsigned most = *std::max_element(config.threads.begin(), config.threads.end());
  if (most > cpus) {
    report->warnings.push_back(
        "oversubscribed: " + std::to_string(most) + " threads on " + std::to_string(cpus) +
        " CPUs; those rows measure time slicing too (their cpu% is below 100 by design)");
  }
  report->topology_summary = topo::live_topology_summary();
  report->placement_notes = env.placement_notes();
  for (auto& w : env.warnings()) report->warnings.push_back(w);
  return true;
}

}  // namespace kvlab::bench
