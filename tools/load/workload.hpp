// Request generation for kvlab load: key choice (uniform, Zipf, sequential, Gaussian) and the
// encoding of memtier-style command templates into RESP multibulk requests.
//
// Thread safety: a Workload is immutable after construction and shared by all generator threads;
// each connection owns its KeyStream (RNG state, sequential cursor).
#pragma once

#include <hiredis/read.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tools/bench/ycsb.hpp"
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

  // The generator of stream `index` under `seed`. splitmix64 walks one cycle of 2^64 states in
  // steps of its gamma, so two seeds that differ by a multiple of the gamma are the same stream
  // shifted: seeding stream i with base + i*gamma made every connection replay its neighbour's
  // keys one draw later (25 connections, one key sequence: caches hot, coverage halved). The
  // seed is therefore scrambled by the output function twice, which puts the streams at
  // unrelated points of the cycle.
  static Rng stream(std::uint64_t seed, std::uint64_t index) {
    Rng a(seed);
    const std::uint64_t s = a.next();
    Rng b(s ^ (index * 0xd1b54a32d192ed03ull));
    return Rng(b.next());
  }
};

// A request sent and not yet answered. A request of several commands (a template with ";")
// completes with the reply to its last command.
struct Pending {
  std::int64_t intended_ns;
  std::int64_t sent_ns;
  unsigned replies = 1;      // replies still due
  bool read = false;         // its last command is a read: a nil or empty reply is a miss
  std::string request = {};  // cluster mode, single commands: the bytes, to resend after MOVED/ASK
  unsigned redirects = 0;
  unsigned tryagains = 0;  // TRYAGAIN replies so far (the request was resent after each)
  bool asking = false;            // sent after ASKING, whose +OK comes first
  std::int64_t ycsb_insert = -1;  // the record a YCSB insert writes: acknowledged when answered
};

// Whether a command reads a key, so that its reply tells a hit from a miss: a nil reply or an
// empty array (HGETALL, SMEMBERS, LRANGE of a missing key) is a miss. MGET and HMGET are not
// counted: their reply holds one nil per missing key, not one verdict per request.
bool is_read_command(std::string_view name);

// Hit or miss of a read's reply. REQUIRES: the reply is not an error.
inline bool reply_is_miss(int top_type, long long elements) {
  return top_type == REDIS_REPLY_NIL || (top_type == REDIS_REPLY_ARRAY && elements == 0);
}

// Matches one reply to the oldest request in flight (RESP answers in order). Returns true, with
// the request in *done, when the reply was that request's last; false while more are due.
// REQUIRES: !inflight.empty().
inline bool complete_front(std::deque<Pending>& inflight, Pending* done) {
  if (inflight.front().replies > 1) {
    --inflight.front().replies;
    return false;
  }
  *done = std::move(inflight.front());
  inflight.pop_front();
  return true;
}

class Workload {
 public:
  // REQUIRES: config validated (keys > 0, zipf theta in (0,1)).
  explicit Workload(const LoadConfig& config);

  struct KeyStream {
    Rng rng{1};
    std::uint64_t cursor = 0;                          // sequential pattern
    std::uint64_t counter = 0;                         // picks the template by weight
    std::unique_ptr<bench::ycsb::RequestStream> ycsb;  // --workload ycsb-X
  };
  KeyStream make_stream(std::uint64_t stream_index, std::uint64_t stream_count) const;

  // Appends one request (one or more RESP multibulk commands) to out; returns how many replies it
  // asks for. *read (optional) tells whether the request's last command is a read; *slot
  // (optional) is the cluster slot of its first key (-1 when it has none).
  // *insert (optional) is the record a YCSB insert writes (-1 otherwise): pass it to
  // acknowledge() when the request is answered.
  unsigned append_request(KeyStream& s, std::string& out, bool* read = nullptr, int* slot = nullptr,
                          std::int64_t* insert = nullptr) const;
  // A YCSB insert was answered: records below the first unanswered one become readable.
  void acknowledge(std::uint64_t record) const;
  // The text of key number k (prefix + number).
  std::string key_text(std::uint64_t k) const;
  // Appends the load phase's write of key (record) number k: SET key data, or with YCSB the
  // record's HSET of every field, and its ZADD to the scan index unless `index` is false.
  // Returns the replies it asks for.
  unsigned append_set(std::uint64_t k, std::string& out, bool index = true) const;
  // The key that append_set(k) writes (what a cluster routes it by).
  std::string load_key(std::uint64_t k) const;
  bool ycsb() const { return ycsb_.has_value(); }

  std::uint64_t next_key(KeyStream& s) const;

 private:
  struct Segment {
    enum Kind { kLiteral, kKey, kData, kRandKey, kRandInt } kind;
    std::string bytes;  // kLiteral: "*argc\r\n" or "$len\r\narg\r\n"
    unsigned key = 0;   // kKey: 0 for __key__, i for __keyi__
  };
  struct Encoded {
    std::vector<Segment> segments;
    unsigned weight;
    unsigned replies;  // commands in the request
    unsigned keys;     // distinct key slots (1 + the highest __keyi__)
    bool read;         // the last command is a read (is_read_command)
  };
  void append_key(std::uint64_t k, std::string& out) const;
  unsigned append_ycsb(KeyStream& s, std::string& out, bool* read, int* slot,
                       std::int64_t* insert) const;
  void append_record(std::uint64_t n, std::string& out, bool index) const;

  const LoadConfig& config_;
  std::vector<Encoded> templates_;
  std::vector<unsigned> pick_;  // counter % total weight -> template index
  std::string data_segment_;
  // Zipf (Gray et al., "Quickly generating billion-record synthetic databases", SIGMOD 1994).
  double zipf_alpha_ = 0, zipf_zetan_ = 0, zipf_eta_ = 0, zipf_half_pow_ = 0;
  // YCSB: the workload and the shared insert sequence (the next record number to insert).
  // Relaxed is enough for next_insert_: it only hands out distinct numbers. Reads pick among the
  // records below acked_limit_, the first record whose insert has not been answered (YCSB's
  // acknowledged counter): a read never races the insert of its record. acked_limit_ is written
  // under ack_mutex_ and read relaxed: a stale, lower limit only narrows the choice.
  std::optional<bench::ycsb::Workload> ycsb_;
  mutable std::atomic<std::uint64_t> next_insert_{0};
  mutable std::atomic<std::uint64_t> acked_limit_{0};
  mutable std::mutex ack_mutex_;
  mutable std::set<std::uint64_t> acked_;  // answered inserts at or above acked_limit_
  std::string field_value_;                // one field's bulk string (100 bytes)
};

}  // namespace kvlab::load
