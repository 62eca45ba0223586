// hash/kvlab specifics beyond the conformance suite: online resize while every kind of operation
// runs, tag collisions, and memory returning to the reclaimer.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "structures/hash/kvlab.hpp"

namespace {
using Map = kvlab::hash::Kvlab<std::uint64_t>;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 8;
#else
constexpr int kScale = 1;
#endif

std::string key_of(std::uint64_t i) { return "key:" + std::to_string(i); }
}  // namespace

// Property: starting from 16 buckets, concurrent inserters force several resizes while readers
// run; every inserted key is found with its value during and after, and nothing is lost.
TEST_CASE("the table grows online while readers and writers run") {
  Map map(kvlab::MapOptions{.expected_keys = 16});
  const std::size_t initial = map.bucket_count();
  const int writers = 3;
  const std::uint64_t per = 40000 / kScale;
  std::atomic<int> done{0};
  std::atomic<std::uint64_t> wrong{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      for (std::uint64_t i = 0; i < per; ++i) {
        const std::uint64_t k = i * writers + w;
        map.insert(key_of(k), k);
        // The key just inserted is visible to its writer immediately, resize or not.
        if (!map.find(key_of(k), [&](const std::uint64_t& v) {
              if (v != k) wrong.fetch_add(1, std::memory_order_relaxed);
            })) {
          wrong.fetch_add(1, std::memory_order_relaxed);
        }
      }
      done.fetch_add(1, std::memory_order_release);
    });
  }
  threads.emplace_back([&] {
    std::mt19937_64 rng(5);
    while (done.load(std::memory_order_acquire) < writers) {
      const std::uint64_t k = rng() % (per * writers);
      map.find(key_of(k), [&](const std::uint64_t& v) {
        if (v != k) wrong.fetch_add(1, std::memory_order_relaxed);
      });
    }
  });
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
  CHECK(map.resizes() >= 3);
  CHECK(map.bucket_count() > initial);
  CHECK(map.size_approx() == per * writers);
  std::vector<bool> seen(per * writers);
  std::size_t n = 0;
  map.for_each([&](std::string_view k, const std::uint64_t& v) {
    REQUIRE(std::string(k) == key_of(v));
    REQUIRE_FALSE(seen[v]);
    seen[v] = true;
    ++n;
  });
  CHECK(n == per * writers);
}

