// The per-thread block cache: a freed block serves the freeing thread's next allocation of the
// same size class (whoever allocated it), never another class; bins are bounded; a thread's cache
// goes back to operator delete when the thread exits. Under AddressSanitizer the cache is
// bypassed by design, so the cache-specific cases are skipped there and only the pass-through is
// checked.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "structures/common/pool.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <thread>
#include <vector>

namespace pool = kvlab::pool;

#if !defined(__SANITIZE_ADDRESS__)
// Counts live operator-new blocks, so a test can see that a thread's cache was handed back.
namespace {
std::atomic<long> g_live{0};
}
void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  g_live.fetch_add(1, std::memory_order_relaxed);  // a counter only; no ordering needed
  return p;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  operator delete(p);
}
#endif

TEST_CASE("a freed block is the next block of its size class, and only of its class" *
          doctest::skip(pool::kBypass)) {
  pool::drain();
  void* a = pool::allocate(40);  // class 48
  std::memset(a, 0xab, 40);
  pool::deallocate(a, 40);
  CHECK(pool::cached_bytes() == 48);
  void* other = pool::allocate(49);  // class 64: must not get a's block
  CHECK(other != a);
  void* again = pool::allocate(33);  // class 48 again
  CHECK(again == a);
  CHECK(pool::cached_bytes() == 0);
  pool::deallocate(other, 49);
  pool::deallocate(again, 33);
  CHECK(pool::cached_bytes() == 48 + 64);
  pool::drain();
  CHECK(pool::cached_bytes() == 0);
}

TEST_CASE("every size from 0 to the limit round-trips with its full size writable") {
  pool::drain();
  std::vector<void*> blocks;
  for (std::size_t n = 0; n <= pool::kMaxSize + 64; ++n) {
    void* p = pool::allocate(n);
    std::memset(p, static_cast<int>(n), n);
    blocks.push_back(p);
  }
  std::set<void*> distinct(blocks.begin(), blocks.end());
  CHECK(distinct.size() == blocks.size());
  for (std::size_t n = 0; n < blocks.size(); ++n) {
    const auto* bytes = static_cast<const unsigned char*>(blocks[n]);
    bool intact = true;
    for (std::size_t i = 0; i < n; ++i)
      intact = intact && bytes[i] == static_cast<unsigned char>(n);
    CHECK_MESSAGE(intact, "size ", n);
    pool::deallocate(blocks[n], n);
  }
  // Sizes above kMaxSize are not cached; every smaller one is (the bins are far from full).
  if (!pool::kBypass) {
    std::size_t expected = 0;
    for (std::size_t n = 0; n <= pool::kMaxSize; ++n) expected += (n == 0 ? 1 : (n + 15) / 16) * 16;
    CHECK(pool::cached_bytes() == expected);
  } else {
    CHECK(pool::cached_bytes() == 0);
  }
  pool::drain();
}

TEST_CASE("a bin holds at most its cap; the rest goes back to operator delete" *
          doctest::skip(pool::kBypass)) {
  pool::drain();
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool::allocate(48));
  for (void* p : blocks) pool::deallocate(p, 48);
  CHECK(pool::cached_bytes() == std::size_t{pool::detail::kBinCap[2]} * 48);
  CHECK(pool::detail::kBinCap[2] == 1024);
  blocks.clear();
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool::allocate(512));
  for (void* p : blocks) pool::deallocate(p, 512);
  CHECK(pool::cached_bytes() == 1024 * 48 + 256 * 512);  // 128 KiB per bin at most
  pool::drain();
}

TEST_CASE("blocks allocated by one thread are reused by the thread that freed them" *
          doctest::skip(pool::kBypass)) {
  pool::drain();
  constexpr int kN = 200;
  std::vector<void*> made(kN);
  std::thread producer([&] {
    for (auto& p : made) p = pool::allocate(64);
  });
  producer.join();  // join orders the producer's writes before ours
  for (void* p : made) pool::deallocate(p, 64);
  CHECK(pool::cached_bytes() == kN * 64);
  std::set<void*> mine(made.begin(), made.end());
  int reused = 0;
  std::vector<void*> again;
  for (int i = 0; i < kN; ++i) {
    again.push_back(pool::allocate(64));
    reused += mine.count(again.back()) ? 1 : 0;
  }
  CHECK(reused == kN);
  for (void* p : again) pool::deallocate(p, 64);
  pool::drain();
}

#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("a thread's cache is handed back to operator delete when the thread exits") {
  const long before = g_live.load(std::memory_order_relaxed);
  long cached_in_thread = -1;
  std::thread t([&] {
    std::vector<void*> blocks;
    for (int i = 0; i < 300; ++i) blocks.push_back(pool::allocate(24 + i % 200));
    for (std::size_t i = 0; i < blocks.size(); ++i) pool::deallocate(blocks[i], 24 + i % 200);
    cached_in_thread = static_cast<long>(pool::cached_bytes());
  });
  t.join();
  CHECK(cached_in_thread > 0);
  // Everything the thread allocated, cache included, was deleted by the time it finished.
  CHECK(g_live.load(std::memory_order_relaxed) == before);
}
#endif
