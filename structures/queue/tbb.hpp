// queue/tbb — oneTBB concurrent_queue: an array of micro-queues selected by ticket, each a linked
// list of fixed-size pages; unbounded, non-blocking try_pop.
// Reference: oneTBB tbb::concurrent_queue.
// Thread safety: all operations concurrent. Progress: blocking (per-micro-queue waiting on
// tickets). Reclamation: library (pages freed by TBB). Order: FIFO per producer (and globally
// linearizable by ticket).
#pragma once

#include <oneapi/tbb/concurrent_queue.h>

#include <cstddef>
#include <optional>

#include "structures/common/tbb_allocator.hpp"
#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class Tbb {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/tbb",
      .family = "queue",
      .progress = Progress::blocking,
      .reclamation = Reclamation::internal,
      .reference = "oneTBB tbb::concurrent_queue",
      .summary = "ticketed micro-queues of pages",
      .fifo = true,
  };

  Tbb() = default;
  explicit Tbb(const QueueOptions&) {}

  bool push(const T& value) {
    queue_.push(value);
    return true;
  }
  std::optional<T> try_pop() {
    T v{};
    if (!queue_.try_pop(v)) return std::nullopt;
    return v;
  }
  std::size_t size_approx() {
    const auto n = queue_.unsafe_size();
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

 private:
  tbb::concurrent_queue<T, TbbQueueAllocator<T>> queue_;
};

static_assert(ConcurrentQueue<Tbb<int>>);

}  // namespace kvlab::queue
