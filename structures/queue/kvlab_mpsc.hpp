// queue/kvlab-mpsc — kvlab's multi-producer single-consumer queue, for handing work to one thread
// (the server's cross-thread delivery).
//
// Algorithm: the intrusive MPSC linked queue attributed to D. Vyukov (2010), made non-intrusive:
// producers swing `head_` to their node with one exchange and then link the previous head to it;
// the single consumer follows `next` pointers from its private `tail_`, which always points at a
// sentinel node that it owns.
//
//   struct Node { std::atomic<Node*> next; T value; };
//   head_ (producers, exchange) ──▶ newest node
//   tail_ (consumer only)       ──▶ sentinel ──next──▶ oldest item ──▶ … ──▶ newest
//
// Thread safety: push from any number of threads; try_pop and size_approx's exactness only from
// one consumer thread at a time (declared single_consumer; REQUIRES).
// Progress: push is wait-free (one exchange, one store). try_pop is wait-free but may report empty
// while a producer is between its exchange and its link store (a "bubble"); items behind it
// appear as soon as that store lands.
// Reclamation: none needed beyond ownership: a node is freed by the consumer after it has moved
// past it, and a producer only ever writes `next` of the node its exchange returned, which the
// consumer cannot have moved past (it waits for exactly that `next`).
// Invariants:
//  1. tail_ is a node whose value was already consumed (or the initial sentinel).
//  2. Every pushed node is reachable from tail_ once all producers finished their link stores.
//  3. Per producer, nodes are linked in push order: FIFO per producer and linearizable overall at
//     the exchange.
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <utility>

#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class KvlabMpsc {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/kvlab-mpsc",
      .family = "queue",
      .progress = Progress::wait_free,
      .reclamation = Reclamation::immediate,
      .reference = "Vyukov intrusive MPSC node-based queue (2010)",
      .summary = "own: MPSC linked queue, one exchange per push (single consumer)",
      .fifo = true,
      .single_consumer = true,
  };

  KvlabMpsc() : KvlabMpsc(QueueOptions{}) {}
  explicit KvlabMpsc(const QueueOptions&) : head_(new Node), tail_(head_.load()) {}
  ~KvlabMpsc() {
    while (tail_) {
      Node* next = tail_->next.load(std::memory_order_relaxed);
      delete tail_;
      tail_ = next;
    }
  }
  KvlabMpsc(const KvlabMpsc&) = delete;
  KvlabMpsc& operator=(const KvlabMpsc&) = delete;

  bool push(const T& value) {
    Node* n = new Node(value);
    // acq_rel: release publishes n's value to the consumer that reaches it through prev->next;
    // acquire orders us after the previous producer's exchange (a chain of RMWs).
    Node* prev = head_.exchange(n, std::memory_order_acq_rel);
    // release: pairs with the consumer's acquire load of next; n's contents are visible.
    prev->next.store(n, std::memory_order_release);
    // relaxed: a statistic.
    pushed_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // REQUIRES: called by one consumer thread at a time.
  std::optional<T> try_pop() {
    Node* tail = tail_;
    // acquire: pairs with the producer's release store of next.
    Node* next = tail->next.load(std::memory_order_acquire);
    if (!next) return std::nullopt;
    std::optional<T> out(std::move(next->value));
    tail_ = next;  // next becomes the sentinel
    delete tail;
    popped_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }

  std::size_t size_approx() {
    // relaxed: a statistic; exact when quiescent.
    const std::size_t pushed = pushed_.load(std::memory_order_relaxed);
    const std::size_t popped = popped_.load(std::memory_order_relaxed);
    return pushed > popped ? pushed - popped : 0;
  }

 private:
  struct Node {
    Node() = default;
    explicit Node(const T& v) : value(v) {}
    std::atomic<Node*> next{nullptr};
    T value{};
  };

  alignas(64) std::atomic<Node*> head_;  // producers' side, padded away from the consumer's
  alignas(64) Node* tail_;               // consumer-private
  alignas(64) std::atomic<std::size_t> pushed_{0};
  alignas(64) std::atomic<std::size_t> popped_{0};
};

static_assert(ConcurrentQueue<KvlabMpsc<int>>);

}  // namespace kvlab::queue
