// YCSB's core workloads (B. F. Cooper, A. Silberstein, E. Tam, R. Ramakrishnan, R. Sears,
// "Benchmarking Cloud Serving Systems with YCSB", SoCC 2010) as kvlab generates them, for
// `kvlab bench --workload ycsb-X` (in process) and `kvlab load --workload ycsb-X` (over RESP).
// Header-only and dependency-free, so both tools use the same definitions.
//
//   workload  operations                         request distribution
//   A         50 % read, 50 % update             scrambled Zipfian
//   B         95 % read,  5 % update             scrambled Zipfian
//   C         100 % read                         scrambled Zipfian
//   D         95 % read,  5 % insert             latest
//   E         95 % scan,  5 % insert             scrambled Zipfian; scan length uniform 1..100
//   F         50 % read, 50 % read-modify-write  scrambled Zipfian
//
// Records: 10 fields of 100 bytes (field0 … field9). A read reads every field, an update writes
// one, an insert writes all, a read-modify-write reads the record and writes one field.
//
// Keys: record number n is the key "user" + FNV-1a-64(n) in decimal (YCSB's "hashed" insert
// order: the 8 bytes of n, least significant first, folded into the 64-bit FNV-1a hash, whose
// absolute value as a signed 64-bit number is printed). The load phase inserts records
// 0 .. recordcount-1; the run phase's inserts continue the sequence.
//
// Distributions (the paper's section 3.2 and YCSB's generators):
//  - Zipfian: ranks 0 .. n-1 with P(i) proportional to 1/(i+1)^θ, θ = 0.99, drawn with Gray et
//    al.'s method ("Quickly generating billion-record synthetic databases", SIGMOD 1994).
//  - Scrambled Zipfian: a Zipfian rank over a fixed item count of 10^10 (whose ζ(10^10, 0.99) =
//    26.46902820178302 is a constant), hashed with FNV-1a-64 (absolute value, as for keys) and
//    taken modulo the record count:
//    the popular records are scattered over the key space instead of clustered at the start.
//    Because the rank space is 10^10 and not the record count, the skew per record is milder
//    than a plain Zipfian over the records (the top 1 % of 10,000 records draw about 21 % of the
//    requests, not about 50 %); tests/bench/ycsb_test.cpp checks this against the definition.
//  - Latest: the most recently inserted record is the most popular: record = last − Zipfian rank
//    over the records inserted so far (ζ extended incrementally as records are added).
//  - Read and update keys are redrawn while they fall at or beyond the records inserted so far.
//
// Thread safety: the generators are per thread (each holds its own random state and ζ cache);
// the insert sequence is shared through an atomic counter owned by the caller.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvlab::bench::ycsb {

inline constexpr double kZipfianConstant = 0.99;
inline constexpr std::uint64_t kScrambledItemCount = 10000000000ull;
inline constexpr double kScrambledZetan = 26.46902820178302;  // ζ(10^10, 0.99)
inline constexpr unsigned kFieldCount = 10;
inline constexpr unsigned kFieldLength = 100;
inline constexpr unsigned kMaxScanLength = 100;

enum class Op { kRead, kUpdate, kInsert, kScan, kReadModifyWrite };
enum class Distribution { kZipfian, kLatest };

struct Workload {
  char name = 'a';  // 'a' .. 'f'
  double read = 0, update = 0, insert = 0, scan = 0, rmw = 0;
  Distribution dist = Distribution::kZipfian;
  std::string describe() const {
    std::string s = "ycsb-";
    s += name;
    auto part = [&](double p, const char* what) {
      if (p > 0) s += " " + std::to_string(static_cast<int>(p * 100 + 0.5)) + "% " + what;
    };
    part(read, "read");
    part(update, "update");
    part(insert, "insert");
    part(scan, "scan");
    part(rmw, "read-modify-write");
    s += dist == Distribution::kLatest ? ", latest" : ", scrambled zipfian";
    return s;
  }
};

// "ycsb-a" … "ycsb-f" (or "a" … "f"); nullopt otherwise.
inline std::optional<Workload> workload_by_name(std::string_view name) {
  if (name.rfind("ycsb-", 0) == 0) name.remove_prefix(5);
  if (name.size() != 1) return std::nullopt;
  Workload w;
  w.name = name[0];
  switch (name[0]) {
    case 'a':
      w.read = 0.5, w.update = 0.5;
      break;
    case 'b':
      w.read = 0.95, w.update = 0.05;
      break;
    case 'c':
      w.read = 1.0;
      break;
    case 'd':
      w.read = 0.95, w.insert = 0.05, w.dist = Distribution::kLatest;
      break;
    case 'e':
      w.scan = 0.95, w.insert = 0.05;
      break;
    case 'f':
      w.read = 0.5, w.rmw = 0.5;
      break;
    default:
      return std::nullopt;
  }
  return w;
}

// FNV-1a over the 8 bytes of v, least significant first; YCSB prints its absolute value.
inline std::uint64_t fnv1a64(std::uint64_t v) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (int i = 0; i < 8; ++i) {
    h ^= v & 0xff;
    v >>= 8;
    h *= 1099511628211ull;
  }
  return h;
}
inline std::uint64_t key_hash(std::uint64_t n) {
  const auto s = static_cast<std::int64_t>(fnv1a64(n));
  return s < 0 ? static_cast<std::uint64_t>(-(s + 1)) + 1 : static_cast<std::uint64_t>(s);
}
inline std::string key_name(std::uint64_t n) {
  return "user" + std::to_string(key_hash(n));
}

