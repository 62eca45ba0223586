// YCSB's request distributions as tools/bench/ycsb.hpp generates them, against their published
// definitions (Cooper et al., SoCC 2010; Gray et al., SIGMOD 1994): the share of requests that
// the most popular 1 % of records draw under the scrambled Zipfian, the recency curve of latest,
// and the operation mixes of workloads A-F.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "tools/bench/ycsb.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

using namespace kvlab::bench::ycsb;

namespace {

// P(rank < k) for Gray et al.'s generator over n items with ζ(n) = zetan, θ = 0.99: ranks 0 and 1
// take u < 1/ζ and u < (1 + 0.5^θ)/ζ; above them rank = floor(n (ηu − η + 1)^(1/(1−θ))), so
// rank < k exactly when u < ((k/n)^(1−θ) − 1 + η) / η. This is the generator's definition, not
// the Zipf law it approximates (the two differ by a few per cent for ranks 2 to 20).
double gray_cdf(double k, double n, double zetan) {
  const double theta = kZipfianConstant;
  if (k <= 0) return 0;
  if (k <= 1) return 1.0 / zetan;
  const double zeta2 = 1.0 + std::pow(0.5, theta);
  const double eta = (1.0 - std::pow(2.0 / n, 1.0 - theta)) / (1.0 - zeta2 / zetan);
  const double u = (std::pow(k / n, 1.0 - theta) - 1.0 + eta) / eta;
  return std::min(1.0, std::max(zeta2 / zetan, u));
}

// The expected per-record probabilities of the scrambled Zipfian over n records, from its
// definition: rank r (Gray's Zipfian over 10^10 ranks, ζ = 26.469...) lands on record
// |FNV-1a-64(r)| mod n. The first `exact` ranks are placed one by one; the mass of the others
// (more than 99.99 % of the ranks, each record receiving about 10^10/n of them) is spread evenly.
std::vector<double> scrambled_expected(std::uint64_t n, std::uint64_t exact) {
  std::vector<double> p(n, 0.0);
  double placed = 0;
  for (std::uint64_t r = 0; r < exact; ++r) {
    const auto items = static_cast<double>(kScrambledItemCount);
    const double q = gray_cdf(static_cast<double>(r + 1), items, kScrambledZetan) -
                     gray_cdf(static_cast<double>(r), items, kScrambledZetan);
    p[key_hash(r) % n] += q;
    placed += q;
  }
  for (auto& x : p) x += (1.0 - placed) / static_cast<double>(n);
  return p;
}

double top_share(std::vector<double> weights, std::size_t top) {
  std::sort(weights.begin(), weights.end(), std::greater<>());
  double total = 0, head = 0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    total += weights[i];
    if (i < top) head += weights[i];
  }
  return head / total;
}

}  // namespace

TEST_CASE("the scrambled Zipfian gives the top 1 % of records the share its definition implies") {
  constexpr std::uint64_t kRecords = 10000;
  constexpr std::uint64_t kDraws = 2000000;
  const double expected = top_share(scrambled_expected(kRecords, 2000000), kRecords / 100);
  // About 21 %: the ranks come from 10^10 items, so a record's skew is milder than a Zipfian's
  // over the 10,000 records themselves (about 50 %).
  CHECK(expected > 0.18);
  CHECK(expected < 0.25);
  ScrambledZipfian gen(kRecords);
  Random r(42);
  std::vector<double> counts(kRecords, 0.0);
  for (std::uint64_t i = 0; i < kDraws; ++i) counts[gen.next(r)] += 1;
  const double observed = top_share(counts, kRecords / 100);
  MESSAGE("top 1% share: observed " << observed << ", expected " << expected);
  CHECK(std::fabs(observed - expected) < 0.005);
  // The hottest record is rank 0's: |FNV(0)| mod n, with about 1/ζ = 3.8 % of the requests.
  const auto hottest = std::max_element(counts.begin(), counts.end()) - counts.begin();
  CHECK(static_cast<std::uint64_t>(hottest) == key_hash(0) % kRecords);
  CHECK(std::fabs(counts[static_cast<std::size_t>(hottest)] / kDraws -
                  (1.0 / kScrambledZetan + 0.8 / kRecords)) < 0.002);
}

