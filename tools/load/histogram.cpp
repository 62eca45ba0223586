#include "tools/load/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace kvlab::load {

Histogram::Histogram() : counts_(kBucketCount, 0) {}

std::size_t Histogram::index_of(std::uint64_t v) {
  if (v < kSubBucketCount) return static_cast<std::size_t>(v);
  const int e = std::bit_width(v) - kSubBucketBits;  // v >> e is in [1024, 2048)
  return static_cast<std::size_t>(kSubBucketHalf * (e + 1) + (v >> e) - kSubBucketHalf);
}

std::uint64_t Histogram::lowest_equivalent(std::size_t index) {
  if (index < kSubBucketCount) return index;
  const std::uint64_t e = index / kSubBucketHalf - 1;
  const std::uint64_t sub = index % kSubBucketHalf + kSubBucketHalf;
  return sub << e;
}

std::uint64_t Histogram::highest_equivalent(std::size_t index) {
  if (index < kSubBucketCount) return index;
  const std::uint64_t e = index / kSubBucketHalf - 1;
  return lowest_equivalent(index) + (std::uint64_t{1} << e) - 1;
}

void Histogram::record_n(std::int64_t value_ns, std::uint64_t n) {
  if (n == 0) return;
  std::uint64_t v = value_ns < 0 ? 0 : static_cast<std::uint64_t>(value_ns);
  if (v > kMaxValue) {
    v = kMaxValue;
    saturated_ += n;
  }
  counts_[index_of(v)] += n;
  total_ += n;
  sum_ += static_cast<Sum>(v) * n;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void Histogram::merge(const Histogram& other) {
  if (other.total_ == 0) return;
  for (std::size_t i = 0; i < kBucketCount; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
  saturated_ += other.saturated_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  total_ = saturated_ = 0;
  min_ = UINT64_MAX;
  max_ = 0;
  sum_ = 0;
}

std::int64_t Histogram::value_at_quantile(double q) const {
  if (total_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the value wanted, 1-based; at least 1 so q = 0 gives the minimum.
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(total_)));
  rank = std::clamp<std::uint64_t>(rank, 1, total_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += counts_[i];
    if (seen >= rank) return static_cast<std::int64_t>(std::min(highest_equivalent(i), max_));
  }
  return static_cast<std::int64_t>(max_);
}

bool Histogram::operator==(const Histogram& o) const {
  return total_ == o.total_ && saturated_ == o.saturated_ && min_ == o.min_ && max_ == o.max_ &&
         sum_ == o.sum_ && counts_ == o.counts_;
}

LatencySummary summarize_us(const Histogram& h) {
  LatencySummary s;
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  s.count = h.count();
  s.p50 = us(h.value_at_quantile(0.50));
  s.p90 = us(h.value_at_quantile(0.90));
  s.p99 = us(h.value_at_quantile(0.99));
  s.p999 = us(h.value_at_quantile(0.999));
  s.p9999 = us(h.value_at_quantile(0.9999));
  s.max = us(h.max());
  s.mean = h.mean() / 1000.0;
  return s;
}

}  // namespace kvlab::load
