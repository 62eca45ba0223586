// A test-and-test-and-set spin lock for tiny critical sections (one value cell). After a short
// spin it yields, so a lock holder that was preempted (oversubscribed server threads) gets the CPU
// back instead of being starved by spinners.
#pragma once

#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvlab {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

class SpinLock {
 public:
  void lock() {
    for (unsigned spins = 0;;) {
      // acquire: pairs with the release in unlock(), so the holder's writes are visible to us.
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      // relaxed: only a hint that the lock may be free; the exchange above re-checks.
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 128) {
          cpu_relax();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  bool try_lock() {
    // acquire: as in lock().
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  // release: publishes the critical section's writes to the next acquirer.
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace kvlab