TEST_CASE("latest makes the newest records the most popular, along a Zipfian recency curve") {
  constexpr std::uint64_t kRecords = 10000;
  constexpr std::uint64_t kDraws = 1000000;
  Latest gen(kRecords);
  Random r(7);
  std::vector<std::uint64_t> by_distance(kRecords, 0);
  for (std::uint64_t i = 0; i < kDraws; ++i) ++by_distance[kRecords - 1 - gen.next(r, kRecords)];
  const double zn = Zipfian::zeta(kRecords, kZipfianConstant);
  const auto n = static_cast<double>(kRecords);
  std::uint64_t within = 0;
  std::uint64_t k = 0;
  for (const std::uint64_t limit : {1ull, 10ull, 100ull, 1000ull}) {
    for (; k < limit; ++k) within += by_distance[k];
    const double expected = gray_cdf(static_cast<double>(limit), n, zn);
    MESSAGE("newest " << limit << ": observed " << static_cast<double>(within) / kDraws
                      << ", expected " << expected);
    CHECK(std::fabs(static_cast<double>(within) / kDraws - expected) < 0.003);
  }
  // Inserts move the curve: with ten times the records the newest one is still the hottest, with
  // 1/ζ(100,000) of the requests (ζ grows with the records).
  std::uint64_t newest = 0;
  for (int i = 0; i < 100000; ++i) newest += gen.next(r, kRecords * 10) == kRecords * 10 - 1;
  CHECK(std::fabs(static_cast<double>(newest) / 100000 -
                  1.0 / Zipfian::zeta(kRecords * 10, kZipfianConstant)) < 0.004);
}

TEST_CASE("the six core workloads have the paper's operation mixes and distributions") {
  const char* names[] = {"ycsb-a", "ycsb-b", "ycsb-c", "ycsb-d", "ycsb-e", "ycsb-f"};
  const double reads[] = {0.5, 0.95, 1.0, 0.95, 0, 0.5};
  for (int i = 0; i < 6; ++i) {
    const auto w = workload_by_name(names[i]);
    REQUIRE(w.has_value());
    CHECK(w->read + w->update + w->insert + w->scan + w->rmw == doctest::Approx(1.0));
    RequestStream s(*w, 1000, 100, 1);
    std::uint64_t next = 1000;
    std::uint64_t n_read = 0, n_scan = 0, n_insert = 0, max_scan = 0, min_scan = 1000;
    for (int j = 0; j < 100000; ++j) {
      const Request q = s.next(next, [&] { return next++; });
      CHECK(q.record < next);
      n_read += q.op == Op::kRead;
      n_insert += q.op == Op::kInsert;
      if (q.op == Op::kScan) {
        ++n_scan;
        max_scan = std::max<std::uint64_t>(max_scan, q.scan_length);
        min_scan = std::min<std::uint64_t>(min_scan, q.scan_length);
      }
    }
    CHECK(std::fabs(n_read / 100000.0 - reads[i]) < 0.006);
    CHECK(std::fabs(n_insert / 100000.0 - w->insert) < 0.003);
    if (w->scan > 0) {
      CHECK(std::fabs(n_scan / 100000.0 - 0.95) < 0.003);
      CHECK(min_scan == 1);
      CHECK(max_scan == kMaxScanLength);
    }
  }
  CHECK(workload_by_name("ycsb-d")->dist == Distribution::kLatest);
  CHECK(!workload_by_name("ycsb-g").has_value());
  CHECK(!workload_by_name("tpcc").has_value());
}

TEST_CASE("record keys are user + the FNV-1a hash of the record number") {
  // FNV-1a-64 of the 8 bytes of 0: the offset basis times the prime, eight times.
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) h *= 1099511628211ull;
  CHECK(fnv1a64(0) == h);
  CHECK(key_name(1).rfind("user", 0) == 0);
  CHECK(key_name(1) != key_name(2));
  CHECK(key_hash(5) <= static_cast<std::uint64_t>(INT64_MAX));
}
