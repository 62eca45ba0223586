#include "tools/load/hdr_format.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>

#if defined(KVLAB_LOAD_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace kvlab::load {
namespace {

constexpr double kNsPerMs = 1e6;  // the plotter's unit is the millisecond
constexpr int kDigits = 3;        // significant digits of the layout (see hdr_format.hpp)
// HdrHistogram's counts for highestTrackableValue 2^36 - 1: 26 buckets of 2048 sub-buckets.
constexpr int kHdrBuckets = Histogram::kMaxBits - Histogram::kSubBucketBits + 1;
static_assert(Histogram::kBucketCount == (kHdrBuckets + 1) * Histogram::kSubBucketHalf,
              "the counts array must be HdrHistogram's for this range");
constexpr std::uint32_t kEncodingCookie = 0x1c849303u | 0x10u;            // V2, LEB128 counts
constexpr std::uint32_t kCompressedEncodingCookie = 0x1c849304u | 0x10u;  // V2, deflated
constexpr std::size_t kHeaderBytes = 40;

// The middle of a bucket, as HdrHistogram's mean and standard deviation use it.
double median_equivalent(std::size_t i) {
  const std::uint64_t lo = Histogram::lowest_equivalent(i);
  const std::uint64_t size = Histogram::highest_equivalent(i) - lo + 1;
  return static_cast<double>(lo + (size >> 1));
}

// HdrHistogram reports the maximum as its bucket's highest equivalent value.
std::uint64_t reported_max(const Histogram& h) {
  return h.count() ? Histogram::highest_equivalent(Histogram::index_of(h.max())) : 0;
}

// "%*.*f" as HdrHistogram's (Java's) formatter writes it: the shortest decimal that reads back
// as v, rounded half up. printf rounds the exact binary value instead, so 99.97802734375 / 100
// (just below ...4375) comes out as ...437 where the plotter's files have ...438.
std::string fixed(double v, int width, int decimals) {
  char wide[400];
  const auto r = std::to_chars(wide, wide + sizeof wide - 1, v, std::chars_format::fixed);
  *r.ptr = '\0';
  std::string s = wide;
  if (s.find('.') == std::string::npos) s += '.';
  s.append(static_cast<std::size_t>(decimals) + 1, '0');
  const std::size_t dot = s.find('.');
  const std::size_t cut = dot + 1 + static_cast<std::size_t>(decimals);
  const bool up = s[cut] >= '5';
  s.resize(decimals > 0 ? cut : dot);
  if (up) {
    std::size_t i = s.size();
    for (;;) {
      if (i == 0 || s[i - 1] == '-') {
        s.insert(i, 1, '1');
        break;
      }
      --i;
      if (s[i] == '.') continue;
      if (s[i] == '9') {
        s[i] = '0';
        continue;
      }
      ++s[i];
      break;
    }
  }
  if (s.size() < static_cast<std::size_t>(width))
    s.insert(0, static_cast<std::size_t>(width) - s.size(), ' ');
  return s;
}

void put_be32(std::string& out, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}
void put_be64(std::string& out, std::uint64_t v) {
  for (int s = 56; s >= 0; s -= 8) out.push_back(static_cast<char>((v >> s) & 0xff));
}
std::uint64_t get_be(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// ZigZag, then LEB128 with at most 9 bytes: eight groups of 7 bits, the ninth byte whole.
void put_zigzag(std::string& out, std::int64_t value) {
  std::uint64_t v =
      (static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63);
  for (int i = 0; i < 8; ++i) {
    if (v < 0x80) {
      out.push_back(static_cast<char>(v));
      return;
    }
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v & 0xff));
}
bool get_zigzag(const unsigned char*& p, const unsigned char* end, std::int64_t* out) {
  std::uint64_t v = 0;
  for (int i = 0; i < 9; ++i) {
    if (p == end) return false;
    const std::uint64_t b = *p++;
    if (i == 8) {
      v |= b << 56;
      break;
    }
    v |= (b & 0x7f) << (7 * i);
    if (!(b & 0x80)) break;
  }
  *out = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
  return true;
}

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::string& in) {
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const std::uint32_t v = (static_cast<unsigned char>(in[i]) << 16) |
                            (static_cast<unsigned char>(in[i + 1]) << 8) |
                            static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kB64[(v >> s) & 63]);
  }
  if (i < in.size()) {
    std::uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

bool unbase64(const std::string& in, std::string* out) {
  std::uint32_t acc = 0;
  int bits = 0;
  for (const char c : in) {
    if (c == '=') break;
    const char* at = std::strchr(kB64, c);
    if (c == '\0' || at == nullptr) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(at - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

// The uncompressed V2 encoding: header, then the counts up to the maximum's bucket, each run of
// two or more zero counts written as its negated length.
std::string encode_v2(const Histogram& h) {
  std::string payload;
  if (h.count() > 0) {
    const std::size_t limit = Histogram::index_of(static_cast<std::uint64_t>(h.max())) + 1;
    std::size_t i = 0;
    while (i < limit) {
      const std::uint64_t c = h.count_at(i++);
      if (c != 0) {
        put_zigzag(payload, static_cast<std::int64_t>(c));
        continue;
      }
      std::int64_t zeros = 1;
      while (i < limit && h.count_at(i) == 0) ++zeros, ++i;
      put_zigzag(payload, zeros > 1 ? -zeros : 0);
    }
  }
  std::string out;
  put_be32(out, kEncodingCookie);
  put_be32(out, static_cast<std::uint32_t>(payload.size()));
  put_be32(out, 0);  // normalizing index offset
  put_be32(out, kDigits);
  put_be64(out, 1);                     // lowest discernible value
  put_be64(out, Histogram::kMaxValue);  // highest trackable value
  double ratio = 1.0;                   // integer-to-double conversion ratio
  std::uint64_t bits;
  std::memcpy(&bits, &ratio, sizeof bits);
  put_be64(out, bits);
  return out + payload;
}

}  // namespace

std::string format_hgrm(const Histogram& h) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount",
                "1/(1-Percentile)");
  out += line;
  const std::uint64_t total = h.count();
  double mean = 0, variance = 0;
  if (total > 0) {
    // HdrHistogram's percentile iterator: a line each time the cumulative share reaches the next
    // reporting level; the levels get five ticks per halving of the distance to 100 %. The
    // bucket that completes the count gets one line, then a last line at 100 %.
    constexpr int kTicksPerHalfDistance = 5;
    double level = 0;
    std::uint64_t seen = 0;
    std::size_t last = 0;
    for (std::size_t i = 0; i < Histogram::kBucketCount && seen < total; ++i) {
      const std::uint64_t c = h.count_at(i);
      if (c == 0) continue;
      seen += c;
      last = i;
      const double share = 100.0 * static_cast<double>(seen) / static_cast<double>(total);
      while (share >= level) {
        const double value = static_cast<double>(Histogram::highest_equivalent(i)) / kNsPerMs;
        std::snprintf(line, sizeof line, " %10llu ", static_cast<unsigned long long>(seen));
        out += fixed(value, 12, kDigits) + " " + fixed(level / 100.0, 2, 12) + line +
               fixed(1.0 / (1.0 - level / 100.0), 14, 2) + "\n";
        if (seen == total) break;
        const auto halvings = static_cast<long>(std::log(100.0 / (100.0 - level)) / std::log(2.0));
        level += 100.0 / (kTicksPerHalfDistance * std::pow(2.0, static_cast<double>(halvings + 1)));
      }
    }
    std::snprintf(line, sizeof line, " %10llu\n", static_cast<unsigned long long>(total));
    out += fixed(static_cast<double>(Histogram::highest_equivalent(last)) / kNsPerMs, 12, kDigits) +
           " " + fixed(1.0, 2, 12) + line;
    for (std::size_t i = 0; i <= last; ++i)
      mean += median_equivalent(i) * static_cast<double>(h.count_at(i));
    mean /= static_cast<double>(total);
    for (std::size_t i = 0; i <= last; ++i) {
      const double d = median_equivalent(i) - mean;
      variance += d * d * static_cast<double>(h.count_at(i));
    }
    variance /= static_cast<double>(total);
  }
  out += "#[Mean    = " + fixed(mean / kNsPerMs, 12, kDigits) +
         ", StdDeviation   = " + fixed(std::sqrt(variance) / kNsPerMs, 12, kDigits) + "]\n";
  std::snprintf(line, sizeof line, ", Total count    = %12llu]\n",
                static_cast<unsigned long long>(total));
  out +=
      "#[Max     = " + fixed(static_cast<double>(reported_max(h)) / kNsPerMs, 12, kDigits) + line;
  std::snprintf(line, sizeof line, "#[Buckets = %12d, SubBuckets     = %12d]\n", kHdrBuckets,
                static_cast<int>(Histogram::kSubBucketCount));
  out += line;
  return out;
}

std::vector<HgrmLine> parse_hgrm(const std::string& text) {
  std::vector<HgrmLine> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    HgrmLine l;
    unsigned long long count = 0;
    if (line.empty() || line[0] == '#') continue;
    if (std::sscanf(line.c_str(), "%lf %lf %llu", &l.value_ms, &l.percentile, &count) == 3) {
      l.total_count = count;
      out.push_back(l);
    }
  }
  return out;
}

