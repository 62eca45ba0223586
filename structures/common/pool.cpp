#include "structures/common/pool.hpp"

#include <sys/mman.h>

namespace kvlab::pool {
namespace {

// Constructed by the thread's first caching deallocate(), destroyed at thread exit. Thread-local
// destructors that run after it (those of objects constructed earlier) find the cache closed
// and free straight to operator delete, so nothing is cached once the drain has run.
struct ExitDrain {
  ~ExitDrain() { close(); }
};

}  // namespace

// The mapped blocks' budget (pool.hpp). relaxed: each counter is read-modify-written alone, and
// a block's own memory is published by the caller's synchronization, not by these counts.
namespace {
std::atomic<std::size_t> g_mapped_blocks{0};
std::atomic<std::size_t> g_mapped_bytes{0};
std::atomic<std::size_t> g_mapped_limit{kMaxMappedBlocks};
}  // namespace

void* map_block(std::size_t n, std::size_t counted) noexcept {
  const std::size_t limit = g_mapped_limit.load(std::memory_order_relaxed);  // relaxed: see above
  if (g_mapped_blocks.fetch_add(1, std::memory_order_relaxed) >= limit) {
    g_mapped_blocks.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (g_mapped_bytes.fetch_add(n, std::memory_order_relaxed) + n > kMaxMappedBytes) {
    g_mapped_bytes.fetch_sub(n, std::memory_order_relaxed);
    g_mapped_blocks.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (p == MAP_FAILED) {
    g_mapped_bytes.fetch_sub(n, std::memory_order_relaxed);
    g_mapped_blocks.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  count_mapped(counted);
  return p;
}

void populate(void* p, std::size_t n) noexcept {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14's value; glibc 2.36's headers lack it
#endif
  if (n != 0) ::madvise(p, n, MADV_POPULATE_WRITE);  // failure: the pages fault in instead
}

void unmap_block(void* p, std::size_t n, std::size_t counted) noexcept {
  ::munmap(p, n);
  detail::count_large(-static_cast<std::int64_t>(counted));
  g_mapped_bytes.fetch_sub(n, std::memory_order_relaxed);
  g_mapped_blocks.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t mapped_blocks() noexcept {
  return g_mapped_blocks.load(std::memory_order_relaxed);  // relaxed: a statistic
}

void set_mapped_block_limit(std::size_t blocks) noexcept {
  g_mapped_limit.store(blocks, std::memory_order_relaxed);  // relaxed: see g_mapped_blocks
}

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
  fold_large_bytes();
  detail::tls.state = detail::kClosed;
}

}  // namespace kvlab::pool
