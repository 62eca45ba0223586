// queue/kvlab — kvlab's MPMC queue: fetch-and-add on array segments, unbounded through a linked
// list of segments, epoch reclamation of finished segments.
//
// Lineage: the LCRQ/SCQ family replaces the CAS retry loops of Michael-Scott queues by one
// fetch-and-add per operation on a ring or array index [morrison2013lcrq, nikolaev2019scq]; this
// is the simplest member, the FAA array queue of Correia & Ramalhete (linked segments of cells,
// each cell used once), with a per-cell state word so that any copyable T can be stored.
//
//   struct Segment {                         // alignas(64)
//     atomic<uint64_t> enq;                  // next cell index for producers (FAA)
//     atomic<uint64_t> deq;                  // next cell index for consumers (FAA)
//     atomic<Segment*> next;
//     uint64_t id;                           // position of the segment in the queue
//     Cell cells[kCells];                    // { atomic<uint32_t> state; T value; }, index i
//                                            // stored at cell(i): neighbours on distinct lines
//   };
//   cell state: kEmpty ──producer──▶ kFull ──consumer──▶ kTaken
//               kEmpty ──consumer gives up──▶ kTaken   (the producer then retries elsewhere)
//
// push: i = enq.FAA(1); if i < kCells, write value then CAS state kEmpty→kFull (release); a
// failed CAS means a consumer abandoned the cell, so take another index. i ≥ kCells: the segment
// is full; append a new segment (CAS next) and move tail_ forward.
// try_pop: if deq ≥ enq and there is no next segment, the queue is empty (no index is burnt);
// enq, the producers' line, is read only when the cell at deq is not already full.
// Otherwise i = deq.FAA(1); i ≥ kCells → move head_ to the next segment and retire the old one;
// else wait briefly for the cell's producer, then exchange the state to kTaken: kFull means we
// own the value; kEmpty means we abandoned the cell and try the next index.
//
// Thread safety: all operations concurrent. Progress: lock-free (a producer retries only when a
// consumer overtook it; some operation always completes). Reclamation: epoch (every operation runs
// under a reclaim::Guard; a segment is retired when head_ moves past it, and only then).
// Order: linearizable FIFO by cell index (so per-producer FIFO holds).
// Invariants:
//  1. A cell is written by at most one producer (its index came from one FAA) and read by at
//     most one consumer; its value is read only after the consumer saw kFull (acquire).
//  2. head_->id <= tail_->id; segments between them are linked by next and never skipped.
//  3. A segment is retired only by the thread whose CAS moved head_ past it, after tail_ has
//     left it, so a thread that starts later cannot reach it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "structures/common/spin_lock.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::queue {