#if defined(KVLAB_LOAD_HAVE_ZLIB)
bool hdr_log_supported() {
  return true;
}

std::string encode_compressed_base64(const Histogram& h) {
  const std::string raw = encode_v2(h);
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string deflated(size, '\0');
  // zlib's format (header and Adler-32 trailer) at the default level, as the log format wants.
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                Z_DEFAULT_COMPRESSION) != Z_OK)
    return {};
  deflated.resize(size);
  std::string out;
  put_be32(out, kCompressedEncodingCookie);
  put_be32(out, static_cast<std::uint32_t>(deflated.size()));
  return base64(out + deflated);
}

bool decode_compressed_base64(const std::string& text, Histogram* out) {
  std::string bytes;
  if (!unbase64(text, &bytes) || bytes.size() < 8) return false;
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (get_be(b, 4) != kCompressedEncodingCookie) return false;
  const std::size_t clen = get_be(b + 4, 4);
  if (clen + 8 > bytes.size()) return false;
  std::string raw(kHeaderBytes + Histogram::kBucketCount * 9, '\0');
  uLongf size = raw.size();
  if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &size, b + 8, static_cast<uLong>(clen)) !=
      Z_OK)
    return false;
  raw.resize(size);
  if (raw.size() < kHeaderBytes) return false;
  const auto* r = reinterpret_cast<const unsigned char*>(raw.data());
  if (get_be(r, 4) != kEncodingCookie || get_be(r + 12, 4) != kDigits || get_be(r + 16, 8) != 1 ||
      get_be(r + 24, 8) != Histogram::kMaxValue)
    return false;
  const std::size_t plen = get_be(r + 4, 4);
  if (kHeaderBytes + plen > raw.size()) return false;
  const unsigned char* p = r + kHeaderBytes;
  const unsigned char* end = p + plen;
  out->reset();
  std::size_t index = 0;
  while (p < end) {
    std::int64_t v;
    if (!get_zigzag(p, end, &v)) return false;
    if (v < 0) {
      index += static_cast<std::size_t>(-v);
      continue;
    }
    if (index >= Histogram::kBucketCount) return false;
    // Every value of a bucket decodes to its lowest equivalent; the bucket is the same.
    if (v > 0) out->record_n(static_cast<std::int64_t>(Histogram::lowest_equivalent(index)), v);
    ++index;
  }
  return true;
}
#else
bool hdr_log_supported() {
  return false;
}
std::string encode_compressed_base64(const Histogram&) {
  return {};
}
bool decode_compressed_base64(const std::string&, Histogram*) {
  return false;
}
#endif

