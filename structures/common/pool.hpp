// Per-thread caches of freed small blocks, in front of operator new (ssmem-style).
//
// Why: the own structures copy on write. Every overwrite allocates a new entry (and, in the
// server, a new value object) and retires the old one, which the epoch reclaimer frees later on
// the thread that retired it. With two threads half of those blocks were allocated by the other
// thread. tbbmalloc [kukanov2007tbb] returns such a block to its owner through an atomic public
// free list, and glibc malloc beyond its small tcache locks the owner's arena: a cache-line
// transfer and an atomic (or a lock) on every write, which showed as server CPU per request
// rising with a second worker (papers/server-choices.md).
// This cache keeps what a thread frees for that thread's next allocation of the same size class,
// whoever allocated it, as the ssmem allocator of ASCYLIB does [david2015ascylib] and as the
// thread caches of jemalloc [evans2006jemalloc] and glibc do. Memory moves between threads
// freely; a block need not go back to the thread that allocated it.
//
// Layout (per thread, no sharing):
//   struct Cache { Bin bins[kClasses]; uint8_t state; };   // bins[c] holds blocks of (c+1)*16 B
//   struct Bin   { Block* head; uint32_t count; };         // intrusive LIFO stack
// Thread safety: every operation touches only the calling thread's cache; blocks cross threads
// only through the callers' own synchronization (the reclaimer's epochs), exactly as with free().
// Bounds: a bin holds at most kBinCap[c] = min(1024, kBinBytes / block size) blocks (256 to 1024);
// beyond that, blocks go straight to operator delete. Sizes above kMaxSize are never cached: they
// come from malloc (calloc for allocate_zeroed) and go back to free. A thread caches at most
// kBinBytes per class, 3.6 MiB in all (the classes under 128 B stop at 1024 blocks). The cache
// drains to operator delete when the thread exits (close()). Sanitizers: under AddressSanitizer
// the cache is bypassed, so every block goes through ASan's malloc and its quarantine still
// catches a use after free in the structures.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <new>

