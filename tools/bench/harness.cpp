// Google Benchmark glue, placement, footprint probes and progress lines for kvlab bench.
#include "tools/bench/harness.hpp"

#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <numeric>

#include "structures/common/pool.hpp"
#include "topology/placement.hpp"

namespace kvlab::bench::detail {

namespace {

std::string g_counters_note;  // driver thread only

bool is_prime(std::uint64_t n) {
  if (n < 2) return false;
  for (std::uint64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

// Collects the aggregates Google Benchmark computes over the repetitions (median, and the
// "min"/"max" statistics we register), or the single run when reps == 1.
class Collector final : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.error_occurred) {
        error = r.error_message.empty() ? "benchmark reported an error" : r.error_message;
        continue;
      }
      const auto it = r.counters.find("ops");
      if (it == r.counters.end()) continue;
      const double v = it->second.value;
      const double wall = r.real_accumulated_time * static_cast<double>(r.threads);
      const double share = wall > 0 ? r.cpu_accumulated_time / wall : 0;
      if (r.run_type == Run::RT_Aggregate) {
        if (r.aggregate_name == "median") {
          median = v;
          cpu_share = share;
        }
        if (r.aggregate_name == "min") min = v;
        if (r.aggregate_name == "max") max = v;
        have_aggregates = true;
      } else {
        singles.push_back(v);
        single_shares.push_back(share);
      }
    }
  }
  std::string error;
  double median = 0, min = 0, max = 0;
  bool have_aggregates = false;
  std::vector<double> singles, single_shares;
  double cpu_share = 0;
};

double stat_min(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}
double stat_max(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

void init_benchmark_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    static char name[] = "kvlab-bench";
    static char* argv[] = {name, nullptr};
    int argc = 1;
    benchmark::Initialize(&argc, argv);
  });
}

}  // namespace

std::uint64_t scramble_prime(std::uint64_t keys) {
  // Large primes near 2^31·φ; one of them does not divide keys (keys has few prime factors).
  for (std::uint64_t p = 2654435761ull;; p += 2)
    if (is_prime(p) && keys % p != 0) return p;
}

std::size_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages_total = 0, pages_rss = 0;
  f >> pages_total >> pages_rss;
  return pages_rss * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

void release_free_memory() {
  // The calling thread's cache of freed blocks (the own structures' entries) first, so that a
  // table cannot grow into blocks cached from the previous one unseen.
  kvlab::pool::drain();
  malloc_trim(0);
  // TBB's allocator (tbbmalloc) is dlopen'ed by libtbb when installed; its memory is invisible to
  // mallinfo2, and it keeps freed blocks. TBBMALLOC_CLEAN_ALL_BUFFERS = 0 in
  // tbb/scalable_allocator.h.
  if (void* lib = dlopen("libtbbmalloc.so.2", RTLD_LAZY | RTLD_NOLOAD)) {
    using Command = int (*)(int, void*);
    if (auto* cmd = reinterpret_cast<Command>(dlsym(lib, "scalable_allocation_command")))
      cmd(0, nullptr);
    dlclose(lib);
  }
}

RunEnv::RunEnv(const BenchConfig& config, ProgressFn progress)
    : config_(config), progress_(std::move(progress)) {}

const ThreadPlan& RunEnv::plan(unsigned n) {
  auto it = plans_.find(n);
  if (it != plans_.end()) return it->second;
  ThreadPlan p;
  if (config_.placement != "none") {
    const topo::PlanResult r = topo::plan_live(n, config_.placement);
    if (!r.ok) {
      p.ok = false;
      p.error = r.error;
    } else {
      for (const auto& w : r.workers) {
        p.cpus.push_back(w.cpus);
        p.numa.push_back(w.numa_nodes);
        p.reasons.push_back(w.reason);
        placement_notes_.push_back("threads=" + std::to_string(n) + ": worker " +
                                   std::to_string(w.worker) + " -> CPUs " +
                                   topo::format_cpu_list(w.cpus) + " (" + w.reason + ")");
      }
      for (const auto& w : r.warnings) warnings_.push_back("placement: " + w);
      if (p.cpus.size() < n) {
        p.ok = false;
        p.error = "placement planned " + std::to_string(p.cpus.size()) + " workers for " +
                  std::to_string(n) + " threads";
      }
    }
  }
  return plans_.emplace(n, std::move(p)).first->second;
}

bool RunEnv::pin(const ThreadPlan& plan, unsigned i, std::string* error) {
  if (i >= plan.cpus.size() || plan.cpus[i].empty()) return true;
  topo::WorkerPlacement w;
  w.worker = i;
  w.cpus = plan.cpus[i];
  w.numa_nodes = plan.numa[i];
  w.reason = plan.reasons[i];
  return topo::bind_current_thread(w, error);
}

