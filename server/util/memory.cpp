// The replacement global operator new/delete that feed used_memory (server/util/memory.hpp).
//
// Every variant is replaced so that a block is always counted by the same pair: the plain, array,
// nothrow, sized and aligned forms. Aligned blocks come from aligned_alloc, whose blocks free()
// and malloc_usable_size() accept (glibc and tbbmalloc's proxy alike).
#include "server/util/memory.hpp"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "structures/common/pool.hpp"

namespace kvlab::server::memory {
namespace {

// Folded deltas of every thread. relaxed: a statistic; nothing is published through it, and a
// reader needs only an eventually exact total.
std::atomic<std::int64_t> g_used{0};
// This thread's unfolded delta: trivially constructible and destructible, so usable from any
// allocation, including those during thread start-up and exit.
thread_local constinit std::int64_t t_delta = 0;
// Whether allocations are counted: from the first non-zero maxmemory on (start_counting()).
// Counting costs a malloc_usable_size() per allocation and per free — about a quarter of a
// pipelined SET's server CPU in an A/B on the 2-vCPU VM — so a server without a memory limit
// does not pay it. relaxed: a switch read per allocation; start_counting() publishes the baseline
// through g_used before it, and a block counted on one side only is within the documented error.
std::atomic<bool> g_on{false};

inline void account(std::int64_t d) {
  t_delta += d;
  if (t_delta >= kFlushBytes || t_delta <= -kFlushBytes) {
    g_used.fetch_add(t_delta, std::memory_order_relaxed);  // relaxed: see g_used
    t_delta = 0;
  }
}

inline void* counted(void* p) {
  if (p != nullptr && g_on.load(std::memory_order_relaxed))
    account(static_cast<std::int64_t>(malloc_usable_size(p)));
  return p;
}

inline void uncount_free(void* p) noexcept {
  if (p == nullptr) return;
  if (g_on.load(std::memory_order_relaxed))  // relaxed: see g_on
    account(-static_cast<std::int64_t>(malloc_usable_size(p)));
  std::free(p);
}

void* alloc_or_throw(std::size_t n) {
  for (;;) {
    if (void* p = std::malloc(n == 0 ? 1 : n)) return counted(p);
    std::new_handler h = std::get_new_handler();
    if (h == nullptr) throw std::bad_alloc();
    h();
  }
}

void* aligned_or_throw(std::size_t n, std::align_val_t al) {
  const auto a = static_cast<std::size_t>(al);
  const std::size_t rounded = ((n == 0 ? 1 : n) + a - 1) / a * a;  // aligned_alloc's REQUIRES
  for (;;) {
    if (void* p = std::aligned_alloc(a, rounded)) return counted(p);
    std::new_handler h = std::get_new_handler();
    if (h == nullptr) throw std::bad_alloc();
    h();
  }
}

}  // namespace

std::size_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0, rss = 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &rss);
  std::fclose(f);
  return n == 2 ? rss * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

bool start_counting() {
  // relaxed: see g_on; exchange so that exactly one caller learns it started the count.
  return !g_on.exchange(true, std::memory_order_relaxed);
}

void add_baseline(std::int64_t bytes) {
  g_used.fetch_add(bytes, std::memory_order_relaxed);  // see g_used
}

std::size_t used_bytes() {
  if (!g_on.load(std::memory_order_relaxed)) return rss_bytes();   // relaxed: see g_on
  const std::int64_t v = g_used.load(std::memory_order_relaxed) +  // relaxed: see g_used
                         static_cast<std::int64_t>(pool::large_bytes());
  return v < 0 ? 0 : static_cast<std::size_t>(v);
}

bool counting() {
  return g_on.load(std::memory_order_relaxed);  // relaxed: see g_on
}

}  // namespace kvlab::server::memory

using kvlab::server::memory::aligned_or_throw;
using kvlab::server::memory::alloc_or_throw;
using kvlab::server::memory::uncount_free;

void* operator new(std::size_t n) {
  return alloc_or_throw(n);
}
void* operator new[](std::size_t n) {
  return alloc_or_throw(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return alloc_or_throw(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return alloc_or_throw(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a) {
  return aligned_or_throw(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return aligned_or_throw(n, a);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return aligned_or_throw(n, a);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try {
    return aligned_or_throw(n, a);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept {
  uncount_free(p);
}
void operator delete[](void* p) noexcept {
  uncount_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  uncount_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  uncount_free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  uncount_free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  uncount_free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  uncount_free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  uncount_free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  uncount_free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  uncount_free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  uncount_free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  uncount_free(p);
}
