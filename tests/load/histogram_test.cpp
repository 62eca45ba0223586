// Unit tests of the log-linear histogram: precision over 1 us .. 1 min, and exact merging.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "tools/load/histogram.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>

using kvlab::load::Histogram;

TEST_SUITE("unit") {
  TEST_CASE("bucket boundaries are contiguous and every value maps into its own bucket") {
    for (std::size_t i = 1; i < Histogram::kBucketCount; ++i)
      REQUIRE(Histogram::lowest_equivalent(i) == Histogram::highest_equivalent(i - 1) + 1);
    std::mt19937_64 rng(42);
    for (int i = 0; i < 100000; ++i) {
      const std::uint64_t v = rng() % (Histogram::kMaxValue + 1);
      const std::size_t idx = Histogram::index_of(v);
      REQUIRE(idx < Histogram::kBucketCount);
      REQUIRE(Histogram::lowest_equivalent(idx) <= v);
      REQUIRE(v <= Histogram::highest_equivalent(idx));
    }
    CHECK(Histogram::index_of(Histogram::kMaxValue) == Histogram::kBucketCount - 1);
  }

  TEST_CASE("a recorded value comes back within three significant digits from 1 us to 1 min") {
    // Log-spaced values across the whole required range.
    for (double v = 1000; v <= 60e9; v *= 1.07) {
      Histogram h;
      const auto x = static_cast<std::int64_t>(v);
      h.record(x);
      h.record(x);
      const auto back = h.value_at_quantile(0.5);
      CHECK(std::abs(static_cast<double>(back - x)) / static_cast<double>(x) < 1e-3);
      const std::size_t idx = Histogram::index_of(static_cast<std::uint64_t>(x));
      const double width = static_cast<double>(Histogram::highest_equivalent(idx) -
                                               Histogram::lowest_equivalent(idx) + 1);
      CHECK(width / static_cast<double>(x) <= 1.0 / 1000);
    }
  }

  TEST_CASE("percentiles of a uniform spread are where they should be") {
    Histogram h;
    for (std::int64_t us = 1; us <= 100000; ++us) h.record(us * 1000);
    CHECK(h.count() == 100000);
    auto near = [](std::int64_t got, double want) {
      return std::abs(static_cast<double>(got) - want) / want < 1.5e-3;
    };
    CHECK(near(h.value_at_quantile(0.5), 50000e3));
    CHECK(near(h.value_at_quantile(0.99), 99000e3));
    CHECK(near(h.value_at_quantile(0.999), 99900e3));
    CHECK(h.value_at_quantile(1.0) == h.max());
    CHECK(h.max() == 100000000);
    CHECK(h.min() == 1000);
    CHECK(std::abs(h.mean() - 50000.5e3) < 1);
  }

  TEST_CASE("merging two histograms equals recording all their values into one") {
    std::mt19937_64 rng(7);
    std::lognormal_distribution<double> dist(11.0, 2.0);  // ns; median ~60 us, long tail
    Histogram a, b, all;
    for (int i = 0; i < 200000; ++i) {
      const auto v = static_cast<std::int64_t>(dist(rng));
      (i % 3 ? a : b).record(v);
      all.record(v);
    }
    a.merge(b);
    CHECK(a == all);
    CHECK(a.count() == 200000);
    CHECK(a.value_at_quantile(0.999) == all.value_at_quantile(0.999));
    CHECK(a.mean() == all.mean());
  }

  TEST_CASE("values beyond the range are clamped and counted as saturated") {
    Histogram h;
    h.record(-5);
    h.record(static_cast<std::int64_t>(Histogram::kMaxValue) * 2);
    CHECK(h.count() == 2);
    CHECK(h.saturated() == 1);
    CHECK(h.min() == 0);
    CHECK(h.max() == static_cast<std::int64_t>(Histogram::kMaxValue));
    h.reset();
    CHECK(h.count() == 0);
    CHECK(h.value_at_quantile(0.99) == 0);
  }
}
