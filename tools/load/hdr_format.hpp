// kvlab's latency histograms in HdrHistogram's documented text formats, so that they leave the
// tool in a form the field's tools read: HdrHistogram's plotter and HistogramLogProcessor,
// wrk2-style percentile tables, and any HdrHistogram library that decodes a log.
//
// The bucket layout of kvlab::load::Histogram is HdrHistogram's for lowestDiscernibleValue = 1,
// highestTrackableValue = 2^36 - 1 and 3 significant digits (sub-bucket count 2048, half 1024,
// unit magnitude 0, 27 x 1024 counts): index i of one is index i of the other. So a histogram is
// encoded count by count, nothing is re-binned, and a decoder gets back exactly what was recorded.
// Values are nanoseconds; the text outputs scale them to milliseconds, the plotter's unit.
//
//  - Percentile distribution (.hgrm): the table HdrHistogram's outputPercentileDistribution
//    prints (Value, Percentile, TotalCount, 1/(1-Percentile); five reporting ticks per half
//    distance to 100 %) and its #[Mean/Max/Buckets] footer.
//  - Interval log (format version 1.3): a header, then one line per interval,
//    "start,length,max,HISTF..." where the last field is the interval's histogram in the V2
//    compressed encoding (big-endian header, ZigZag LEB128 counts with zero runs, zlib-deflated),
//    base64. Histograms of a log merge by adding their counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/load/histogram.hpp"

namespace kvlab::load {

// The .hgrm text of h (values in ms).
std::string format_hgrm(const Histogram& h);

// One parsed line of an .hgrm table (for tests and for comparing with the tool's summary).
struct HgrmLine {
  double value_ms = 0;
  double percentile = 0;  // fraction, 0..1
  std::uint64_t total_count = 0;
};
std::vector<HgrmLine> parse_hgrm(const std::string& text);

// True when this build can write interval logs (zlib was found).
bool hdr_log_supported();

// The V2 compressed encoding of h, base64 ("HISTF..."). Empty when !hdr_log_supported().
std::string encode_compressed_base64(const Histogram& h);
// The inverse, for tests: false on a malformed or foreign layout.
bool decode_compressed_base64(const std::string& text, Histogram* out);

// The fields of an interval line after its start time: "length,max,HISTF..." (max in ms).
std::string hdr_interval_fields(double length_s, const Histogram& h);

// An interval log, written as intervals arrive.
class HdrLogWriter {
 public:
  // start_epoch_s: the wall-clock time (seconds since the epoch) that timestamps count from.
  explicit HdrLogWriter(double start_epoch_s);
  // The header: format version, StartTime, BaseTime, a comment and the column legend.
  std::string header(const std::string& comment) const;
  // One interval: start (seconds since the log's start), length (s) and the histogram.
  std::string interval(double start_s, double length_s, const Histogram& h) const;
  double start_epoch_s() const { return start_epoch_s_; }

 private:
  double start_epoch_s_;
};

}  // namespace kvlab::load
