// Request generation for kvlab load: key choice (uniform, Zipf, sequential, Gaussian) and the
// encoding of memtier-style command templates into RESP multibulk requests.
//
// Thread safety: a Workload is immutable after construction and shared by all generator threads;
// each connection owns its KeyStream (RNG state, sequential cursor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/load/load.hpp"

namespace kvlab::load {

// splitmix64: small, fast, good enough for key choice and Poisson gaps.
struct Rng {
  std::uint64_t state;
  explicit Rng(std::uint64_t seed) : state(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

class Workload {
 public:
  // REQUIRES: config validated (keys > 0, zipf theta in (0,1)).
  explicit Workload(const LoadConfig& config);

  struct KeyStream {
    Rng rng{1};
    std::uint64_t cursor = 0;   // sequential pattern
    std::uint64_t counter = 0;  // picks the template by weight
  };
  KeyStream make_stream(std::uint64_t stream_index, std::uint64_t stream_count) const;

  // Appends one request (RESP multibulk) to out.
  void append_request(KeyStream& s, std::string& out) const;
  // Appends SET key data for key number k (prefill).
  void append_set(std::uint64_t k, std::string& out) const;

  std::uint64_t next_key(KeyStream& s) const;

 private:
  struct Segment {
    enum Kind { kLiteral, kKey, kData, kRandKey, kRandInt } kind;
    std::string bytes;  // kLiteral: "$len\r\narg\r\n"; kData: the same for the data blob
  };
  struct Encoded {
    std::string header;  // "*argc\r\n"
    std::vector<Segment> segments;
    unsigned weight;
  };
  void append_key(std::uint64_t k, std::string& out) const;

  const LoadConfig& config_;
  std::vector<Encoded> templates_;
  std::vector<unsigned> pick_;  // counter % total weight -> template index
  std::string data_segment_;
  // Zipf (Gray et al., "Quickly generating billion-record synthetic databases", SIGMOD 1994).
  double zipf_alpha_ = 0, zipf_zetan_ = 0, zipf_eta_ = 0, zipf_half_pow_ = 0;
};

}  // namespace kvlab::load