namespace kvlab::pool {

// kBypass is true when AddressSanitizer instruments the including translation unit (GCC defines
// __SANITIZE_ADDRESS__, Clang answers __has_feature); the cache is then bypassed, so that ASan
// sees every use after free. A constant, not a macro: nothing escapes to the includer.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kBypass = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kBypass = true;
#else
inline constexpr bool kBypass = false;
#endif
#else
inline constexpr bool kBypass = false;
#endif

inline constexpr std::size_t kGranule = 16;
inline constexpr std::size_t kMaxSize = 512;
inline constexpr std::size_t kClasses = kMaxSize / kGranule;
inline constexpr std::size_t kBinBytes = 128 * 1024;

namespace detail {

struct Block {
  Block* next;
};
struct Bin {
  Block* head;
  std::uint32_t count;
};
enum : std::uint8_t { kFresh = 0, kActive = 1, kClosed = 2 };
struct Cache {
  Bin bins[kClasses];
  std::uint8_t state;  // kFresh until the first cached block registers the exit drain
};

constexpr std::size_t class_of(std::size_t n) {
  return n == 0 ? 0 : (n - 1) / kGranule;
}
// The block size of class c.
constexpr std::size_t class_bytes(std::size_t c) {
  return (c + 1) * kGranule;
}

constexpr std::array<std::uint32_t, kClasses> make_caps() {
  std::array<std::uint32_t, kClasses> caps{};
  for (std::size_t c = 0; c < kClasses; ++c) {
    const std::size_t n = kBinBytes / class_bytes(c);
    caps[c] = static_cast<std::uint32_t>(n > 1024 ? 1024 : n);
  }
  return caps;
}
inline constexpr std::array<std::uint32_t, kClasses> kBinCap = make_caps();
static_assert(kBinCap[0] == 1024 && kBinCap[kClasses - 1] == 256, "256 to 1024 blocks");

// Trivially constructible and destructible, so access is a plain TLS load (no init guard).
inline thread_local constinit Cache tls{};

// Registers the drain that runs at thread exit (pool.cpp); marks the cache active.
void activate() noexcept;

// Bytes in blocks above kMaxSize now allocated (the server's used_memory adds them: they bypass
// operator new). Each thread adds to its own t_large_delta and folds it into g_large_bytes when
// it passes ±kLargeFold, as server/util/memory.cpp counts: one add to the shared line on every
// block above 512 B moved that line between the workers on every such SET (the shared-mode audit,
// papers/execution-models-plan.md §5 row 11). So large_bytes() is up to kLargeFold per thread
// stale, and a thread that exits without close() loses its unfolded delta.
// relaxed: a statistic; nothing is published through it.
inline std::atomic<std::int64_t> g_large_bytes{0};
inline constexpr std::int64_t kLargeFold = 32 * 1024;
inline thread_local constinit std::int64_t t_large_delta = 0;

inline void count_large(std::int64_t delta) noexcept {
  const std::int64_t v = t_large_delta + delta;
  if (v >= kLargeFold || v <= -kLargeFold) {
    g_large_bytes.fetch_add(v, std::memory_order_relaxed);  // relaxed: see g_large_bytes
    t_large_delta = 0;
  } else {
    t_large_delta = v;
  }
}

// Blocks above kMaxSize: malloc, or calloc when zeroed (its fresh pages are zero without a
// write, so a large zeroed block costs no memset and commits only what is touched).
inline void* allocate_large(std::size_t n, bool zeroed) {
  void* p = zeroed ? std::calloc(1, n) : std::malloc(n);
  if (p == nullptr) throw std::bad_alloc();
  count_large(static_cast<std::int64_t>(n));
  return p;
}

}  // namespace detail

// Folds the calling thread's share of large_bytes() into the total now (close() does it at
// thread exit; tests call it before reading an exact figure).
inline void fold_large_bytes() noexcept {
  // relaxed: see g_large_bytes.
  detail::g_large_bytes.fetch_add(detail::t_large_delta, std::memory_order_relaxed);
  detail::t_large_delta = 0;
}

// Bytes now allocated in blocks above kMaxSize (see detail::g_large_bytes): up to
// detail::kLargeFold per thread stale.
inline std::size_t large_bytes() {
  const std::int64_t v = detail::g_large_bytes.load(std::memory_order_relaxed);  // a statistic
  return v < 0 ? 0 : static_cast<std::size_t>(v);
}

// Mapped blocks: a large block that is meant to grow in place (server/data/object.hpp's long
// growable strings). Each is a private anonymous mapping of its own, reserved with MAP_NORESERVE
// so that a page costs memory only once it is touched: the reservation can run far ahead of the
// bytes in use, and the block grows into it with no copy and no page touched twice. Freed with
// munmap, on any thread. Accounting: large_bytes() counts what the owner declares in use (its
// touched pages), not the reservation; the owner adds to it with count_mapped() as it grows and
// passes what it counted back to unmap_block().
// Budget: at most kMaxMappedBlocks blocks (each is a kernel mapping, and vm.max_map_count, 65,530
// by default, bounds those for the whole process, the allocator's own included) and
// kMaxMappedBytes of address space in all; past either, or when mmap fails, map_block() answers
// nullptr and the caller uses allocate(), which always works as before.
inline constexpr std::size_t kMaxMappedBlocks = 16384;
inline constexpr std::size_t kMaxMappedBytes = std::size_t{16} << 40;  // 16 TiB of the 128 TiB

// A block of n bytes (n a multiple of 4 KiB) whose first `counted` bytes are added to
// large_bytes(); nullptr when the budget above is spent or mmap fails. Never throws.
void* map_block(std::size_t n, std::size_t counted) noexcept;
// Commits the n bytes at p (page-aligned, inside a block from map_block()) in one call
// (MADV_POPULATE_WRITE) rather than one page fault per page; the pages stay zero. Where the
// kernel lacks it (before Linux 5.14) it does nothing and the pages fault in on first write.
void populate(void* p, std::size_t n) noexcept;
// Unmaps a block from map_block(p's n) and subtracts `counted` from large_bytes().
void unmap_block(void* p, std::size_t n, std::size_t counted) noexcept;
// A mapped block's owner now uses delta more bytes (large_bytes()).
inline void count_mapped(std::size_t delta) noexcept {
  detail::count_large(static_cast<std::int64_t>(delta));
}
// Mapped blocks now live (tests, diagnostics).
std::size_t mapped_blocks() noexcept;
// Tests: caps the number of live mapped blocks at `blocks` (kMaxMappedBlocks to restore it).
void set_mapped_block_limit(std::size_t blocks) noexcept;

// The usable size of a block from allocate(n): n rounded up to its class, or n above kMaxSize.
constexpr std::size_t class_size(std::size_t n) {
  return n > kMaxSize ? n : detail::class_bytes(detail::class_of(n));
}

// A block of at least n bytes, aligned for any fundamental type. Throws std::bad_alloc.
inline void* allocate(std::size_t n) {
  if (n > kMaxSize) return detail::allocate_large(n, false);
  if constexpr (kBypass) return ::operator new(n);
  const std::size_t c = detail::class_of(n);
  detail::Bin& bin = detail::tls.bins[c];
  if (detail::Block* b = bin.head) {
    bin.head = b->next;
    --bin.count;
    return b;
  }
  return ::operator new(detail::class_bytes(c));
}

// allocate(n) with the first n bytes zero; above kMaxSize through calloc, which leaves fresh
// pages untouched (a SETRANGE at a large offset commits only the pages it writes).
inline void* allocate_zeroed(std::size_t n) {
  if (n > kMaxSize) return detail::allocate_large(n, true);
  void* p = allocate(n);
  std::memset(p, 0, n);
  return p;
}

// Gives back a block from allocate(n) or allocate_zeroed(n) (any thread's); n must be the size it
// was allocated with.
#pragma GCC diagnostic push
// GCC 12 pairs this free() with the operator new of allocate() for n <= kMaxSize after inlining
// both into one caller, and warns; the size decides the path on both sides, so they never meet.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
inline void deallocate(void* p, std::size_t n) noexcept {
  if (n > kMaxSize) {
    detail::count_large(-static_cast<std::int64_t>(n));
    return std::free(p);
  }
  if constexpr (kBypass) return ::operator delete(p);
  const std::size_t c = detail::class_of(n);
  detail::Cache& cache = detail::tls;
  detail::Bin& bin = cache.bins[c];
  if (cache.state != detail::kActive) {
    if (cache.state == detail::kClosed) return ::operator delete(p);  // thread is exiting
    detail::activate();
  }
  if (bin.count >= detail::kBinCap[c]) return ::operator delete(p);
  auto* b = static_cast<detail::Block*>(p);
  b->next = bin.head;
  bin.head = b;
  ++bin.count;
}
#pragma GCC diagnostic pop

// Bytes held in the calling thread's cache (tests, diagnostics).
std::size_t cached_bytes() noexcept;

// Returns the calling thread's cached blocks to operator delete (tests, the bench's baselines).
void drain() noexcept;

// drain(), and from then on the calling thread's deallocate() goes straight to operator delete.
// Runs at thread exit; the process-exit sweeps (the reclaimer's, libcds's) call it after freeing
// on the main thread, whose thread-exit drain has already run by then.
void close() noexcept;

}  // namespace kvlab::pool
