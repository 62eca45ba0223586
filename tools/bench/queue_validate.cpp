// Validation of the queue workload (queue_workload.hpp): no loss, no duplicates, per-producer FIFO.
#include <string>
#include <vector>

#include "tools/bench/queue_workload.hpp"

namespace kvlab::bench::detail {

void QueueShared::reset() {
  start_arrived.store(0, std::memory_order_relaxed);
  end_arrived.store(0, std::memory_order_relaxed);
  consumed.store(0, std::memory_order_relaxed);
  producers_done.store(0, std::memory_order_relaxed);
  aborted.store(false, std::memory_order_relaxed);
  for (auto& l : logs) l.clear();
}

void QueueShared::validate() {
  ++calls;
  if (!failure.empty()) return;  // keep the first failure
  std::vector<std::uint64_t> offset(producers + 1, 0);
  for (unsigned p = 0; p < producers; ++p) offset[p + 1] = offset[p] + items_of(p);
  std::vector<std::uint8_t> seen(items, 0);
  std::uint64_t popped = 0, duplicates = 0, foreign = 0, fifo_violations = 0;
  std::vector<std::int64_t> last(producers);
  for (const auto& log : logs) {
    std::fill(last.begin(), last.end(), -1);
    for (const std::uint64_t v : log) {
      const std::uint64_t p = v >> 40, s = v & ((std::uint64_t{1} << 40) - 1);
      if (p >= producers || s >= items_of(static_cast<unsigned>(p))) {
        ++foreign;
        continue;
      }
      ++popped;
      std::uint8_t& flag = seen[offset[p] + s];
      if (flag) ++duplicates;
      flag = 1;
      if (static_cast<std::int64_t>(s) <= last[p]) ++fifo_violations;
      last[p] = static_cast<std::int64_t>(s);
    }
  }
  std::uint64_t missing = 0;
  for (const auto f : seen) missing += !f;
  if (foreign) {
    failure = std::to_string(foreign) + " popped values were never pushed";
  } else if (duplicates) {
    failure = std::to_string(duplicates) + " items popped twice";
  } else if (missing) {
    failure =
        "lost items: " + std::to_string(missing) + " of " + std::to_string(items) + " never popped";
  } else if (fifo && fifo_violations) {
    failure = std::to_string(fifo_violations) +
              " per-producer FIFO violations (a consumer saw a producer's items out of order)";
  }
  validated_items += popped;
}

void queue_setup(const benchmark::State&) {
  if (g_queue_shared) g_queue_shared->reset();
}

void queue_teardown(const benchmark::State&) {
  if (g_queue_shared) g_queue_shared->validate();
}

}  // namespace kvlab::bench::detail
