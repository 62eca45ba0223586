// queue/cds-ms — libcds MSQueue: the Michael-Scott lock-free linked-list queue.
// Reference: M. M. Michael and M. L. Scott, "Simple, Fast, and Practical Non-Blocking and
// Blocking Concurrent Queue Algorithms", PODC 1996.
// Thread safety: all operations concurrent. Progress: lock-free. Reclamation: hazard pointers
// (threads attached by common/cds_runtime.hpp). Order: FIFO (linearizable).
#pragma once

#include <cds/container/msqueue.h>
#include <cds/gc/hp.h>

#include <cstddef>

#include "structures/keyspace.hpp"
#include "structures/queue/cds_hp_queue.hpp"

namespace kvlab::queue {

struct CdsMsTraits : public cds::container::msqueue::traits {
  using item_counter = cds::atomicity::item_counter;
};

template <class T>
class CdsMs : public CdsHpQueue<cds::container::MSQueue<cds::gc::HP, T, CdsMsTraits>, T> {
 public:
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
  explicit CdsMs(const QueueOptions&) : CdsMs::CdsHpQueue() {}
};

static_assert(ConcurrentQueue<CdsMs<int>>);

}  // namespace kvlab::queue
