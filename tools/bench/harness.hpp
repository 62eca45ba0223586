// Internals shared by the bench translation units: the random generator, the key codec, the value
// helpers, placement of benchmark threads, footprint probes, and the Google Benchmark glue
// (run_gb registers one benchmark, runs its repetitions with a collecting reporter, and returns
// the median/min/max of the "ops" rate counter).
//
// Thread safety: run_gb and RunEnv are used by the driver thread only; the functions they call
// back run on Google Benchmark's threads. RunEnv::pin is safe from any thread (reads only).
#pragma once

#include <benchmark/benchmark.h>
#include <sched.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "structures/common/spin_lock.hpp"
#include "structures/reclaim/epoch.hpp"
#include "tools/bench/bench.hpp"
#include "tools/bench/counters.hpp"

namespace kvlab::bench::detail {

__extension__ using U128 = unsigned __int128;  // GCC/Clang extension; -Wpedantic otherwise warns

// xoshiro256** (Blackman & Vigna): ~1 ns per draw, 256 bits of state, seeded by splitmix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0x9E3779B97F4A7C15ull) {
    for (auto& w : s_) w = splitmix(seed);
  }
  std::uint64_t next() {
    const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) without division (Lemire's multiply-shift; bias < n / 2^64).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<U128>(next()) * n) >> 64);
  }
  // Uniform double in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  static std::uint64_t splitmix(std::uint64_t& x) {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t s_[4];
};

// Keys: the index i in [0, keys) written big-endian into the last min(8, key_size) bytes, the
// bytes before it a fixed 'k' padding. Big-endian keeps byte order = numeric order (skiplists).
class KeyCodec {
 public:
  explicit KeyCodec(unsigned key_size) : size_(key_size) {}
  unsigned size() const { return size_; }
  // REQUIRES: buf holds size() bytes and was prepared by prepare().
  void prepare(char* buf) const {
    if (size_ > 8) std::memset(buf, 'k', size_ - 8);
  }
  void encode(std::uint64_t index, char* buf) const {
    const std::uint64_t be = to_big_endian(index);
    if (size_ >= 8) {
      std::memcpy(buf + size_ - 8, &be, 8);
    } else {
      std::memcpy(buf, reinterpret_cast<const char*>(&be) + (8 - size_), size_);
    }
  }
  // False when the key is not one this codec produces.
  bool decode(std::string_view key, std::uint64_t* index) const {
    if (key.size() != size_) return false;
    std::uint64_t be = 0;
    if (size_ >= 8) {
      for (unsigned i = 0; i + 8 < size_; ++i)
        if (key[i] != 'k') return false;
      std::memcpy(&be, key.data() + size_ - 8, 8);
    } else {
      std::memcpy(reinterpret_cast<char*>(&be) + (8 - size_), key.data(), size_);
    }
    *index = to_big_endian(be);
    return true;
  }

 private:
  static std::uint64_t to_big_endian(std::uint64_t x) {
    if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(x);
    return x;
  }
  unsigned size_;
};

// The value stored for key i: a 64-bit tag derived from i, so that a value can be checked
// against its key (a map that returns another key's value, or garbage, is caught).
inline std::uint64_t value_tag(std::uint64_t index) {
  return (index + 1) * 0x9E3779B97F4A7C15ull ^ 0xD6E8FEB86659FD93ull;
}

// V = std::uint64_t: the tag itself. V = std::string: value_size bytes, the tag in the first 8,
// the rest a fixed filler (so copying the value costs what a value of that size costs).
template <class V>
struct ValueOps;

template <>
struct ValueOps<std::uint64_t> {
  static std::uint64_t make(unsigned) { return 0; }
  static void stamp(std::uint64_t& v, std::uint64_t tag) { v = tag; }
  static bool check(const std::uint64_t& v, std::uint64_t tag, unsigned) { return v == tag; }
};

template <>
struct ValueOps<std::string> {
  static std::string make(unsigned size) { return std::string(size < 8 ? 8 : size, 'v'); }
  static void stamp(std::string& v, std::uint64_t tag) { std::memcpy(v.data(), &tag, 8); }
  static bool check(const std::string& v, std::uint64_t tag, unsigned size) {
    return v.size() == (size < 8 ? 8 : size) && std::memcmp(v.data(), &tag, 8) == 0;
  }
};

// Maps a Zipf rank (1 = hottest) to a key index with a fixed bijection of [0, keys):
// i = (rank - 1) · P mod keys, P a prime not dividing keys. Hot keys are thus spread over the key
// space (as YCSB's scrambled Zipf does) instead of being the smallest indexes.
std::uint64_t scramble_prime(std::uint64_t keys);

