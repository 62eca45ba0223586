// kvlab load: the load generator's library interface (the CLI in load_command.cpp is a thin layer
// over it, and the tests drive it directly).
//
// One call to run_step() runs one fixed-rate step (open loop, rate set) or one closed-loop run
// (rate unset) against a RESP server and returns its histograms and counters.
//
// Open loop. Every connection follows its own schedule of intended send times (uniform with a
// per-connection phase, or Poisson). A request's latency is measured from its INTENDED send time to
// the arrival of its reply, so time spent queued locally (pipeline window full, server stalled)
// counts: coordinated omission is corrected as in wrk2. The schedule never skips a slot: due slots
// wait in order and are sent back to back as soon as the window has room. Service time (actual
// send to reply) is recorded in a second histogram.
//
// End of a step. Slots due before the end but never sent are counted as `unsent` and recorded with
// the lower bound (end - intended); requests still in flight get --drain-timeout to complete, after
// which they count as timeouts and are recorded with (deadline - intended). So a server that stalls
// at the very end still shows up in the tail.
//
// Rates. achieved_rate = replies received inside the measured window / window length (throughput,
// what memtier reports). served_rate = answered requests whose intended send time is inside the
// window / window length: backlog carried over from the warmup or left unsent at the end lowers
// it. A step is sustained when BOTH are >= sustain_threshold (97%) of the target: a server that
// keeps its throughput up while the backlog grows is not keeping the schedule.
//
// Thread safety: run_step() is reentrant but uses threads of its own; call it from one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/load/histogram.hpp"

namespace kvlab::load {

enum class KeyPattern { kUniform, kZipf, kSequential, kGaussian };
enum class Arrivals { kUniform, kPoisson };

// One command template, memtier syntax: arguments separated by blanks; "__key__" and "__data__"
// are replaced per request. A template may hold several commands separated by a ";" argument
// ("MULTI ; INCR __key__ ; EXEC"): they go out back to back as one request, which completes with
// the reply to its last command. "__key__" is one key per request; "__key1__" … "__key9__" are
// further keys, each drawn independently (a transaction over several keys).
struct CommandTemplate {
  std::vector<std::string> args;
  unsigned weight = 1;
};

struct LoadConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string password;
  unsigned threads = 1;
  unsigned connections = 1;  // per thread
  unsigned pipeline = 1;
  double duration_s = 10;
  std::uint64_t requests = 0;  // when > 0: stop after this many (in total); duration_s caps it
  double warmup_s = 0;
  std::vector<CommandTemplate> commands;  // empty = GET __key__
  std::uint64_t keys = 1000000;
  std::string key_prefix = "key:";
  KeyPattern key_pattern = KeyPattern::kUniform;
  double zipf_theta = 0.99;
  std::size_t data_size = 32;
  Arrivals arrivals = Arrivals::kUniform;
  double drain_timeout_s = 2;
  double sustain_threshold = 0.97;  // the seed's rule: achieved >= 97% of the target
  double connect_timeout_s = 5;
  std::uint64_t seed = 1;
  // Redis Cluster: host:port is any node; the slot map is read from it, each sender keeps one
  // connection per node, requests go to their key's node and follow MOVED and ASK.
  bool cluster = false;
  // YCSB core workload over RESP ("ycsb-a" … "ycsb-f"; empty = the templates above): records are
  // hashes of field0..field9 (YCSB's Redis binding), keys 0 .. keys-1 form the load phase
  // (--prefill), the run's inserts continue the sequence. See tools/load/README.md.
  std::string ycsb;
  // Records the run phase may insert (widens the scrambled Zipfian as YCSB's expectednewkeys).
  std::uint64_t ycsb_expected_inserts = 0;

  // Pub/sub latency mode: publishers and subscribers on their own connections.
  bool pubsub = false;
  unsigned publishers = 1;
  unsigned subscribers = 1;
  unsigned channels = 1;
  std::size_t payload = 128;

  // Called once in each generator thread before it connects (placement); false aborts the run.
  std::function<bool(unsigned thread_index, std::string* error)> on_thread_start;
};

