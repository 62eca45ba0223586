// The per-thread block cache: a freed block serves the freeing thread's next allocation of the
// same size class (whoever allocated it), never another class; bins are bounded; a thread's cache
// goes back to operator delete when the thread exits. Under AddressSanitizer the cache is
// bypassed by design, so the cache-specific cases are skipped there and only the pass-through is
// checked.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "structures/common/pool.hpp"

#include <doctest/doctest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <thread>
#include <vector>

namespace pool = kvlab::pool;

// Under AddressSanitizer the cache is bypassed (pool::kBypass) and ASan owns operator new;
// elsewhere the test replaces operator new to count live blocks (and allocates them with malloc,
// so malloc_usable_size tells how large a block really is). The preprocessor needs its own
// answer to decide whether to define operator new; the static_assert keeps it equal to the pool's.
#if defined(__SANITIZE_ADDRESS__)
#define KVLAB_COUNT_NEW 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVLAB_COUNT_NEW 0
#endif
#endif
#ifndef KVLAB_COUNT_NEW
#define KVLAB_COUNT_NEW 1
#endif
static_assert(KVLAB_COUNT_NEW == !pool::kBypass, "the test's ASan detection must match the pool's");

#if KVLAB_COUNT_NEW
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

TEST_CASE("every size from 0 past the limit round-trips with its whole class writable") {
  pool::drain();
  // Twice: fresh blocks the first time, cached ones (sizes up to kMaxSize) the second.
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<void*> blocks;
    for (std::size_t n = 0; n <= pool::kMaxSize + 64; ++n) {
      void* p = pool::allocate(n);
#if KVLAB_COUNT_NEW
      CHECK_MESSAGE(malloc_usable_size(p) >= pool::class_size(n), "size ", n);
#endif
      std::memset(p, static_cast<int>(n), n);
      blocks.push_back(p);
    }
    for (std::size_t n = 0; n < blocks.size(); ++n) {
      const auto* bytes = static_cast<const unsigned char*>(blocks[n]);
      bool intact = true;
      for (std::size_t i = 0; i < n; ++i)
        intact = intact && bytes[i] == static_cast<unsigned char>(n);
      CHECK_MESSAGE(intact, "size ", n);
      pool::deallocate(blocks[n], n);
    }
    // Sizes above kMaxSize are not cached; every smaller one is (the bins are far from full).
    std::size_t expected = 0;
    for (std::size_t n = 0; n <= pool::kMaxSize; ++n) expected += pool::class_size(n);
    CHECK(pool::cached_bytes() == (pool::kBypass ? 0 : expected));
  }
  pool::drain();
}

TEST_CASE("class sizes round up to 16 bytes up to the limit, and are exact above it") {
  CHECK(pool::class_size(0) == 16);
  CHECK(pool::class_size(1) == 16);
  CHECK(pool::class_size(16) == 16);
  CHECK(pool::class_size(17) == 32);
  CHECK(pool::class_size(pool::kMaxSize) == pool::kMaxSize);
  CHECK(pool::class_size(pool::kMaxSize + 1) == pool::kMaxSize + 1);
}