// splitmix64: each thread's uniform source (the draws need only be independent per thread).
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  std::uint64_t below(std::uint64_t n) { return n ? next() % n : 0; }

 private:
  std::uint64_t state_;
};

// Gray et al.'s Zipfian over ranks 0 .. items-1. grow() extends ζ incrementally (latest).
class Zipfian {
 public:
  Zipfian(std::uint64_t items, double theta, double zetan = 0)
      : theta_(theta), zeta2_(zeta(2, theta)), alpha_(1.0 / (1.0 - theta)) {
    items_ = items;
    zetan_ = zetan > 0 ? zetan : zeta(items, theta);
    update_eta();
  }
  std::uint64_t items() const { return items_; }
  double zetan() const { return zetan_; }
  void grow(std::uint64_t items) {
    if (items <= items_) return;
    for (std::uint64_t i = items_ + 1; i <= items; ++i)
      zetan_ += 1.0 / std::pow(static_cast<double>(i), theta_);
    items_ = items;
    update_eta();
  }
  std::uint64_t next(Random& r) const {
    const double u = r.unit();
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + std::pow(0.5, theta_)) return 1;
    const auto k = static_cast<std::uint64_t>(static_cast<double>(items_) *
                                              std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return k < items_ ? k : items_ - 1;
  }
  static double zeta(std::uint64_t n, double theta) {
    double z = 0;
    for (std::uint64_t i = 1; i <= n; ++i) z += 1.0 / std::pow(static_cast<double>(i), theta);
    return z;
  }

 private:
  void update_eta() {
    eta_ =
        (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) / (1.0 - zeta2_ / zetan_);
  }
  double theta_, zeta2_, alpha_;
  std::uint64_t items_ = 0;
  double zetan_ = 0, eta_ = 0;
};

// Scrambled Zipfian over records 0 .. records-1.
class ScrambledZipfian {
 public:
  explicit ScrambledZipfian(std::uint64_t records)
      : records_(records), zipf_(kScrambledItemCount, kZipfianConstant, kScrambledZetan) {}
  std::uint64_t next(Random& r) const { return key_hash(zipf_.next(r)) % records_; }

 private:
  std::uint64_t records_;
  Zipfian zipf_;
};

// Latest: last − Zipfian rank over the records inserted so far.
class Latest {
 public:
  explicit Latest(std::uint64_t records) : zipf_(records, kZipfianConstant) {}
  // REQUIRES: inserted >= 1.
  std::uint64_t next(Random& r, std::uint64_t inserted) {
    zipf_.grow(inserted);
    const std::uint64_t rank = zipf_.next(r);
    return rank < inserted ? inserted - 1 - rank : 0;
  }

 private:
  Zipfian zipf_;
};

// One thread's request stream: the operation and the record it touches (and a scan's length).
struct Request {
  Op op = Op::kRead;
  std::uint64_t record = 0;  // for an insert: the new record's number (from the shared sequence)
  unsigned scan_length = 0;
  unsigned field = 0;  // the field an update or read-modify-write writes
};

class RequestStream {
 public:
  // records: the load phase's record count; expected_inserts widens the scrambled Zipfian's
  // range as YCSB does (keys beyond the records inserted so far are redrawn).
  RequestStream(const Workload& w, std::uint64_t records, std::uint64_t expected_inserts,
                std::uint64_t seed)
      : w_(w), random_(seed), scrambled_(records + expected_inserts), latest_(records) {}

  // inserted: records present so far (the load phase's plus the run's acknowledged inserts);
  // next_insert: called for an insert, returns the new record's number.
  template <class NextInsert>
  Request next(std::uint64_t inserted, NextInsert&& next_insert) {
    Request q;
    const double u = random_.unit();
    double acc = w_.read;
    if (u < acc) {
      q.op = Op::kRead;
    } else if (u < (acc += w_.update)) {
      q.op = Op::kUpdate;
    } else if (u < (acc += w_.insert)) {
      q.op = Op::kInsert;
    } else if (u < (acc += w_.scan)) {
      q.op = Op::kScan;
    } else {
      q.op = Op::kReadModifyWrite;
    }
    if (q.op == Op::kInsert) {
      q.record = next_insert();
      return q;
    }
    q.record = choose(inserted);
    q.field = static_cast<unsigned>(random_.below(kFieldCount));
    if (q.op == Op::kScan) q.scan_length = 1 + static_cast<unsigned>(random_.below(kMaxScanLength));
    return q;
  }

  std::uint64_t choose(std::uint64_t inserted) {
    if (w_.dist == Distribution::kLatest) return latest_.next(random_, inserted);
    for (int tries = 0; tries < 64; ++tries) {
      const std::uint64_t k = scrambled_.next(random_);
      if (k < inserted) return k;
    }
    return random_.below(inserted);
  }

 private:
  Workload w_;
  Random random_;
  ScrambledZipfian scrambled_;
  Latest latest_;
};

}  // namespace kvlab::bench::ycsb
