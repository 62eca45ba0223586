// queue/cds-ms — libcds MSQueue: the Michael-Scott lock-free linked-list queue.
// Reference: M. M. Michael and M. L. Scott, "Simple, Fast, and Practical Non-Blocking and
// Blocking Concurrent Queue Algorithms", PODC 1996.
// Thread safety: all operations concurrent. Progress: lock-free. Reclamation: hazard pointers
// (threads attached by common/cds_runtime.hpp). Order: FIFO (linearizable).
#pragma once

#include <cds/container/msqueue.h>
#include <cds/gc/hp.h>

#include <cstddef>
#include <optional>

#include "structures/common/cds_runtime.hpp"
#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class CdsMs {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/cds-ms",
      .family = "queue",
      .progress = Progress::lock_free,
      .reclamation = Reclamation::hp,
      .reference = "Michael & Scott, PODC 1996 (libcds MSQueue)",
      .summary = "Michael-Scott lock-free linked queue",
      .fifo = true,
  };

  CdsMs() : CdsMs(QueueOptions{}) {}
  explicit CdsMs(const QueueOptions&) : attach_() {}
  ~CdsMs() { cds_runtime::ensure_attached(); }

  bool push(const T& value) {
    cds_runtime::ensure_attached();
    return queue_.enqueue(value);
  }
  std::optional<T> try_pop() {
    cds_runtime::ensure_attached();
    T v{};
    if (!queue_.dequeue(v)) return std::nullopt;
    return v;
  }
  std::size_t size_approx() { return queue_.size(); }

 private:
  struct Attach {
    Attach() { cds_runtime::ensure_attached(); }
  };
  struct Traits : public cds::container::msqueue::traits {
    using item_counter = cds::atomicity::item_counter;
  };
  Attach attach_;
  cds::container::MSQueue<cds::gc::HP, T, Traits> queue_;
};

static_assert(ConcurrentQueue<CdsMs<int>>);

}  // namespace kvlab::queue
