// kvlab bench: microbenchmarks of the keyspace backends on Google Benchmark.
//
// The driver (run_bench) takes a BenchConfig, runs every selected backend × thread count as one
// Google Benchmark instance (repetitions, median/min/max), validates each run, adds the memory
// floor, and returns a BenchReport that the formatters print as a table, JSON or CSV.
//
// Method, in short (papers/bench-method.md has the long version):
//  - Maps: keys are indexes 0..keys-1 encoded big-endian in key_size bytes; a fresh map per
//    (backend, threads) is prefilled to `prefill`·keys on the main thread, then T threads run
//    update% writes (half insert, half erase) and the rest finds, keys drawn uniform or Zipf.
//    Backends without concurrent erase (kTraits.concurrent_erase == false) run the erase half as
//    insert_or_assign instead ("erase→assign"), so no unsafe erase ever runs concurrently.
//  - Validation: each thread counts its successful inserts/erases and the sum of their key
//    indexes; after the run the map must hold exactly prefill + inserts − erases keys with the
//    matching key-sum, every value must be the one stored for its key, size_approx() must agree,
//    and finds must never have seen a foreign value. A failing run is reported invalid, no number.
//  - Floor: random 8-byte reads (and a dependent pointer chase) over an array as large as the
//    largest table's footprint, with the same thread counts.
//  - Queues: P producers push `items` tagged items, C consumers pop them; no loss, no duplicates,
//    and per-producer FIFO (as seen by each consumer) when kTraits.fifo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "structures/keyspace.hpp"
#include "tools/bench/counters.hpp"

namespace kvlab::bench {

struct KeyDist {
  bool zipf = false;
  double theta = 0.0;  // zipf only
  std::string describe() const;
};

// Parses "uniform", "zipf" (θ = 0.99) or "zipf:θ" (θ > 0). False and *error on bad input.
bool parse_dist(const std::string& text, KeyDist* out, std::string* error);
// Parses "2s", "500ms", "1.5" (seconds). False on bad input or a non-positive value.
bool parse_duration(const std::string& text, double* seconds);
// Parses "1,2,4" (each >= 1). False on bad input.
bool parse_thread_list(const std::string& text, std::vector<unsigned>* out);

struct BenchConfig {
  std::string backends = "map";  // NAMES|FAMILY|all (registry selection syntax)
  std::vector<unsigned> threads{1, 2};
  std::uint64_t keys = 1000000;
  double prefill = 0.5;    // fraction of keys present at the start
  double update_pct = 10;  // % of operations that write: half insert, half erase
  KeyDist dist{};
  unsigned key_size = 8;
  unsigned value_size = 8;  // <= 8: std::uint64_t values; > 8: std::string of that many bytes
  double duration_s = 2.0;
  unsigned reps = 5;
  std::string placement = "none";
  bool via_adapter = false;  // also measure each map through AnyKeyspace (virtual calls)
  // Map threads run in epoch QSBR mode (quiescent every 256 operations, as the server's workers);
  // true: every operation of the own structures enters and leaves an epoch guard instead.
  bool epoch_guards = false;
  // Map operations run in windows of this many (1..32): each thread draws a window's keys ahead
  // and hands them to the backend's prefetch hint, if it has one (hash/kvlab), before running them
  // one by one, as kvlab-server does with a pipelined batch. 1 = one operation at a time.
  unsigned batch = 1;
  // Queues.
  unsigned producers = 0;  // 0: derived from the thread list
  unsigned consumers = 0;
  std::uint64_t items = 1000000;         // per repetition
  std::size_t queue_capacity = 1 << 16;  // bounded queues
  bool floor = true;                     // add the memory-floor rows after the maps
  bool quiet = false;                    // no progress lines on stderr
  // YCSB core workload ("ycsb-a" … "ycsb-f"; tools/bench/ycsb.hpp) instead of the
  // find/insert/erase mix: keys = record count, values 1,000-byte records.
  std::string ycsb;
  bool counters = false;  // perf_event_open counters per operation (tools/bench/counters.hpp)
  std::vector<std::string> argv;  // the command line, for the manifest
};

// Checks the knobs against each other (key_size large enough for keys, fractions in range...).
bool validate_config(const BenchConfig& c, std::string* error);

struct Measurement {
  std::string backend;  // registry name, or "floor/random-read", "floor/pointer-chase"
  std::string family;   // hash, skiplist, queue, floor
  unsigned threads = 0;
  bool via_adapter = false;
  double mops = 0, mops_min = 0, mops_max = 0;  // median / min / max over repetitions
  unsigned reps = 0;
  bool valid = false;
  std::string invalid_reason;             // when !valid
  std::string note;                       // e.g. "erase→assign: no concurrent erase"
  std::size_t footprint_bytes = 0;        // maps: estimated table footprint (see footprint.hpp)
  unsigned producers = 0, consumers = 0;  // queues
  std::uint64_t ops = 0;  // operations validated (all calls, estimation runs included)
  // CPU time the benchmark threads got / (wall time × threads), median repetition. Well below 1
  // means the machine was busy (or threads > cores): the rate then measures the scheduler too.
  double cpu_share = 0;
  std::vector<double> rep_values;  // every repetition's ops/s
  CounterValues counters;          // --counters: totals over the run, per op = total / ops
};

struct FloorRow {
  unsigned threads = 0;
  double mops = 0, mops_min = 0, mops_max = 0;                    // independent random 8-byte reads
  double chase_mops = 0, chase_mops_min = 0, chase_mops_max = 0;  // dependent pointer chase
  std::size_t array_bytes = 0;
  unsigned reps = 0;
  double cpu_share = 0, chase_cpu_share = 0;
};

struct BenchReport {
  BenchConfig config;
  std::vector<Measurement> results;
  std::vector<FloorRow> floor;
  std::string footprint_method;
  std::string topology_summary;
  std::vector<std::string> placement_notes;  // "threads=2: worker 0 → CPUs 0 (...)"
  std::vector<std::string> warnings;
  std::string loadavg_before, loadavg_after;  // /proc/loadavg at start and end
  bool interrupted = false;                   // stopped by a signal: the finished runs only
  double other_cpu_load = 0;  // CPUs kept busy by other processes during the run, on average
  std::string counters_note;  // --counters: why hardware events are missing, if they are
};

using ProgressFn = std::function<void(const Measurement&)>;

// Stopping a run early (SIGINT, SIGTERM): request_stop() is async-signal-safe (one lock-free
// atomic store). The running measurement ends at its next check (every 1,024 operations of each
// thread) and is dropped; no further measurement starts; run_bench returns the finished ones with
// report->interrupted set.
void request_stop(int signal_number);
bool stop_requested();
int stop_signal();

// Runs everything the config selects. False and *error on a configuration error (unknown
// backend, bad placement policy); measurement failures are reported per row, never as errors.
bool run_bench(const BenchConfig& config, BenchReport* report, std::string* error);

std::string format_table(const BenchReport& r);
std::string format_json(const BenchReport& r);
std::string format_csv(const BenchReport& r);

}  // namespace kvlab::bench