template <class T>
class Kvlab {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/kvlab",
      .family = "queue",
      .progress = Progress::lock_free,
      .reclamation = Reclamation::epoch,
      .reference = "FAA array queue (Correia & Ramalhete); LCRQ (Morrison & Afek, PPoPP 2013)",
      .summary = "own: one fetch-and-add per operation on linked array segments",
      .fifo = true,
  };
  static constexpr std::uint64_t kCells = 1024;

  Kvlab() : Kvlab(QueueOptions{}) {}
  explicit Kvlab(const QueueOptions&) {
    auto* s = new Segment(0);
    head_.store(s, std::memory_order_relaxed);  // not yet shared
    tail_.store(s, std::memory_order_relaxed);
  }
  ~Kvlab() {
    Segment* s = head_.load(std::memory_order_relaxed);
    while (s) {
      Segment* n = s->next.load(std::memory_order_relaxed);
      delete s;
      s = n;
    }
  }
  Kvlab(const Kvlab&) = delete;
  Kvlab& operator=(const Kvlab&) = delete;

  bool push(const T& value) {
    reclaim::Guard g;
    for (;;) {
      // acquire: pairs with the release CAS that installed this tail; the segment is initialized.
      Segment* s = tail_.load(std::memory_order_acquire);
      // relaxed: the FAA only hands out distinct indexes; the cell state orders the data.
      const std::uint64_t i = s->enq.fetch_add(1, std::memory_order_relaxed);
      if (i < kCells) {
        Cell& c = s->cell(i);
        c.value = value;
        std::uint32_t expected = kEmpty;
        // release: the value is visible to the consumer that acquires kFull.
        if (c.state.compare_exchange_strong(expected, kFull, std::memory_order_release,
                                            std::memory_order_relaxed)) {
          return true;
        }
        continue;  // a consumer abandoned this cell: take another index
      }
      // The segment is full: append a successor if nobody has, then help move tail_.
      Segment* next = s->next.load(std::memory_order_acquire);
      if (!next) {
        auto* fresh = new Segment(s->id + 1);
        // Pre-claim cell 0 for our value, so appending and pushing are one step.
        fresh->enq.store(1, std::memory_order_relaxed);
        fresh->cell(0).value = value;
        fresh->cell(0).state.store(kFull, std::memory_order_relaxed);
        Segment* expected = nullptr;
        // release: the fresh segment (with our item) is visible to whoever follows next.
        if (s->next.compare_exchange_strong(expected, fresh, std::memory_order_release,
                                            std::memory_order_acquire)) {
          advance(tail_, s, fresh);
          return true;
        }
        delete fresh;  // never shared
        next = expected;
      }
      advance(tail_, s, next);
    }
  }

  std::optional<T> try_pop() {
    reclaim::Guard g;
    for (;;) {
      // acquire: pairs with the release CAS that installed this head.
      Segment* s = head_.load(std::memory_order_acquire);
      // relaxed: a hint; the FAA below decides which index is ours.
      const std::uint64_t d = s->deq.load(std::memory_order_relaxed);
      if (d >= kCells) {
        // acquire: pairs with the release CAS that linked the successor; it is initialized.
        Segment* next = s->next.load(std::memory_order_acquire);
        if (next == nullptr)
          return std::nullopt;  // tail segment exhausted, successor not yet linked
        // tail_ must never point at a retired segment: move it along first (invariant 2).
        advance(tail_, s, next);
        if (advance(head_, s, next)) reclaim::retire(s);
        continue;
      }
      // Empty check without burning an index. A full cell at d says an item is there, and the
      // producers' enq line is then left alone: reading it on every pop would pull that line
      // away from the producer on every push (relaxed: a hint, as above). Otherwise the queue is
      // empty if no producer has taken index d and no successor segment exists.
      std::uint64_t e = 0;  // enq as last read here; 0 = not read (enq only grows)
      if (s->cell(d).state.load(std::memory_order_relaxed) != kFull) {
        e = s->enq.load(std::memory_order_relaxed);
        // acquire: as above.
        if (e <= d && s->next.load(std::memory_order_acquire) == nullptr) return std::nullopt;
      }
      // relaxed: distinct indexes; the cell state orders the data.
      const std::uint64_t i = s->deq.fetch_add(1, std::memory_order_relaxed);
      if (i >= kCells) continue;
      Cell& c = s->cell(i);
      // A producer that took this index is usually about to publish: wait a little before
      // abandoning the cell (which makes that producer retry).
      for (int spin = 0; spin < 128; ++spin) {
        // acquire: pairs with the producer's release CAS to kFull.
        if (c.state.load(std::memory_order_acquire) == kFull) break;
        if (e <= i) {  // not yet known that a producer took index i: look (relaxed, a hint)
          e = s->enq.load(std::memory_order_relaxed);
          if (e <= i) break;  // nobody took this index yet
        }
        cpu_relax();
      }
      // acq_rel: acquire the producer's value if kFull; release our abandonment if kEmpty.
      if (c.state.exchange(kTaken, std::memory_order_acq_rel) == kFull) {
        std::optional<T> out(std::move(c.value));
        return out;
      }
      // Abandoned an empty cell: the queue may look empty now, or the next index may hold data.
      if (s->enq.load(std::memory_order_relaxed) <= i + 1 &&
          s->next.load(std::memory_order_acquire) == nullptr) {
        return std::nullopt;
      }
    }
  }

  std::size_t size_approx() {
    reclaim::Guard g;
    Segment* h = head_.load(std::memory_order_acquire);
    Segment* t = tail_.load(std::memory_order_acquire);
    // relaxed: an estimate.
    const std::uint64_t deq =
        h->id * kCells + std::min(h->deq.load(std::memory_order_relaxed), kCells);
    const std::uint64_t enq =
        t->id * kCells + std::min(t->enq.load(std::memory_order_relaxed), kCells);
    return enq > deq ? static_cast<std::size_t>(enq - deq) : 0;
  }

 private:
  static constexpr std::uint32_t kEmpty = 0, kFull = 1, kTaken = 2;

  struct Cell {
    std::atomic<std::uint32_t> state{kEmpty};
    T value{};
  };

  struct alignas(64) Segment {
    explicit Segment(std::uint64_t segment_id) : id(segment_id) {}
    alignas(64) std::atomic<std::uint64_t> enq{0};  // producers' line
    alignas(64) std::atomic<std::uint64_t> deq{0};  // consumers' line
    alignas(64) std::atomic<Segment*> next{nullptr};
    std::uint64_t id;
    Cell cells[kCells];

    // The cell of queue index i. Consecutive indexes go to different cache lines (SCQ's cache
    // remap [nikolaev2019scq]): the producer of index i and the consumer of index i+1 then never
    // write the same line, which with 16-byte cells would otherwise hold four neighbours. A
    // bijection on [0, kCells), so every cell is still used exactly once.
    Cell& cell(std::uint64_t i) {
      constexpr std::uint64_t kPerLine = 64 / sizeof(Cell) > 0 ? 64 / sizeof(Cell) : 1;
      if constexpr (kPerLine <= 1 || kCells % kPerLine != 0) {
        return cells[i];
      } else {
        constexpr std::uint64_t kLines = kCells / kPerLine;
        return cells[(i % kLines) * kPerLine + i / kLines];
      }
    }
  };

  // Moves `end` from `from` to `to`; true if this call did it.
  static bool advance(std::atomic<Segment*>& end, Segment* from, Segment* to) {
    // release: pairs with the acquire loads of head_/tail_; `to` is initialized.
    return end.compare_exchange_strong(from, to, std::memory_order_release,
                                       std::memory_order_relaxed);
  }

  alignas(64) std::atomic<Segment*> head_{nullptr};
  alignas(64) std::atomic<Segment*> tail_{nullptr};
};

static_assert(ConcurrentQueue<Kvlab<int>>);

}  // namespace kvlab::queue
