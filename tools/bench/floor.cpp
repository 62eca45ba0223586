// The memory floor: what the machine's memory system allows for random access over a data set as
// large as the largest table, with the same thread counts. Two variants:
//   random-read    independent random 8-byte reads (the CPU overlaps the misses: a throughput
//                  ceiling for any table whose operation touches at least one random line);
//   pointer-chase  dependent reads along one random cycle (Sattolo's algorithm), i.e. latency
//                  bound, like walking a chain or a skiplist tower.
#include "tools/bench/floor.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tools/bench/harness.hpp"

namespace kvlab::bench::detail {

std::vector<FloorRow> run_floor(RunEnv& env, std::size_t bytes) {
  const BenchConfig& c = env.config();
  const std::size_t n = std::max<std::size_t>(bytes / 8, std::size_t{1} << 17);
  // One random cycle through all n slots: a[i] is the next index to visit.
  std::vector<std::uint64_t> a(n);
  for (std::size_t i = 0; i < n; ++i) a[i] = i;
  Rng rng(42);
  for (std::size_t i = n - 1; i > 0; --i) std::swap(a[i], a[rng.below(i)]);  // Sattolo: j < i

  std::vector<FloorRow> rows;
  for (const unsigned t : c.threads) {
    FloorRow row;
    row.threads = t;
    row.array_bytes = n * 8;
    const ThreadPlan& plan = env.plan(t);
    if (!plan.ok) continue;
    for (const bool chase : {false, true}) {
      GbSpec spec;
      spec.name = chase ? "floor/pointer-chase" : "floor/random-read";
      spec.threads = t;
      spec.reps = c.reps;
      spec.min_time_s = std::min(c.duration_s, 1.0);
      const std::uint64_t* data = a.data();
      const GbStats s = run_gb(spec, [&](benchmark::State& state) {
        const unsigned ti = static_cast<unsigned>(state.thread_index());
        std::string err;
        if (!RunEnv::pin(plan, ti, &err)) {
          state.SkipWithError("placement failed");
          return;
        }
        std::uint64_t sum = 0;
        if (chase) {
          std::uint64_t cur = (n / t) * ti;
          for (auto _ : state) cur = data[cur];
          sum = cur;
        } else {
          Rng r(0xF100Dull + ti);
          for (auto _ : state) sum += data[r.below(n)];
        }
        benchmark::DoNotOptimize(sum);
        state.counters["ops"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
      });
      Measurement m;
      m.backend = spec.name;
      m.family = "floor";
      m.threads = t;
      m.valid = s.ok;
      m.reps = s.reps;
      m.mops = s.median;
      m.mops_min = s.min;
      m.mops_max = s.max;
      m.invalid_reason = s.error;
      m.footprint_bytes = n * 8;
      m.cpu_share = s.cpu_share;
      env.report(m);
      (chase ? row.chase_mops : row.mops) = s.median;
      (chase ? row.chase_mops_min : row.mops_min) = s.min;
      (chase ? row.chase_mops_max : row.mops_max) = s.max;
      row.reps = s.reps;
      (chase ? row.chase_cpu_share : row.cpu_share) = s.cpu_share;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace kvlab::bench::detail