TEST_CASE(
    "allocate_zeroed gives zero bytes, also in a reused dirty block, and large blocks "
    "bypass operator new") {
  pool::drain();
  void* dirty = pool::allocate(200);
  std::memset(dirty, 0x5a, 200);
  pool::deallocate(dirty, 200);
  auto* z = static_cast<unsigned char*>(pool::allocate_zeroed(200));
  if (!pool::kBypass) CHECK(static_cast<void*>(z) == dirty);  // the cached block, cleared
  bool zero = true;
  for (std::size_t i = 0; i < 200; ++i) zero = zero && z[i] == 0;
  CHECK(zero);
  pool::deallocate(z, 200);

  // Above kMaxSize the block comes from malloc's heap, which hands a just-freed chunk of the
  // same size straight back: dirty unless allocate_zeroed clears it (calloc does).
  constexpr std::size_t kMid = 1024;
  static_assert(kMid > pool::kMaxSize);
  void* used = pool::allocate(kMid);
  std::memset(used, 0x5a, kMid);
  pool::deallocate(used, kMid);
  auto* mid = static_cast<unsigned char*>(pool::allocate_zeroed(kMid));
  bool mid_zero = true;
  for (std::size_t i = 0; i < kMid; ++i) mid_zero = mid_zero && mid[i] == 0;
  CHECK(mid_zero);
  pool::deallocate(mid, kMid);

#if KVLAB_COUNT_NEW
  const long live0 = g_live.load(std::memory_order_relaxed);
#endif
  // 64 MiB: calloc maps fresh zero pages; touching a few must read zeros.
  constexpr std::size_t kBig = std::size_t{64} << 20;
  auto* big = static_cast<unsigned char*>(pool::allocate_zeroed(kBig));
  bool big_zero = true;
  for (std::size_t i = 0; i < kBig; i += 4096 * 97) big_zero = big_zero && big[i] == 0;
  CHECK(big_zero);
  CHECK(big[kBig - 1] == 0);
  void* large = pool::allocate(pool::kMaxSize + 1);
#if KVLAB_COUNT_NEW
  CHECK(malloc_usable_size(big) >= kBig);
  CHECK(g_live.load(std::memory_order_relaxed) == live0);  // malloc/calloc, not operator new
#endif
  pool::deallocate(large, pool::kMaxSize + 1);
  pool::deallocate(big, kBig);
  CHECK(pool::cached_bytes() == (pool::kBypass ? 0 : 208));  // only the 200-byte block, cached
  pool::drain();
}

TEST_CASE("a bin holds at most its cap; the rest goes back to operator delete" *
          doctest::skip(pool::kBypass)) {
  pool::drain();
  std::vector<void*> blocks;
  blocks.reserve(5000);  // the vector's own buffer is allocated before the count starts
#if KVLAB_COUNT_NEW
  const long live0 = g_live.load(std::memory_order_relaxed);
#endif
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool::allocate(48));
  for (void* p : blocks) pool::deallocate(p, 48);
  CHECK(pool::detail::kBinCap[2] == 1024);
  CHECK(pool::cached_bytes() == 1024 * 48);
#if KVLAB_COUNT_NEW
  // Only the cached blocks are still allocated; the other 3976 were deleted, not dropped.
  CHECK(g_live.load(std::memory_order_relaxed) - live0 == 1024);
#endif
  blocks.clear();
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool::allocate(512));
  for (void* p : blocks) pool::deallocate(p, 512);
  CHECK(pool::cached_bytes() == 1024 * 48 + 256 * 512);  // 128 KiB of the 512-byte class
#if KVLAB_COUNT_NEW
  CHECK(g_live.load(std::memory_order_relaxed) - live0 == 1024 + 256);
#endif
  blocks.clear();
  pool::drain();
#if KVLAB_COUNT_NEW
  CHECK(g_live.load(std::memory_order_relaxed) == live0);
#endif
}

TEST_CASE(
    "blocks another thread allocated serve the next allocations of the thread that freed them" *
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

#if KVLAB_COUNT_NEW
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

namespace {
// A thread_local constructed before the thread's first cached free: its destructor runs after
// the cache's exit drain, and the block it frees must not be cached where nothing drains it.
struct FreesAtExit {
  void* block = pool::allocate(64);
  ~FreesAtExit() { pool::deallocate(block, 64); }
};
}  // namespace

TEST_CASE("a block freed after the thread's exit drain goes straight to operator delete") {
  const long before = g_live.load(std::memory_order_relaxed);
  std::thread t([] {
    thread_local FreesAtExit late;
    (void)late.block;
    pool::deallocate(pool::allocate(96), 96);  // activates the cache: its drain is registered now
  });
  t.join();
  CHECK(g_live.load(std::memory_order_relaxed) == before);

  // The same on a closed cache, on this thread: close() drains and bypasses from then on.
  std::size_t cached_before_close = 0, cached_after_close = 1;
  std::thread u([&] {
    pool::deallocate(pool::allocate(32), 32);
    cached_before_close = pool::cached_bytes();
    pool::close();
    pool::deallocate(pool::allocate(32), 32);
    cached_after_close = pool::cached_bytes();
  });
  u.join();
  CHECK(cached_before_close == 32);
  CHECK(cached_after_close == 0);
  CHECK(g_live.load(std::memory_order_relaxed) == before);
}
#endif
