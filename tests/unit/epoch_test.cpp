// Epoch-based reclamation: nothing is freed while a thread that could see it is still inside,
// everything is freed once every thread has passed a quiescent point, and the statistics say so.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "structures/reclaim/epoch.hpp"

namespace {

constexpr int kvlab_scale() {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return 8;
#else
  return 1;
#endif
}

struct Tracked {
  static std::atomic<int> alive;
  int payload = 42;
  Tracked() { alive.fetch_add(1, std::memory_order_relaxed); }
  ~Tracked() {
    payload = -1;
    alive.fetch_sub(1, std::memory_order_relaxed);
  }
};
std::atomic<int> Tracked::alive{0};

}  // namespace

// Property: an object retired while a reader is inside a Guard is not freed until that reader
// leaves, however often the retiring thread tries to collect. (Under ASan a use after free would
// also be reported.)
TEST_CASE("an object retired under a guarded reader is freed only after the reader leaves") {
  std::atomic<Tracked*> shared{new Tracked};
  std::atomic<int> phase{0};
  std::thread reader([&] {
    kvlab::reclaim::Guard g;
    Tracked* t = shared.load(std::memory_order_acquire);
    phase.store(1, std::memory_order_release);
    while (phase.load(std::memory_order_acquire) != 2) std::this_thread::yield();
    CHECK(t->payload == 42);  // still alive although retired
    phase.store(3, std::memory_order_release);
  });
  while (phase.load(std::memory_order_acquire) != 1) std::this_thread::yield();
  Tracked* old = shared.exchange(nullptr, std::memory_order_acq_rel);
  const int before = Tracked::alive.load();
  kvlab::reclaim::retire(old);
  for (int i = 0; i < 50; ++i) kvlab::reclaim::flush();
  CHECK(Tracked::alive.load() == before);  // the reader pins it
  phase.store(2, std::memory_order_release);
  while (phase.load(std::memory_order_acquire) != 3) std::this_thread::yield();
  reader.join();
  for (int i = 0; i < 10 && Tracked::alive.load() == before; ++i) kvlab::reclaim::flush();
  CHECK(Tracked::alive.load() == before - 1);
}

// Property: a QSBR-online thread pins everything until it passes quiescent points; an object
// retired in epoch e needs the epoch to reach e + 2, and each advance needs the online thread's
// next quiescent point, so two event-loop iterations free it. Then the count returns to zero.
TEST_CASE("an online thread holds back reclamation until it passes a quiescent point") {
  std::atomic<int> phase{0};
  std::thread server_like([&] {
    kvlab::reclaim::online();
    phase.store(1, std::memory_order_release);
    while (phase.load(std::memory_order_acquire) != 2) std::this_thread::yield();
    kvlab::reclaim::quiescent();
    phase.store(3, std::memory_order_release);
    while (phase.load(std::memory_order_acquire) != 4) std::this_thread::yield();
    kvlab::reclaim::quiescent();
    phase.store(5, std::memory_order_release);
    while (phase.load(std::memory_order_acquire) != 6) std::this_thread::yield();
    kvlab::reclaim::offline();
  });
  while (phase.load(std::memory_order_acquire) != 1) std::this_thread::yield();
  const int before = Tracked::alive.load();
  for (int i = 0; i < 1000; ++i) kvlab::reclaim::retire(new Tracked);
  for (int i = 0; i < 20; ++i) kvlab::reclaim::flush();
  CHECK(Tracked::alive.load() >= before + 999);  // at most what was retired before it went online
  auto s = kvlab::reclaim::stats();
  CHECK(s.retired_unfreed >= 999);
  phase.store(2, std::memory_order_release);
  while (phase.load(std::memory_order_acquire) != 3) std::this_thread::yield();
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();  // one quiescent point: one advance
  CHECK(Tracked::alive.load() > before);
  phase.store(4, std::memory_order_release);
  while (phase.load(std::memory_order_acquire) != 5) std::this_thread::yield();
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  CHECK(Tracked::alive.load() == before);
  CHECK(kvlab::reclaim::stats().retired_unfreed == 0);
  phase.store(6, std::memory_order_release);
  server_like.join();
}

TEST_CASE("a stalled announced thread shows up as epoch lag") {
  std::atomic<int> phase{0};
  std::thread stalled([&] {
    kvlab::reclaim::Guard g;
    phase.store(1, std::memory_order_release);
    while (phase.load(std::memory_order_acquire) != 2) std::this_thread::yield();
  });
  while (phase.load(std::memory_order_acquire) != 1) std::this_thread::yield();
  for (int i = 0; i < 300; ++i) kvlab::reclaim::retire(new Tracked);
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  const auto s = kvlab::reclaim::stats();
  CHECK(s.epoch_lag >= 1);
  CHECK(s.retired_unfreed >= 300);
  phase.store(2, std::memory_order_release);
  stalled.join();
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  CHECK(kvlab::reclaim::stats().retired_unfreed == 0);
  CHECK(kvlab::reclaim::stats().epoch_lag == 0);
}