// Epoch QSBR mode for a benchmark thread, as kvlab-server's workers run it: while the thread is
// announced (reclaim::online()) it passes a quiescent point every kEvery operations, holding no
// references into a structure between operations. Off (--epoch-guards): tick() does nothing and
// the own structures enter a guard per operation instead.
class QuiescentTicker {
 public:
  static constexpr unsigned kEvery = 256;
  explicit QuiescentTicker(bool on) : on_(on) {}
  void tick() {
    if (on_ && ++since_ == kEvery) {
      since_ = 0;
      reclaim::quiescent();
    }
  }

 private:
  bool on_;
  unsigned since_ = 0;
};

// Heap bytes in use (glibc mallinfo2: every arena, mmapped chunks included).
std::size_t heap_in_use();
// Resident set size of the process, bytes (/proc/self/statm).
std::size_t rss_bytes();
// Returns cached free memory to the OS (the calling thread's block cache, glibc malloc_trim, and
// tbbmalloc's buffers when TBB loaded it), so that the next table's RSS growth is its own and not
// hidden by reuse of freed pages.
void release_free_memory();

// Where each benchmark thread runs, for one thread count.
struct ThreadPlan {
  bool ok = true;
  std::string error;
  std::vector<std::vector<unsigned>> cpus;  // per worker; empty = not pinned
  std::vector<std::vector<unsigned>> numa;  // per worker
  std::vector<std::string> reasons;
};

// State shared by one `kvlab bench` invocation.
class RunEnv {
 public:
  explicit RunEnv(const BenchConfig& config, ProgressFn progress = {});
  const BenchConfig& config() const { return config_; }

  // The placement plan for n threads (planned once per n).
  const ThreadPlan& plan(unsigned n);
  // Pins the calling thread to worker i of plan; true when nothing to do. Called by benchmark
  // threads on entry; the driver thread's affinity is restored by run_gb afterwards.
  static bool pin(const ThreadPlan& plan, unsigned i, std::string* error);

  void report(const Measurement& m);  // progress line + bookkeeping
  void note_footprint(std::size_t bytes) {
    if (bytes > max_footprint_) max_footprint_ = bytes;
  }
  std::size_t max_footprint() const { return max_footprint_; }
  std::vector<std::string>& placement_notes() { return placement_notes_; }
  std::vector<std::string>& warnings() { return warnings_; }
  void set_total(unsigned n) { total_ = n; }

 private:
  const BenchConfig& config_;
  ProgressFn progress_;
  std::map<unsigned, ThreadPlan> plans_;
  std::size_t max_footprint_ = 0;
  std::vector<std::string> placement_notes_;
  std::vector<std::string> warnings_;
  unsigned done_ = 0, total_ = 0;
};

struct GbSpec {
  std::string name;
  unsigned threads = 1;
  unsigned reps = 1;
  double min_time_s = 1.0;      // used when iterations == 0
  std::int64_t iterations = 0;  // > 0: a fixed count per call (queues: 1)
  bool manual_time = false;     // the function reports its own time (SetIterationTime)
  void (*setup)(const benchmark::State&) = nullptr;     // before each call (driver thread)
  void (*teardown)(const benchmark::State&) = nullptr;  // after each call, threads joined
  bool counters = false;  // count perf events over the whole run (every repetition)
};

struct GbStats {
  bool ok = false;
  std::string error;                    // a SkipWithError message
  double median = 0, min = 0, max = 0;  // of the "ops" rate counter, in ops/s
  unsigned reps = 0;
  double cpu_share = 0;        // CPU time / (wall time × threads) of the median repetition
  std::vector<double> values;  // every repetition's ops/s, in the order they ran
  CounterValues counters;      // spec.counters: totals over every call of the benchmark
};

// The counters' one-line note of the last run_gb (why hardware events are missing), or "".
const std::string& last_counters_note();

// Registers and runs one benchmark: body(state) runs on each of spec.threads threads per call and
// must set state.counters["ops"] = Counter(n, kIsRate). Restores the caller's CPU affinity.
GbStats run_gb(const GbSpec& spec, const std::function<void(benchmark::State&)>& body);

// Progress of a long prefill (load phase) on stderr, at most once a second: done/total, rate and
// an estimate of the time left. Silent when quiet or when the prefill ends within a second.
class PrefillProgress {
 public:
  PrefillProgress(std::string what, std::uint64_t total, bool quiet);
  ~PrefillProgress();
  // done: items so far. Cheap: looks at the clock every 4096 items.
  void tick(std::uint64_t done) {
    if (quiet_ || (done & 4095) != 0) return;
    report(done, false);
  }

 private:
  void report(std::uint64_t done, bool last);
  std::string what_;
  std::uint64_t total_;
  bool quiet_;
  bool printed_ = false;
  std::int64_t start_ns_, next_ns_;
  std::uint64_t done_ = 0;
};

// Spin-then-yield backoff for retry loops (bounded queue full, empty queue).
inline void relax(unsigned& attempt) {
  if (++attempt < 64) {
    cpu_relax();
  } else {
    sched_yield();
  }
}

}  // namespace kvlab::bench::detail
