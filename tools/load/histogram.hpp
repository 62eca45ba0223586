// A log-linear latency histogram in the style of HdrHistogram, written for kvlab load.
//
// Values are nanoseconds. The range [0, kMaxValue] (kMaxValue = 2^36 ns ~ 68.7 s, which covers the
// required 1 us .. 1 min) is cut into "half-buckets" of kSubBucketHalf = 1024 linear sub-buckets:
//
//   index(v) = v                                   for v < 2048          (width 1 ns, exact)
//   index(v) = 1024 * (e + 1) + (v >> e) - 1024     for v >= 2048, where e = floor(log2 v) - 10
//
// so in every power-of-two range [2^k, 2^(k+1)) with k >= 11 there are 1024 equal buckets of width
// 2^(k-10). A bucket's width is at most 1/1024 of its lowest value: any recorded value comes back
// (as the bucket's highest equivalent value) within 0.098%, i.e. three significant decimal digits.
//
// Invariants:
//   1. counts_.size() == kBucketCount; total_ == sum(counts_).
//   2. min_/max_/sum_ are exact over the values recorded (after clamping to kMaxValue).
//   3. merge() adds counts bucket by bucket, so merging is exact: merging A and B gives the same
//      histogram as recording A's and B's values into one.
//
// Thread safety: none; one histogram per thread, merged after the threads have joined or handed
// a snapshot over under a lock.
#pragma once

#include <cstdint>
#include <vector>

namespace kvlab::load {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 11;  // 2048 linear values
  static constexpr std::uint64_t kSubBucketCount = 1u << kSubBucketBits;
  static constexpr std::uint64_t kSubBucketHalf = kSubBucketCount / 2;
  static constexpr int kMaxBits = 36;  // values < 2^36 ns
  static constexpr std::uint64_t kMaxValue = (std::uint64_t{1} << kMaxBits) - 1;
  // Exponents e = 0 .. kMaxBits - kSubBucketBits; one half-bucket each, plus the first full one.
  static constexpr std::size_t kBucketCount = kSubBucketHalf * (kMaxBits - kSubBucketBits + 2);

  static_assert(kMaxValue >= 60ull * 1000 * 1000 * 1000, "must cover one minute in ns");
  static_assert(kSubBucketHalf >= 1000, "three significant digits need >= 1000 steps per octave");

  Histogram();

  // Records one value (ns); negative values count as 0, values above kMaxValue as kMaxValue
  // (and are counted in saturated()).
  void record(std::int64_t value_ns) { record_n(value_ns, 1); }
  void record_n(std::int64_t value_ns, std::uint64_t n);

  // Adds every count of other; exact (see invariant 3).
  void merge(const Histogram& other);
  void reset();

  std::uint64_t count() const { return total_; }
  // REQUIRES: index < kBucketCount.
  std::uint64_t count_at(std::size_t index) const { return counts_[index]; }
  std::uint64_t saturated() const { return saturated_; }
  std::int64_t min() const { return total_ ? static_cast<std::int64_t>(min_) : 0; }
  std::int64_t max() const { return static_cast<std::int64_t>(max_); }
  double mean() const {
    return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0;
  }

  // The smallest recorded value v (as its bucket's highest equivalent value, capped at max())
  // such that at least q*count() values are <= v. q in [0, 1]. 0 when empty.
  std::int64_t value_at_quantile(double q) const;

  // Bucket arithmetic, public for tests.
  static std::size_t index_of(std::uint64_t v);
  static std::uint64_t lowest_equivalent(std::size_t index);
  static std::uint64_t highest_equivalent(std::size_t index);

  bool operator==(const Histogram& o) const;

 private:
  std::vector<std::uint64_t> counts_;
  std::uint64_t total_ = 0;
  std::uint64_t saturated_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  __extension__ using Sum = unsigned __int128;  // exact for any count of values < 2^36
  Sum sum_ = 0;
};

// The summary every report prints, in microseconds.
struct LatencySummary {
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, p9999 = 0, max = 0, mean = 0;
  std::uint64_t count = 0;
};
LatencySummary summarize_us(const Histogram& h);

}  // namespace kvlab::load
