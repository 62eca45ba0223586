// queue/mutex — the baseline: std::deque behind one std::mutex.
// Reference: none (textbook). Thread safety: all operations concurrent, serialized by the lock.
// Progress: blocking. Reclamation: immediate (under the lock). Order: strict FIFO.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "structures/keyspace.hpp"

namespace kvlab::queue {

template <class T>
class Mutex {
 public:
  using value_type = T;
  static constexpr BackendTraits kTraits{
      .name = "queue/mutex",
      .family = "queue",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "std::deque + std::mutex (baseline)",
      .summary = "std::deque behind one mutex (baseline)",
      .fifo = true,
  };

  Mutex() = default;
  explicit Mutex(const QueueOptions&) {}

  bool push(const T& value) {
    std::lock_guard lock(mutex_);
    items_.push_back(value);
    return true;
  }
  std::optional<T> try_pop() {
    std::lock_guard lock(mutex_);
    if (items_.empty()) return std::nullopt;
    std::optional<T> v(std::move(items_.front()));
    items_.pop_front();
    return v;
  }
  std::size_t size_approx() {
    std::lock_guard lock(mutex_);
    return items_.size();
  }

 private:
  std::mutex mutex_;
  std::deque<T> items_;
};

static_assert(ConcurrentQueue<Mutex<int>>);

}  // namespace kvlab::queue
