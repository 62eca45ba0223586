// The long linearizability run: for each of a few backends (one per family and kind of
// synchronization, one without concurrent erase, and kvlab's own hash table and skiplist), record
// and check histories for KVLAB_LINCHECK_SECONDS seconds (default 4), varying threads (2-4), hot
// keys (1-3) and round length between rounds. The conformance suite runs the same checker for about a second per
// backend; this run is for the rare interleavings.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "structures/hash/cds_feldman.hpp"
#include "structures/hash/cds_michael.hpp"
#include "structures/hash/kvlab.hpp"
#include "structures/hash/locked.hpp"
#include "structures/hash/tbb.hpp"
#include "structures/hash/tbb_unordered.hpp"
#include "structures/skiplist/cds.hpp"
#include "structures/skiplist/kvlab.hpp"
#include "tests/lincheck/lincheck.hpp"

namespace {

namespace lc = kvlab::lincheck;

double seconds() {
  const char* s = std::getenv("KVLAB_LINCHECK_SECONDS");
  const double v = s ? std::atof(s) : 0.0;
  return v > 0 ? v : 4.0;
}

}  // namespace

// Property: every per-key history from 2-4 threads on 1-3 hot keys has a linearization; erase
// and update-erase take part only where the backend declares concurrent erase.
TEST_CASE_TEMPLATE("long runs on hot keys stay linearizable", M,
                   kvlab::hash::Locked<std::uint64_t>, kvlab::hash::Tbb<std::uint64_t>,
                   kvlab::hash::TbbUnordered<std::uint64_t>, kvlab::hash::CdsMichael<std::uint64_t>,
                   kvlab::hash::CdsFeldman<std::uint64_t>, kvlab::skiplist::Cds<std::uint64_t>,
                   kvlab::hash::Kvlab<std::uint64_t>, kvlab::skiplist::Kvlab<std::uint64_t>) {
  CAPTURE(M::kTraits.name);
  kvlab::MapOptions options;
  options.expected_keys = 1 << 14;
  M map(options);
  const auto start = std::chrono::steady_clock::now();
  const auto total = std::chrono::duration<double>(seconds());
  int rounds = 0;
  std::size_t ops = 0, states = 0, overlapping = 0;
  for (unsigned pass = 0; std::chrono::steady_clock::now() - start < total; ++pass) {
    lc::RunOptions o;
    o.threads = 2 + static_cast<int>(pass % 3);
    o.keys = 1 + static_cast<int>((pass / 3) % 3);
    o.ops_per_thread = 100 << (pass % 3);  // 100 to 400
    o.erase = M::kTraits.concurrent_erase;
    o.budget = std::chrono::milliseconds(250);
    o.seed = 1 + pass * 7919u;
    const lc::RunSummary s = lc::run(map, o);
    rounds += s.rounds;
    ops += s.ops;
    states += s.states;
    overlapping += s.overlapping;
    INFO(s.report);
    REQUIRE(s.linearizable);
    CHECK_FALSE(s.gave_up);
    map.clear();  // run() reuses key names each pass; quiescent here, so fine without concurrent erase
  }
  MESSAGE(M::kTraits.name << ": " << rounds << " rounds, " << ops << " operations ("
                          << overlapping << " overlapping another), " << states
                          << " search states");
}
