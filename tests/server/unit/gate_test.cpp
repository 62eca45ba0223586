// The atomicity schemes' mutual exclusion, in process (server/core/atomicity.hpp): worker threads run
// "single-key commands" and "multi-key operations" through an Atomicity object exactly as
// kvlab-server's workers do, and record which stripes each is inside. A command is held open for
// a few microseconds, so that every interleaving the protocol must exclude gets many chances —
// far more than a server test over sockets gives the few-instruction windows of the fast paths.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "server/core/atomicity.hpp"

using kvlab::server::Atomicity;

namespace {

// Busy work that the compiler cannot drop: holds a section open for about `n` loop iterations.
void hold(unsigned n) {
  volatile unsigned sink = 0;
  for (unsigned i = 0; i < n; ++i) sink = sink + i;
}

struct Run {
  long singles = 0, multis = 0, violations = 0;
};

// Property: a single-key command on a key never runs while a multi-key operation holding that
// key (or every key) runs, and two multi-key operations sharing a key never overlap — under every
// scheme. inside[s] counts single-key commands in stripe s, owner[s] marks an exclusive holder.
Run exercise(Atomicity::Scheme scheme, unsigned workers, std::chrono::milliseconds budget) {
  Atomicity gate(scheme, workers);
  std::vector<std::atomic<int>> inside(Atomicity::kStripes);
  std::vector<std::atomic<int>> owner(Atomicity::kStripes);
  std::atomic<long> singles{0}, multis{0}, violations{0};
  const auto until = std::chrono::steady_clock::now() + budget;
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937 rng(1234 + w);
      std::vector<std::string> names;
      for (int k = 0; k < 8; ++k) names.push_back("key:" + std::to_string(k));
      std::vector<std::uint32_t> held;
      gate.online(w);
      // relaxed throughout: the counters are what the test observes, and the gate under test
      // provides the ordering; a missing exclusion shows as a count seen inside the other's
      // section, which needs no ordering to be observed.
      while (std::chrono::steady_clock::now() < until) {
        const bool multi = rng() % 8 == 0;
        if (!multi) {
          const std::string& key = names[rng() % names.size()];
          const std::uint32_t s = Atomicity::stripe_of(key);
          const int token = gate.begin_single(w, key);
          inside[s].fetch_add(1, std::memory_order_relaxed);
          if (owner[s].load(std::memory_order_relaxed) != 0)
            violations.fetch_add(1, std::memory_order_relaxed);
          hold(400);
          if (owner[s].load(std::memory_order_relaxed) != 0)
            violations.fetch_add(1, std::memory_order_relaxed);
          inside[s].fetch_sub(1, std::memory_order_relaxed);
          gate.end_single(w, token);
          singles.fetch_add(1, std::memory_order_relaxed);
        } else {
          const bool all = rng() % 16 == 0;
          std::vector<std::string_view> keys;
          keys.push_back(names[rng() % names.size()]);
          keys.push_back(names[rng() % names.size()]);
          gate.begin_multi(w, keys, all, &held);
          std::vector<std::uint32_t> mine;
          if (all) {
            for (std::uint32_t s = 0; s < Atomicity::kStripes; ++s) mine.push_back(s);
          } else {
            for (std::string_view k : keys) mine.push_back(Atomicity::stripe_of(k));
            std::sort(mine.begin(), mine.end());
            mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
          }
          for (std::uint32_t s : mine)
            if (owner[s].exchange(1, std::memory_order_relaxed) != 0)
              violations.fetch_add(1, std::memory_order_relaxed);
          for (std::uint32_t s : mine)
            if (inside[s].load(std::memory_order_relaxed) != 0)
              violations.fetch_add(1, std::memory_order_relaxed);
          // Longer than a single: a keyspace-wide operation that does not wait for the multi-key
          // operations already holding stripes (invariant 7) must meet one inside its section.
          hold(4000);
          for (std::uint32_t s : mine)
            if (inside[s].load(std::memory_order_relaxed) != 0)
              violations.fetch_add(1, std::memory_order_relaxed);
          for (std::uint32_t s : mine) owner[s].store(0, std::memory_order_relaxed);
          gate.end_multi(w, &held);
          multis.fetch_add(1, std::memory_order_relaxed);
        }
      }
      gate.offline(w);
    });
  }
  for (std::thread& t : threads) t.join();
  return {singles.load(), multis.load(), violations.load()};
}

}  // namespace

TEST_CASE(
    "no single-key command runs inside a multi-key operation on its key, under every scheme") {
  for (const Atomicity::SchemeInfo& info : Atomicity::schemes()) {
    CAPTURE(info.name);
    // Three workers on a 2-CPU machine: some are descheduled inside their sections, as in a
    // loaded server.
    const Run r = exercise(info.scheme, 3, std::chrono::milliseconds(700));
    MESSAGE(info.name << ": " << r.singles << " single-key, " << r.multis << " multi-key, "
                      << r.violations << " violations");
    CHECK(r.singles > 1000);
    CHECK(r.multis > 100);
    CHECK(r.violations == 0);
  }
}
