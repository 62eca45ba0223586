// The Zipf generator behind `kvlab bench --dist zipf:θ` draws the distribution it claims.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "tools/bench/zipf.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "tools/bench/harness.hpp"
#include "tools/bench/map_workload.hpp"

using kvlab::bench::ZipfSampler;
using kvlab::bench::detail::Rng;

namespace {

// Frequencies of ranks 1..n over `draws` samples.
std::vector<double> frequencies(std::uint64_t n, double theta, std::uint64_t draws) {
  ZipfSampler z(n, theta);
  Rng rng(7);
  std::vector<std::uint64_t> count(n + 1, 0);
  std::uint64_t out_of_range = 0;
  for (std::uint64_t i = 0; i < draws; ++i) {
    const std::uint64_t k = z.sample([&] { return rng.unit(); });
    if (k < 1 || k > n) {
      ++out_of_range;
      continue;
    }
    ++count[k];
  }
  CHECK(out_of_range == 0);
  std::vector<double> f(n + 1);
  for (std::uint64_t k = 1; k <= n; ++k) f[k] = static_cast<double>(count[k]) / draws;
  return f;
}

}  // namespace

TEST_CASE("the top key's frequency under zipf:0.99 is within 10% of 1/H(n, 0.99)") {
  const std::uint64_t n = 100000;
  const auto f = frequencies(n, 0.99, 2000000);
  const double theory = ZipfSampler::probability(1, n, 0.99);
  CHECK(f[1] == doctest::Approx(theory).epsilon(0.10));
  // The next ranks follow k^-θ too.
  CHECK(f[2] == doctest::Approx(ZipfSampler::probability(2, n, 0.99)).epsilon(0.10));
  CHECK(f[10] == doctest::Approx(ZipfSampler::probability(10, n, 0.99)).epsilon(0.10));
}

TEST_CASE("the top key's frequency matches theory for θ below, at and above 1") {
  for (const double theta : {0.5, 1.0, 1.5}) {
    CAPTURE(theta);
    const std::uint64_t n = 1000;
    const auto f = frequencies(n, theta, 1000000);
    CHECK(f[1] == doctest::Approx(ZipfSampler::probability(1, n, theta)).epsilon(0.10));
  }
}

TEST_CASE("the hottest scrambled key of the workload has the top Zipf frequency") {
  kvlab::bench::BenchConfig c;
  c.keys = 50000;
  c.dist = {true, 0.99};
  const kvlab::bench::detail::KeyPicker picker(c);
  Rng rng(11);
  std::map<std::uint64_t, std::uint64_t> count;
  const std::uint64_t draws = 1000000;
  std::uint64_t out_of_range = 0;
  for (std::uint64_t i = 0; i < draws; ++i) {
    const std::uint64_t k = picker.next(rng);
    out_of_range += k >= c.keys;
    ++count[k];
  }
  CHECK(out_of_range == 0);
  std::uint64_t top = 0;
  for (const auto& [k, n] : count) top = std::max(top, n);
  CHECK(static_cast<double>(top) / draws ==
        doctest::Approx(ZipfSampler::probability(1, c.keys, 0.99)).epsilon(0.10));
  // Scrambled: the hottest key is not simply index 0 followed by 1, 2, ...
  CHECK(count[1] < top / 4);
}
