// queue/cds-vyukov — libcds VyukovMPMCCycleQueue: a bounded array ring where each cell carries a
// sequence number; producers and consumers claim positions with one CAS each.
// Reference: D. Vyukov, "Bounded MPMC queue", 1024cores.net (2010).
// Thread safety: all operations concurrent. Progress: blocking in theory (a claimed but unfilled
// cell stalls consumers behind it), lock-free in practice. Reclamation: not needed (fixed
// array). Bounded: push returns false when full (capacity from QueueOptions, a power of two).
#pragma once

#include <cds/container/vyukov_mpmc_cycle_queue.h>

#include <bit>
#include <cstddef>
#include <optional>

#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class CdsVyukov {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/cds-vyukov",
      .family = "queue",
      .progress = Progress::blocking,
      .reclamation = Reclamation::not_needed,
      .reference = "Vyukov bounded MPMC queue (libcds VyukovMPMCCycleQueue)",
      .summary = "bounded ring with per-cell sequence numbers; push fails when full",
      .resizable = false,
      .fifo = true,
      .bounded = true,
  };

  CdsVyukov() : CdsVyukov(QueueOptions{}) {}
  explicit CdsVyukov(const QueueOptions& o)
      : queue_(std::bit_ceil(o.capacity < 2 ? 2 : o.capacity)) {}

  bool push(const T& value) { return queue_.enqueue(value); }
  std::optional<T> try_pop() {
    T v{};
    if (!queue_.dequeue(v)) return std::nullopt;
    return v;
  }
  std::size_t size_approx() { return queue_.size(); }
  std::size_t capacity() const { return queue_.capacity(); }

 private:
  struct Traits : public cds::container::vyukov_queue::traits {
    using item_counter = cds::atomicity::item_counter;
  };
  cds::container::VyukovMPMCCycleQueue<T, Traits> queue_;
};

static_assert(ConcurrentQueue<CdsVyukov<int>>);

}  // namespace kvlab::queue