// Property: many threads retiring and reading concurrently never free an object a guarded reader
// holds (each reader checks the payload it loaded), and at the end everything is freed.
TEST_CASE("concurrent swaps and guarded reads never observe a freed object") {
  std::atomic<Tracked*> slot{new Tracked};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        kvlab::reclaim::Guard g;
        Tracked* p = slot.load(std::memory_order_acquire);
        if (p->payload != 42) bad.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 20000; ++i) {
      kvlab::reclaim::Guard g;
      Tracked* old = slot.exchange(new Tracked, std::memory_order_acq_rel);
      kvlab::reclaim::retire(old);
    }
    stop.store(true, std::memory_order_relaxed);
  });
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  kvlab::reclaim::retire(slot.exchange(nullptr));
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  CHECK(kvlab::reclaim::stats().retired_unfreed == 0);
  CHECK(Tracked::alive.load() == 0);
}

namespace {
// An object whose "free" only poisons it, so a reader that still holds it can tell.
struct Poisonable {
  std::atomic<std::uint64_t> magic{0xabcdef};
};
std::mutex g_graveyard_mutex;
std::vector<Poisonable*> g_graveyard;
}  // namespace

// Regression: objects left behind by exiting threads (the orphan list) carry epochs that can be
// newer than the epoch a concurrent collector read; they must still wait for two advances.
// Short-lived threads swap and retire objects and exit, while a reader holds a guard and checks
// that nothing it loaded was "freed" (poisoned) under it.
TEST_CASE("objects orphaned by exiting threads are not freed under a guarded reader") {
  std::atomic<Poisonable*> slots[4];
  for (auto& s : slots) s.store(new Poisonable);
  std::atomic<int> writers_done{0};
  std::atomic<long> bad{0};
  const int rounds = 100 / kvlab_scale();
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < rounds; ++round) {
        std::thread([&, t] {
          unsigned x = t + 1 + round * 7;
          for (int i = 0; i < 10000; ++i) {
            kvlab::reclaim::Guard g;
            x = x * 1103515245 + 12345;
            auto& s = slots[(x >> 8) % 4];
            Poisonable* fresh = new Poisonable;
            Poisonable* old = s.exchange(fresh, std::memory_order_acq_rel);
            kvlab::reclaim::retire(old, [](void* p) {
              auto* q = static_cast<Poisonable*>(p);
              q->magic.store(0, std::memory_order_relaxed);
              std::lock_guard lock(g_graveyard_mutex);
              g_graveyard.push_back(q);
            });
          }
        }).join();  // exits with retired objects left: they become orphans
      }
      writers_done.fetch_add(1, std::memory_order_release);
    });
  }
  threads.emplace_back([&] {
    while (writers_done.load(std::memory_order_acquire) < 3) {
      kvlab::reclaim::Guard g;
      Poisonable* held[4];
      for (int k = 0; k < 4; ++k) held[k] = slots[k].load(std::memory_order_acquire);
      for (int spin = 0; spin < 2000; ++spin) {
        for (auto* o : held) {
          if (o->magic.load(std::memory_order_relaxed) != 0xabcdef) bad.fetch_add(1);
        }
      }
    }
  });
  for (auto& t : threads) t.join();
  CHECK(bad.load() == 0);
  for (auto& s : slots) kvlab::reclaim::retire(s.exchange(nullptr), [](void* p) {
    delete static_cast<Poisonable*>(p);
  });
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  std::lock_guard lock(g_graveyard_mutex);
  for (auto* p : g_graveyard) delete p;
  g_graveyard.clear();
}

// Property: one collection pass frees at most kFreeBudget objects, so a thread that retired a
// large batch (FLUSHALL's values) frees it over several passes; backlog() says a pass left
// expired objects behind, and further passes free them all.
TEST_CASE("a large batch is freed over bounded passes, and backlog() tells the caller") {
  std::thread t([] {
    namespace r = kvlab::reclaim;
    r::online();
    const int before = Tracked::alive.load();
    const int n = 3 * static_cast<int>(r::kFreeBudget) + 5;
    for (int i = 0; i < n; ++i) r::retire(new Tracked);
    CHECK(Tracked::alive.load() == before + n);  // this thread is announced: nothing expired
    r::quiescent();  // announce the newer epoch: what was sealed before may expire now
    r::quiescent();
    const int left = Tracked::alive.load() - before;
    CHECK(left < n);
    CHECK(n - left <= 2 * static_cast<int>(r::kFreeBudget));  // at most one budget per pass
    CHECK(r::backlog());
    int passes = 2;
    while (Tracked::alive.load() != before && passes < 100) {
      r::quiescent();
      ++passes;
    }
    CHECK(Tracked::alive.load() == before);
    CHECK(passes >= 4);
    CHECK_FALSE(r::backlog());
    r::offline();
  });
  t.join();
}