// One line of progress: the completions of one second of the run (warmup included).
struct IntervalReport {
  unsigned second = 0;  // 1-based
  bool warmup = false;
  std::uint64_t completed = 0;
  std::uint64_t errors = 0;
  double p50_us = 0, p99_us = 0;
  // This second's latencies (from the intended send time), merged over the threads; valid only
  // during the callback. The interval log (--hdr-log) is written from it.
  const Histogram* histogram = nullptr;
};

struct StepResult {
  std::optional<double> target_rate;  // unset in closed loop
  double achieved_rate = 0;           // replies received inside the measured window / window
  double served_rate = 0;             // answered slots of the measured schedule / window
  bool sustained = true;              // both rates >= sustain_threshold * target (open loop)
  double window_s = 0;
  double start_epoch_s = 0;  // wall-clock start of the step (warmup included), seconds since epoch
  std::uint64_t requests = 0;  // replies recorded (intended send inside the window)
  std::uint64_t error_replies = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t disconnects = 0;
  std::uint64_t unsent = 0;
  // Reads (requests whose last command is a read, see workload.hpp) in the measured window: a
  // nil or empty reply is a miss. A GET benchmark on an empty keyspace is all misses.
  std::uint64_t hits = 0, misses = 0;
  // Every reply received, warmup included (the denominator of the error ratio).
  std::uint64_t replies = 0;
  // The server closed connections: requests sent on them and never answered, plus (open loop)
  // the slots that fell due on them afterwards. first_disconnect_s counts from the start of the
  // step (warmup included); negative when no connection was closed.
  std::uint64_t lost_requests = 0;
  double first_disconnect_s = -1;
  // Cluster mode: redirections followed (MOVED updates the map; ASK sends one request on after
  // ASKING), TRYAGAIN replies retried (1 ms later, to the same node) and the nodes of the initial
  // slot map.
  std::uint64_t moved = 0, asks = 0, tryagains = 0;
  unsigned cluster_nodes = 0;
  Histogram latency;  // from intended send (open loop) / actual send (closed loop)
  Histogram service;  // from actual send
  // Open loop: actual - intended send time. Large values with a small service time mean the
  // generator itself ran late (CPU starved) or the window was full (server slow).
  Histogram send_lag;
  // Pub/sub mode only.
  std::uint64_t published = 0;  // PUBLISH replies received
  std::uint64_t promised = 0;   // sum of PUBLISH replies (receivers the server delivered to)
  std::uint64_t delivered = 0;  // messages the subscribers received
  std::uint64_t errors() const { return error_replies + timeouts + disconnects; }
  std::uint64_t lost() const { return promised > delivered ? promised - delivered : 0; }
};

// Why a run could not start: a bad configuration (a usage error) or a server that could not be
// reached or refused the set-up (connect, AUTH, SUBSCRIBE).
enum class StartError { kNone, kConfig, kConnection };

// Runs one step. rate: total requests (or publishes) per second; nullopt = closed loop.
// progress (optional) is called once per second of the run, from a generator thread.
// Returns false with *error set when the run could not start (connect, AUTH, bad config);
// *why (optional) then tells which.
bool run_step(const LoadConfig& config, std::optional<double> rate, StepResult* result,
              std::string* error, const std::function<void(const IntervalReport&)>& progress = {},
              StartError* why = nullptr);

// The seed's rule: sustained when achieved >= threshold * target (threshold 0.97).
bool is_sustained(double achieved, double target, double threshold);

// SETs every key once (keys 0..keys-1, pipelined, closed loop). False with *error on failure;
// *why (optional) tells a connection failure from an error reply or a bad configuration.
bool prefill(const LoadConfig& config, std::string* error, StartError* why = nullptr);

// INFO <section> from the server, parsed into field -> value. False with *error on failure.
bool fetch_info(const LoadConfig& config, const std::string& section,
                std::map<std::string, std::string>* out, std::string* error);

// Parsing helpers for the CLI. Each returns false on malformed input.
bool parse_rate(std::string_view text, double* out);                    // "20k", "1.5M", "300"
bool parse_rate_list(std::string_view text, std::vector<double>* out);  // "20k,50k"
bool parse_duration(std::string_view text, double* seconds);            // "3s", "500ms", "2m", "3"
bool parse_ratio(std::string_view text, std::vector<CommandTemplate>* out);  // "1:10" SET:GET
bool parse_template(std::string_view text, CommandTemplate* out);

}  // namespace kvlab::load