// Property: updates and erases racing with a resize keep exact counts: per-key increments from
// several threads add up even when the key's bucket migrates between two of them.
TEST_CASE("updates racing with a resize lose no increment") {
  Map map(kvlab::MapOptions{.expected_keys = 16});
  const int threads_n = 4;
  const int per = 30000 / kScale;
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_n; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per; ++i) {
        // Half the operations grow the table, half bump 64 shared counters.
        if (i % 2 == 0) {
          map.insert(key_of(1000000 + t * per + i), 1);
        } else {
          map.update(key_of(i % 64), [](const std::uint64_t* c) {
            return kvlab::Update<std::uint64_t>::assign(c ? *c + 1 : 1);
          });
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0;
  for (int k = 0; k < 64; ++k) map.find(key_of(k), [&](const std::uint64_t& v) { total += v; });
  CHECK(total == static_cast<std::uint64_t>(threads_n) * (per / 2));
  CHECK(map.resizes() >= 1);
}

TEST_CASE("keys whose tags collide are told apart by hash and bytes") {
  Map map(kvlab::MapOptions{.expected_keys = 16});
  // 5000 keys in 16..larger buckets: many share a tag byte and a bucket.
  for (std::uint64_t i = 0; i < 5000; ++i) REQUIRE(map.insert(key_of(i), i));
  for (std::uint64_t i = 0; i < 5000; ++i) {
    std::uint64_t got = ~0ull;
    REQUIRE(map.find(key_of(i), [&](const std::uint64_t& v) { got = v; }));
    REQUIRE(got == i);
  }
  for (std::uint64_t i = 5000; i < 6000; ++i) CHECK_FALSE(map.find(key_of(i), [](auto&) {}));
  for (std::uint64_t i = 0; i < 5000; i += 2) REQUIRE(map.erase(key_of(i)));
  for (std::uint64_t i = 0; i < 5000; ++i) {
    CHECK(map.find(key_of(i), [](auto&) {}) == (i % 2 == 1));
  }
  CHECK(map.size_approx() == 2500);
}

TEST_CASE("replaced and erased entries go back to the reclaimer") {
  {
    Map map(kvlab::MapOptions{.expected_keys = 1024});
    for (int round = 0; round < 20; ++round) {
      for (std::uint64_t i = 0; i < 500; ++i) map.insert_or_assign(key_of(i), i + round);
      for (std::uint64_t i = 0; i < 500; i += 3) map.erase(key_of(i));
    }
  }
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  CHECK(kvlab::reclaim::stats().retired_unfreed == 0);
  CHECK(kvlab::reclaim::stats().freed > 9000);
}

// Property: prefetch() is a pure hint. It reports the current value of each present key (and
// nothing for absent ones), ignores keys past its batch limit, and changes nothing; under writers
// and resizes (and TSan in CI) it reads only published, epoch-protected memory.
TEST_CASE("prefetch reports present keys' values and changes nothing") {
  Map map(kvlab::MapOptions{.expected_keys = 16});
  for (std::uint64_t i = 0; i < 1000; i += 2) map.insert(key_of(i), i * 7);
  std::vector<std::string> names;
  for (std::uint64_t i = 0; i < 40; ++i) names.push_back(key_of(i));
  std::vector<std::string_view> keys(names.begin(), names.end());
  std::vector<std::uint64_t> seen;
  map.prefetch(keys, [&](const std::uint64_t& v) { seen.push_back(v); });
  // Keys 0, 2, ..., 30 are within the 32-key batch; 32..38 are beyond it.
  REQUIRE(seen.size() == 16);
  for (std::size_t j = 0; j < seen.size(); ++j) CHECK(seen[j] == j * 2 * 7);
  CHECK(map.size_approx() == 500);

  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (std::uint64_t i = 0; i < 200000 / kScale; ++i) {
      const std::uint64_t k = 1000 + i;
      map.insert(key_of(k), k);
      map.insert_or_assign(key_of(k % 40), k);  // values of the prefetched keys keep changing
      if (i % 3 == 0) map.erase(key_of(k - 1));
    }
    stop.store(true, std::memory_order_release);
  });
  std::uint64_t calls = 0, foreign = 0;
  while (!stop.load(std::memory_order_acquire)) {
    map.prefetch(keys, [&](const std::uint64_t& v) {
      ++calls;
      // A value one of these keys held at some time: an initial i * 7 (even i < 40) or a k >= 1000.
      foreign += !(v >= 1000 || (v % 14 == 0 && v < 280));
    });
  }
  writer.join();
  CHECK(calls > 0);
  CHECK(foreign == 0);
  for (std::uint64_t i = 0; i < 40; ++i) CHECK(map.find(key_of(i), [](const std::uint64_t&) {}));
}

// An update whose fn throws (the server's allocations can: bad_alloc) changes nothing and leaves
// the bucket unlocked: the next operation on the same key completes (bounded wait, 5 s).
TEST_CASE("an update whose function throws leaves the key usable") {
  Map map(kvlab::MapOptions{.expected_keys = 16});
  CHECK(map.insert("k", 1));
  CHECK_THROWS_AS(map.update("k",
                             [](const std::uint64_t*) -> kvlab::Update<std::uint64_t> {
                               throw std::runtime_error("no memory");
                             }),
                  std::runtime_error);
  auto next = std::async(std::launch::async, [&] {
    return map.update("k", [](const std::uint64_t* v) {
      return kvlab::Update<std::uint64_t>::assign(*v + 1);
    });
  });
  REQUIRE(next.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK(next.get() == kvlab::UpdateOutcome::assigned);
  std::uint64_t got = 0;
  CHECK(map.find("k", [&](const std::uint64_t& v) { got = v; }));
  CHECK(got == 2);
}
