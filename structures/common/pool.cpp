#include "structures/common/pool.hpp"

namespace kvlab::pool {
namespace {

// Constructed by the thread's first caching deallocate(), destroyed at thread exit. Thread-local
// destructors that run after it (those of objects constructed earlier) find the cache closed
// and free straight to operator delete, so nothing is cached once the drain has run.
struct ExitDrain {
  ~ExitDrain() { close(); }
};

}  // namespace

void detail::activate() noexcept {
  thread_local ExitDrain drain_at_exit;
  (void)drain_at_exit;
  tls.state = kActive;
}

std::size_t cached_bytes() noexcept {
  std::size_t bytes = 0;
  for (std::size_t c = 0; c < kClasses; ++c)
    bytes += detail::tls.bins[c].count * detail::class_bytes(c);
  return bytes;
}

void drain() noexcept {
  for (auto& bin : detail::tls.bins) {
    while (detail::Block* b = bin.head) {
      bin.head = b->next;
      ::operator delete(b);
    }
    bin.count = 0;
  }
}

void close() noexcept {
  drain();
  detail::tls.state = detail::kClosed;
}

}  // namespace kvlab::pool
