// queue/cds-basket — libcds BasketQueue: Michael-Scott queue where enqueuers that fail the tail
// CAS at the same time form a "basket" and insert there, reducing tail contention.
// Reference: M. Hoffman, O. Shalev, N. Shavit, "The Baskets Queue", OPODIS 2007.
// Thread safety: all operations concurrent. Progress: lock-free. Reclamation: hazard pointers.
// Order: linearizable FIFO (items of one basket are concurrent, so per-producer FIFO holds).
#pragma once

#include <cds/container/basket_queue.h>
#include <cds/gc/hp.h>

#include <cstddef>

#include "structures/keyspace.hpp"
#include "structures/queue/cds_hp_queue.hpp"

namespace kvlab::queue {

struct CdsBasketTraits : public cds::container::basket_queue::traits {
  using item_counter = cds::atomicity::item_counter;
};

template <class T>
class CdsBasket
    : public CdsHpQueue<cds::container::BasketQueue<cds::gc::HP, T, CdsBasketTraits>, T> {
 public:
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
  explicit CdsBasket(const QueueOptions&) : CdsBasket::CdsHpQueue() {}
};

static_assert(ConcurrentQueue<CdsBasket<int>>);

}  // namespace kvlab::queue
