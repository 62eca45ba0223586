// Epoch-based reclamation (EBR) with explicit quiescent points (QSBR), for kvlab's own structures
// and for the server's values.
//
// What it is: Fraser's epoch scheme [fraser2004practical] with the QSBR variant of McKenney and
// Slingwine: a global epoch E; each thread publishes the epoch it last observed; an object
// retired in epoch e is freed once every thread has been seen in an epoch > e + 1, i.e. once the
// global epoch reached e + 2, because a thread that could still hold a reference must have
// announced an epoch <= e + 1.
//
// Two ways to be "inside":
//  - Guard (EBR): `Guard g;` around an operation announces the thread for its duration. Nested
//    guards are free. This is what the structures do on every operation, so any thread may call
//    them without setup. Cost: one store + one full fence on entry, one release store on exit.
//  - Online (QSBR): a thread that calls `online()` stays announced until `offline()`, and
//    promises to call `quiescent()` regularly at points where it holds no references (the server:
//    at the end of every event-loop iteration, and offline() around epoll_wait). While online,
//    Guards cost one thread-local branch: find() writes no shared memory at all.
//
// Thread safety: all functions are thread-safe; each thread has its own record (registered on
// first use, recycled after the thread exits). retire() is thread-local until a batch is full.
// Progress: blocking for reclamation only (a stalled announced thread stops the epoch); readers
// and retire() never wait.
// Memory bound: a thread that stays announced without passing quiescent points holds back every
// retired object; that is visible as `retired_unfreed` and `epoch_lag` in stats(), which the
// server's INFO and the benchmarks report.
//
// Invariants:
//  1. A record's announced epoch is kIdle or a value the global epoch had at announcement time.
//  2. The global epoch advances from e to e+1 only when every announced record shows e.
//  3. An object retired at epoch e is freed only when the global epoch is >= e + 2.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvlab::reclaim {

struct Stats {
  std::uint64_t global_epoch;     // current global epoch
  std::uint64_t epoch_lag;        // global epoch minus the oldest announced epoch (0 if none)
  std::uint64_t retired_unfreed;  // objects retired and not yet freed, all threads
  std::uint64_t freed;            // objects freed since start
  std::uint64_t threads;          // thread records in use
};

Stats stats();

namespace detail {

constexpr std::uint64_t kIdle = ~std::uint64_t{0};

struct Retired {
  void* object;
  void (*deleter)(void*);
  std::uint64_t epoch;
};

// One per thread, on its own cache line (the announced epoch is read by every reclaiming thread).
struct alignas(64) Record {
  std::atomic<std::uint64_t> announced{kIdle};
  std::atomic<bool> in_use{false};
  // Written by the owner only (relaxed), read by stats(): counts, not synchronization.
  std::atomic<std::uint64_t> retired_total{0};
  std::atomic<std::uint64_t> freed_total{0};
  Record* next = nullptr;  // immutable once the record is published in the registry list
  // Thread-private state below (only the owning thread touches it).
  unsigned guard_depth = 0;
  bool online = false;
  // [0, head) are freed and wait for compaction; [head, sealed) carry their epoch; the rest are
  // not sealed yet. Freeing advances head; the vector is compacted once head passes half of it,
  // so a long backlog freed in bounded passes costs O(1) per object.
  std::vector<Retired> retired;
  std::size_t head = 0;
  std::size_t sealed = 0;
  // The global epoch at this thread's last free pass: while the epoch stands still nothing new
  // expires, so collect() does not walk the list again.
  std::uint64_t freed_at_epoch = kIdle;
};

// The calling thread's record, once it has one. A plain pointer with no destructor, so that the
// fast path of self() inlines into every Guard as one thread-local load and a branch (the owning
// Holder, with the thread-exit work, lives in epoch.cpp).
inline thread_local Record* t_record = nullptr;
Record& self_slow();  // registers the calling thread (first use)
[[gnu::always_inline]] inline Record& self() {  // the calling thread's record
  if (Record* r = t_record) [[likely]] return *r;
  return self_slow();
}
void enter_slow(Record& r);
// Tries to advance the epoch and frees what is safe, at most `budget` of r's own objects.
void collect(Record& r, std::size_t budget);
extern std::atomic<std::uint64_t> g_epoch;

}  // namespace detail

// RAII critical section: references obtained inside stay valid until it ends.
// Always inlined: GCC otherwise keeps the constructor out of line in large callers (the benchmark's
// operation loop), and a call per operation cost more than the branch it wraps.
class Guard {
 public:
  [[gnu::always_inline]] Guard() : r_(detail::self()) {
    if (r_.guard_depth++ == 0 && !r_.online) detail::enter_slow(r_);
  }
  [[gnu::always_inline]] ~Guard() {
    if (--r_.guard_depth == 0 && !r_.online) {
      // release: every read of protected memory in the section happens before a reclaimer that
      // acquires this idle announcement frees anything.
      r_.announced.store(detail::kIdle, std::memory_order_release);
    }
  }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  detail::Record& r_;
};

// QSBR mode for long-running threads (see the file comment).
void online();
void offline();
void quiescent();

// Hands `object` to the reclaimer: `deleter(object)` runs once no thread can hold a reference.
// REQUIRES: object is already unreachable for threads that start after this call.
void retire(void* object, void (*deleter)(void*));

template <class T>
void retire(T* object) {
  retire(static_cast<void*>(object), [](void* p) { delete static_cast<T*>(p); });
}

// Frees everything retired by the calling thread that is safe to free now (tests and shutdown).
void flush();

// A pass of collection (retire(), quiescent(), offline()) frees at most kFreeBudget objects, so
// that a thread that retired a million objects at once (FLUSHALL) frees them over many passes,
// between the requests it serves, instead of stopping for the whole batch. backlog(): the calling
// thread has objects that are safe to free now and were left for a later pass; a thread that
// sleeps between passes should not sleep long while it holds them (the server's workers poll
// without blocking).
inline constexpr std::size_t kFreeBudget = 8192;
bool backlog();

}  // namespace kvlab::reclaim
