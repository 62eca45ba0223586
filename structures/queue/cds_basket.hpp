// queue/cds-basket — libcds BasketQueue: Michael-Scott queue where enqueuers that fail the tail
// CAS at the same time form a "basket" and insert there, reducing tail contention.
// Reference: M. Hoffman, O. Shalev, N. Shavit, "The Baskets Queue", OPODIS 2007.
// Thread safety: all operations concurrent. Progress: lock-free. Reclamation: hazard pointers.
// Order: linearizable FIFO (items of one basket are concurrent, so per-producer FIFO holds).
#pragma once

#include <cds/container/basket_queue.h>
#include <cds/gc/hp.h>

#include <cstddef>
#include <optional>

#include "structures/common/cds_runtime.hpp"
#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class CdsBasket {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/cds-basket",
      .family = "queue",
      .progress = Progress::lock_free,
      .reclamation = Reclamation::hp,
      .reference = "Hoffman, Shalev & Shavit, OPODIS 2007 (libcds BasketQueue)",
      .summary = "baskets queue: MS queue with contention baskets",
      .fifo = true,
  };

  CdsBasket() : CdsBasket(QueueOptions{}) {}
  explicit CdsBasket(const QueueOptions&) : attach_() {}
  ~CdsBasket() { cds_runtime::ensure_attached(); }

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
  struct Traits : public cds::container::basket_queue::traits {
    using item_counter = cds::atomicity::item_counter;
  };
  Attach attach_;
  cds::container::BasketQueue<cds::gc::HP, T, Traits> queue_;
};

static_assert(ConcurrentQueue<CdsBasket<int>>);

}  // namespace kvlab::queue
