// queue/cds-segmented — libcds SegmentedQueue: a list of segments of k cells; push and pop pick a
// random free/full cell in the head/tail segment, so order inside a segment is relaxed
// (quasi-FIFO: an item may be popped up to k-1 positions early). Declared fifo = false.
// Reference: Y. Afek, G. Korland, E. Yanovsky, "Quasi-Linearizability: Relaxed Consistency for
// Improved Concurrency", OPODIS 2010.
// Thread safety: all operations concurrent. Progress: lock-free. Reclamation: hazard pointers.
#pragma once

#include <cds/container/segmented_queue.h>
#include <cds/gc/hp.h>

#include <cstddef>

#include "structures/keyspace.hpp"
#include "structures/queue/cds_hp_queue.hpp"

namespace kvlab::queue {

struct CdsSegmentedTraits : public cds::container::segmented_queue::traits {
  using item_counter = cds::atomicity::item_counter;
};

template <class T>
class CdsSegmented
    : public CdsHpQueue<cds::container::SegmentedQueue<cds::gc::HP, T, CdsSegmentedTraits>, T> {
 public:
  static constexpr std::size_t kQuasiFactor = 16;
  static constexpr BackendTraits kTraits{
      .name = "queue/cds-segmented",
      .family = "queue",
      .progress = Progress::lock_free,
      .reclamation = Reclamation::hp,
      .reference = "Afek, Korland & Yanovsky, OPODIS 2010 (libcds SegmentedQueue)",
      .summary = "segments of 16 cells; quasi-FIFO (no per-producer order)",
      .fifo = false,
  };

  CdsSegmented() : CdsSegmented(QueueOptions{}) {}
  explicit CdsSegmented(const QueueOptions&) : CdsSegmented::CdsHpQueue(kQuasiFactor) {}
};

static_assert(ConcurrentQueue<CdsSegmented<int>>);

}  // namespace kvlab::queue
