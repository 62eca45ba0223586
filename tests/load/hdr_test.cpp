// HdrHistogram text formats (tools/load/hdr_format.hpp): the .hgrm percentile table agrees with
// the histogram's own quantiles, and the compressed encoding of the interval log decodes back to
// the same counts.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tools/load/hdr_format.hpp"
#include "tools/load/histogram.hpp"

using namespace kvlab::load;

namespace {

// A skewed histogram over six octaves with an outlier, so that the table has lines in many
// buckets and zero runs of every length.
Histogram sample() {
  Histogram h;
  for (std::int64_t i = 1; i <= 20000; ++i) h.record((i * i * 37) % 5000000 + 1000);
  h.record(123456789);
  return h;
}

}  // namespace

TEST_CASE("the hgrm table's lines at 50 % and 90 % are the histogram's p50 and p90") {
  const Histogram h = sample();
  const auto lines = parse_hgrm(format_hgrm(h));
  REQUIRE(lines.size() > 40);
  // The table prints milliseconds with three decimals.
  auto printed = [](std::int64_t ns) { return std::round(static_cast<double>(ns) / 1e3) / 1e3; };
  bool saw50 = false, saw90 = false;
  for (const auto& l : lines) {
    if (l.percentile == 0.5) {
      saw50 = true;
      CHECK(l.value_ms == doctest::Approx(printed(h.value_at_quantile(0.5))).epsilon(1e-12));
    }
    if (l.percentile == 0.9) {
      saw90 = true;
      CHECK(l.value_ms == doctest::Approx(printed(h.value_at_quantile(0.9))).epsilon(1e-12));
    }
  }
  CHECK(saw50);
  CHECK(saw90);
  // Every line below 100 % gives the value at its percentile (as its bucket's highest value, as
  // HdrHistogram does: the table's max bucket is capped at the exact maximum, the file's is not)
  // and the count up to that value.
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    const auto& l = lines[i];
    const std::int64_t v = h.value_at_quantile(l.percentile);
    const auto top = static_cast<std::int64_t>(
        Histogram::highest_equivalent(Histogram::index_of(static_cast<std::uint64_t>(v))));
    CHECK(l.value_ms == doctest::Approx(printed(top)).epsilon(1e-12));
    std::uint64_t upto = 0;
    for (std::size_t b = 0; b <= Histogram::index_of(static_cast<std::uint64_t>(v)); ++b)
      upto += h.count_at(b);
    CHECK(l.total_count == upto);
  }
  CHECK(lines.back().percentile == 1.0);
  CHECK(lines.back().total_count == h.count());
}

TEST_CASE("the hgrm footer gives the count, the maximum's bucket and the layout") {
  const std::string text = format_hgrm(sample());
  CHECK(text.find("#[Max     =      123.470, Total count    =        20001]") != std::string::npos);
  CHECK(text.find("#[Buckets =           26, SubBuckets     =         2048]") != std::string::npos);
  CHECK(text.rfind("       Value     Percentile TotalCount 1/(1-Percentile)\n\n", 0) == 0);
  // Ties are rounded half up as HdrHistogram writes them (99.97802734375 % -> ...438).
  CHECK(text.find("0.999780273438") != std::string::npos);
}

TEST_CASE("an empty histogram gives a header and a zero footer") {
  const auto lines = parse_hgrm(format_hgrm(Histogram{}));
  CHECK(lines.empty());
  CHECK(format_hgrm(Histogram{}).find("Total count    =            0") != std::string::npos);
}

TEST_CASE("the compressed encoding decodes back to the same counts") {
  if (!hdr_log_supported()) return;  // built without zlib
  const Histogram h = sample();
  const std::string text = encode_compressed_base64(h);
  CHECK(text.rfind("HISTF", 0) == 0);  // the V2 compressed cookie, as base64
  Histogram back;
  REQUIRE(decode_compressed_base64(text, &back));
  CHECK(back.count() == h.count());
  for (std::size_t i = 0; i < Histogram::kBucketCount; ++i) {
    if (back.count_at(i) != h.count_at(i)) {
      FAIL("bucket " << i << ": " << back.count_at(i) << " != " << h.count_at(i));
      break;
    }
  }
  // Merging decoded intervals is merging the originals.
  Histogram a, b, both;
  for (int i = 0; i < 1000; ++i) a.record(1000 + i * 7), both.record(1000 + i * 7);
  for (int i = 0; i < 500; ++i) b.record(50000 + i * 999), both.record(50000 + i * 999);
  Histogram da, db;
  REQUIRE(decode_compressed_base64(encode_compressed_base64(a), &da));
  REQUIRE(decode_compressed_base64(encode_compressed_base64(b), &db));
  da.merge(db);
  CHECK(da.value_at_quantile(0.99) == both.value_at_quantile(0.99));
  CHECK(da.count() == 1500);
}

TEST_CASE("an interval line carries start, length, max in ms and the histogram") {
  if (!hdr_log_supported()) return;
  Histogram h;
  h.record(2500000);  // 2.5 ms
  const HdrLogWriter w(1700000000.0);
  const std::string head = w.header("test");
  CHECK(head.find("#[Histogram log format version 1.3]") != std::string::npos);
  CHECK(head.find("#[BaseTime: 1700000000.000 (seconds since epoch)]") != std::string::npos);
  const std::string line = w.interval(3, 1, h);
  CHECK(line.rfind("3.000,1.000,2.501,HISTF", 0) == 0);
}
