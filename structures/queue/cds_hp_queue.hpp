// The body shared by the libcds queues that reclaim through hazard pointers (queue/cds-ms,
// queue/cds-basket, queue/cds-segmented): each operation attaches the calling thread to the
// libcds runtime first (structures/common/cds_runtime.hpp), and so do construction and
// destruction, because a libcds container retires nodes into the calling thread's HP records.
// Each backend derives from CdsHpQueue<its libcds queue, T> and adds its BackendTraits and its
// constructors.
// Thread safety: as the wrapped queue (all operations concurrent). Reclamation: hazard pointers.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>

#include "structures/common/cds_runtime.hpp"

namespace kvlab::queue {

template <class Queue, class T>
class CdsHpQueue {
 public:
  using value_type = T;

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

 protected:
  template <class... Args>
  explicit CdsHpQueue(Args&&... args) : attach_(), queue_(std::forward<Args>(args)...) {}
  ~CdsHpQueue() { cds_runtime::ensure_attached(); }

 private:
  // A member initialized before queue_, so the constructing thread is attached first.
  struct Attach {
    Attach() { cds_runtime::ensure_attached(); }
  };
  Attach attach_;
  Queue queue_;
};

}  // namespace kvlab::queue