void RunEnv::report(const Measurement& m) {
  ++done_;
  if (progress_) progress_(m);
  if (config_.quiet) return;
  // Appends only: GCC 12 warns falsely (-Wrestrict, PR 105329) on `"literal" + std::string`.
  std::string what = m.backend;
  if (m.via_adapter) what.append(" (adapter)");
  if (m.family == "queue") {
    what.append(" ").append(std::to_string(m.producers)).append("P/");
    what.append(std::to_string(m.consumers)).append("C");
  } else {
    what.append(" threads=").append(std::to_string(m.threads));
  }
  if (m.valid) {
    std::fprintf(
        stderr,
        "[%u/%u] %-28s %9.3f Mops/s (median of %u, min %.3f, max %.3f, cpu %.0f%%) valid%s%s\n",
        done_, total_, what.c_str(), m.mops / 1e6, m.reps, m.mops_min / 1e6, m.mops_max / 1e6,
        m.cpu_share * 100, m.note.empty() ? "" : "; ", m.note.c_str());
  } else {
    std::fprintf(stderr, "[%u/%u] %-28s INVALID: %s\n", done_, total_, what.c_str(),
                 m.invalid_reason.c_str());
  }
}

GbStats run_gb(const GbSpec& spec, const std::function<void(benchmark::State&)>& body) {
  init_benchmark_once();
  cpu_set_t saved;
  CPU_ZERO(&saved);
  const bool have_saved = sched_getaffinity(0, sizeof saved, &saved) == 0;

  benchmark::ClearRegisteredBenchmarks();
  auto* b = benchmark::RegisterBenchmark(spec.name.c_str(), body);
  b->Threads(static_cast<int>(spec.threads))->Repetitions(static_cast<int>(spec.reps));
  // Every repetition reaches the collector as well as the aggregates: the manifest keeps them.
  b->ReportAggregatesOnly(false);
  if (spec.manual_time) {
    b->UseManualTime();
  } else {
    b->UseRealTime();
  }
  if (spec.iterations > 0) {
    b->Iterations(spec.iterations);
  } else {
    b->MinTime(spec.min_time_s);
  }
  if (spec.setup) b->Setup(spec.setup);
  if (spec.teardown) b->Teardown(spec.teardown);
  b->ComputeStatistics("min", stat_min);
  b->ComputeStatistics("max", stat_max);

  Collector c;
  // Opened here, after the prefill: only the benchmark's threads (created by Google Benchmark
  // from this thread, so inherited) and its own bookkeeping are counted.
  CounterSet counters;
  static std::string note;
  const bool counting = spec.counters && (note.clear(), counters.open_self(&note));
  if (counting) counters.start();
  benchmark::RunSpecifiedBenchmarks(&c);
  const CounterValues counted = counting ? counters.stop() : CounterValues{};
  g_counters_note = note;
  benchmark::ClearRegisteredBenchmarks();
  // Benchmark thread 0 is this thread: undo its pinning so that the next prefill is unpinned.
  if (have_saved) sched_setaffinity(0, sizeof saved, &saved);

  GbStats s;
  s.counters = counted;
  if (!c.error.empty()) {
    s.error = c.error;
    return s;
  }
  if (c.have_aggregates) {
    s.median = c.median;
    s.min = c.min;
    s.max = c.max;
    s.reps = spec.reps;
    s.cpu_share = c.cpu_share;
    s.values = c.singles;
  } else if (!c.singles.empty()) {
    std::vector<double> v = c.singles;
    std::sort(v.begin(), v.end());
    s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    s.min = v.front();
    s.max = v.back();
    s.reps = static_cast<unsigned>(v.size());
    std::vector<double> shares = c.single_shares;
    std::sort(shares.begin(), shares.end());
    s.cpu_share = shares[shares.size() / 2];
    s.values = c.singles;
  } else {
    s.error = "Google Benchmark reported no run";
    return s;
  }
  s.ok = true;
  return s;
}

namespace {
std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

const std::string& last_counters_note() {
  return g_counters_note;
}

PrefillProgress::PrefillProgress(std::string what, std::uint64_t total, bool quiet)
    : what_(std::move(what)), total_(total), quiet_(quiet) {
  start_ns_ = steady_ns();
  next_ns_ = start_ns_ + 1000000000;
}

PrefillProgress::~PrefillProgress() {
  if (!quiet_ && printed_) report(done_, true);
}

void PrefillProgress::report(std::uint64_t done, bool last) {
  const std::int64_t now = steady_ns();
  done_ = done;
  if (!last && now < next_ns_) return;
  next_ns_ = now + 1000000000;
  printed_ = true;
  const double secs = static_cast<double>(now - start_ns_) / 1e9;
  const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  const double eta = rate > 0 ? static_cast<double>(total_ - std::min(done, total_)) / rate : 0;
  std::fprintf(stderr, "prefill %s: %" PRIu64 "/%" PRIu64 " keys (%.0f%%), %.2f M/s, %s %.1f s\n",
               what_.c_str(), done, total_, total_ ? 100.0 * done / total_ : 100.0, rate / 1e6,
               last ? "took" : "ETA", last ? secs : eta);
}

}  // namespace kvlab::bench::detail
