// The queue conformance suite, compiled once per queue backend (see meson.build).
// Properties: no loss, no duplicates, per-producer FIFO when the backend declares `fifo`, and a
// bounded queue reports full instead of blocking.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include KVLAB_BACKEND_HEADER

namespace {

using Queue = KVLAB_BACKEND_TEMPLATE<std::uint64_t>;
constexpr const kvlab::BackendTraits& kTraits = Queue::kTraits;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 8;
#else
constexpr int kScale = 1;
#endif

// Items carry their producer in the top 16 bits and a per-producer sequence number below.
constexpr std::uint64_t item(std::uint64_t producer, std::uint64_t seq) {
  return (producer << 48) | seq;
}

kvlab::QueueOptions options() {
  kvlab::QueueOptions o;
  o.capacity = 1024;
  return o;
}

// push, retrying while a bounded queue is full (consumers are draining it).
void push_retry(Queue& q, std::uint64_t v) {
  while (!q.push(v)) std::this_thread::yield();
}

}  // namespace

TEST_CASE("the backend declares queue traits") {
  CHECK(kTraits.family == "queue");
  CHECK(kTraits.name.substr(0, 6) == "queue/");
  CHECK(!kTraits.reference.empty());
}

TEST_CASE("a single thread gets back what it pushed, in order when fifo") {
  Queue q(options());
  CHECK_FALSE(q.try_pop().has_value());
  for (std::uint64_t i = 0; i < 500; ++i) REQUIRE(q.push(i));
  CHECK(q.size_approx() == 500);
  std::vector<std::uint64_t> got;
  while (auto v = q.try_pop()) got.push_back(*v);
  REQUIRE(got.size() == 500);
  if (kTraits.fifo) {
    for (std::uint64_t i = 0; i < 500; ++i) REQUIRE(got[i] == i);
  } else {
    std::set<std::uint64_t> s(got.begin(), got.end());
    CHECK(s.size() == 500);
  }
  CHECK_FALSE(q.try_pop().has_value());
  CHECK(q.size_approx() == 0);
}

TEST_CASE("a bounded queue reports full instead of blocking") {
  if (!kTraits.bounded) {
    MESSAGE("unbounded");
    return;
  }
  Queue q(options());
  std::size_t pushed = 0;
  while (pushed < 1'000'000 && q.push(pushed)) ++pushed;
  CHECK(pushed >= 1024);
  CHECK(pushed < 1'000'000);
  CHECK_FALSE(q.push(7));
  REQUIRE(q.try_pop().has_value());
  CHECK(q.push(7));  // room again after one pop
}

// Property: with P producers and C consumers running at once, every pushed item is popped
// exactly once, and (fifo backends) each consumer sees each producer's items in push order.
// Single-consumer backends run with one consumer, chosen by their declared capability.
TEST_CASE("multi-producer multi-consumer: no loss, no duplicates, per-producer order") {
  for (auto [producers, wanted_consumers] :
       {std::pair{1, 1}, std::pair{2, 2}, std::pair{4, 2}, std::pair{2, 4}}) {
    const int consumers = kTraits.single_consumer ? 1 : wanted_consumers;
    CAPTURE(producers);
    CAPTURE(consumers);
    Queue q(options());
    const std::uint64_t per = 50000 / kScale;
    std::atomic<int> producers_done{0};
    std::vector<std::vector<std::uint64_t>> popped(consumers);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        for (std::uint64_t s = 0; s < per; ++s) push_retry(q, item(p, s));
        producers_done.fetch_add(1, std::memory_order_release);
      });
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (int c = 0; c < consumers; ++c) {
      threads.emplace_back([&, c] {
        auto& mine = popped[c];
        for (;;) {
          if (auto v = q.try_pop()) {
            mine.push_back(*v);
            continue;
          }
          // acquire: pairs with the producers' release, so their pushes are visible.
          if (producers_done.load(std::memory_order_acquire) == producers) {
            while (auto v = q.try_pop()) mine.push_back(*v);
            return;
          }
          if (std::chrono::steady_clock::now() > deadline) return;
          std::this_thread::yield();
        }
      });
    }
    for (auto& t : threads) t.join();

    std::vector<std::vector<bool>> seen(producers, std::vector<bool>(per, false));
    std::size_t total = 0, duplicates = 0, order_violations = 0;
    for (const auto& mine : popped) {
      std::vector<std::int64_t> last(producers, -1);
      for (std::uint64_t v : mine) {
        const std::uint64_t p = v >> 48, s = v & ((std::uint64_t{1} << 48) - 1);
        REQUIRE(p < static_cast<std::uint64_t>(producers));
        REQUIRE(s < per);
        if (seen[p][s]) ++duplicates;
        seen[p][s] = true;
        if (static_cast<std::int64_t>(s) <= last[p]) ++order_violations;
        last[p] = static_cast<std::int64_t>(s);
        ++total;
      }
    }
    CHECK(duplicates == 0);
    CHECK(total == producers * per);
    if (kTraits.fifo) CHECK(order_violations == 0);
    CHECK_FALSE(q.try_pop().has_value());
  }
}
