// One backend's benchmark instantiations. Compiled once per backend by tools/bench/meson.build
// with KVLAB_BENCH_HEADER (<header>), KVLAB_BENCH_TYPE (the backend's class template),
// KVLAB_BENCH_ENTRY (the table entry's name) and KVLAB_BENCH_QUEUE (0 or 1).
#include KVLAB_BENCH_HEADER

#include <cstdint>

#include "tools/bench/backend_table.hpp"

#if KVLAB_BENCH_QUEUE
#include "tools/bench/queue_workload.hpp"

namespace kvlab::bench::generated {
namespace {
std::vector<Measurement> run(detail::RunEnv& env, unsigned producers, unsigned consumers) {
  return detail::run_queue_backend<KVLAB_BENCH_TYPE>(env, producers, consumers);
}
}  // namespace
extern const detail::BenchEntry KVLAB_BENCH_ENTRY{KVLAB_BENCH_TYPE<std::uint64_t>::kTraits.name,
                                                  true, nullptr, &run};
}  // namespace kvlab::bench::generated

#else
#include "tools/bench/map_workload.hpp"

namespace kvlab::bench::generated {
namespace {
std::vector<Measurement> run(detail::RunEnv& env) {
  return detail::run_map_backend<KVLAB_BENCH_TYPE>(env);
}
}  // namespace
extern const detail::BenchEntry KVLAB_BENCH_ENTRY{KVLAB_BENCH_TYPE<std::uint64_t>::kTraits.name,
                                                  false, &run, nullptr};
}  // namespace kvlab::bench::generated
#endif