HdrLogWriter::HdrLogWriter(double start_epoch_s) : start_epoch_s_(start_epoch_s) {}

std::string HdrLogWriter::header(const std::string& comment) const {
  char b[512];
  std::string out;
  if (!comment.empty()) out += "#[" + comment + "]\n";
  out += "#[Histogram log format version 1.3]\n";
  const std::time_t t = static_cast<std::time_t>(start_epoch_s_);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%a %b %d %H:%M:%S UTC %Y", &tm);
  std::snprintf(b, sizeof b, "#[StartTime: %.3f (seconds since epoch), %s]\n", start_epoch_s_,
                date);
  out += b;
  std::snprintf(b, sizeof b, "#[BaseTime: %.3f (seconds since epoch)]\n", start_epoch_s_);
  out += b;
  out +=
      "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";
  return out;
}

std::string hdr_interval_fields(double length_s, const Histogram& h) {
  char b[96];
  std::snprintf(b, sizeof b, "%.3f,%.3f,", length_s,
                static_cast<double>(reported_max(h)) / kNsPerMs);
  return b + encode_compressed_base64(h);
}

std::string HdrLogWriter::interval(double start_s, double length_s, const Histogram& h) const {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f,", start_s);
  return b + hdr_interval_fields(length_s, h) + "\n";
}

}  // namespace kvlab::load
