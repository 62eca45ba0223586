#include "structures/common/pool.hpp"

namespace kvlab::pool {
namespace {

// Its destructor runs at thread exit, after the thread's last deallocate() that could cache (the
// thread_local is constructed by the first one, and destructors run in reverse order of
// construction). A deallocate() after it finds the cache closed and frees directly.
struct ExitDrain {
  ~ExitDrain() {
    drain();
    detail::tls.state = detail::kClosed;
  }
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
    bytes += detail::tls.bins[c].count * (c + 1) * kGranule;
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

}  // namespace kvlab::pool
