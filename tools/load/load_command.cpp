// `kvlab load`: the CLI front end of the load generator (flags, placement, the sweep, output).
// The measuring is in the kvlab_load library (load.hpp); this file turns flags into a LoadConfig,
// runs the steps one after another and prints/saves the results with their manifest.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "kvlab_config.hpp"
#include "structures/common/json.hpp"
#include "tools/bench/counters.hpp"
#include "tools/bench/ycsb.hpp"
#include "tools/cli/subcommands.hpp"
#include "tools/load/hdr_format.hpp"
#include "tools/load/load.hpp"
#include "tools/load/report.hpp"

#if defined(KVLAB_LOAD_HAVE_TOPO)
#include "topology/placement.hpp"
#endif

namespace kvlab::cli {
namespace {

struct LoadOptions {
  load::LoadConfig cfg;
  std::string duration = "10s", warmup = "0s", drain = "2s";
  std::vector<std::string> commands;
  std::string command_ratio, ratio, key_pattern = "uniform", arrivals = "uniform";
  std::string rate;
  bool stop_after_ns = false;
  bool fail_on_ns = false;
  double max_error_ratio = 0;
  bool prefill = false;
  bool quiet = false;
  std::string format = "table", out;
  std::string hdr_out, hdr_log;
  std::string workload;  // ycsb-a … ycsb-f
  int server_counters_pid = 0;
  std::string placement = "none", avoid_cpus, smt = "auto";
  std::vector<std::string> argv;
  bool duration_given = false;
};

// Exit statuses (tools/load/README.md): a script tells a good run from a broken one by them.
constexpr int kExitOk = 0;
constexpr int kExitErrors = 1;        // error replies (and timeouts) above --max-error-ratio
constexpr int kExitUsage = 2;         // bad flags; nothing was sent
constexpr int kExitConnection = 3;    // the server closed or refused connections
constexpr int kExitNotSustained = 4;  // a step was NS and --fail-on-ns was given

[[noreturn]] void fail(const std::string& message, int code = kExitUsage) {
  std::fprintf(stderr, "kvlab load: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

int start_error_code(load::StartError why) {
  return why == load::StartError::kConnection ? kExitConnection
         : why == load::StartError::kNone     ? kExitErrors
                                              : kExitUsage;
}

// The verdict on a finished run: the exit status and, unless it is 0, one line saying why.
load::RunStatus judge(const LoadOptions& o, const std::vector<load::StepResult>& steps,
                      const std::string& start_failure, int start_failure_code) {
  load::RunStatus st;
  std::uint64_t errors = 0, replies = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const load::StepResult& s = steps[i];
    errors += s.error_replies + s.timeouts;
    replies += s.replies + s.timeouts;
    if (s.disconnects > 0 && st.exit_code != kExitConnection) {
      char b[300];
      std::snprintf(b, sizeof b,
                    "the server closed %llu connection(s) in step %zu, the first %.3f s into the "
                    "step; %llu request(s) lost (sent and never answered, or due on a closed "
                    "connection)",
                    static_cast<unsigned long long>(s.disconnects), i + 1, s.first_disconnect_s,
                    static_cast<unsigned long long>(s.lost_requests));
      st.exit_code = kExitConnection;
      st.reason = b;
    }
  }
  if (!start_failure.empty() && st.exit_code != kExitConnection) {
    st.exit_code = start_failure_code;
    st.reason = start_failure;
  }
  if (st.exit_code != 0) return st;
  const double ratio = replies ? static_cast<double>(errors) / static_cast<double>(replies) : 0;
  if (errors > 0 && ratio > o.max_error_ratio) {
    char b[200];
    std::snprintf(b, sizeof b,
                  "%llu of %llu requests got an error reply or timed out (ratio %.4g > "
                  "--max-error-ratio %g)",
                  static_cast<unsigned long long>(errors), static_cast<unsigned long long>(replies),
                  ratio, o.max_error_ratio);
    st.exit_code = kExitErrors;
    st.reason = b;
    return st;
  }
  if (o.fail_on_ns) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].sustained) continue;
      st.exit_code = kExitNotSustained;
      st.reason = "step " + std::to_string(i + 1) + " was not sustained (--fail-on-ns)";
      return st;
    }
  }
  return st;
}

void build_config(LoadOptions& o) {
  load::LoadConfig& c = o.cfg;
  if (!load::parse_duration(o.duration, &c.duration_s)) fail("bad --duration '" + o.duration + "'");
  if (!load::parse_duration(o.warmup, &c.warmup_s)) fail("bad --warmup '" + o.warmup + "'");
  if (!load::parse_duration(o.drain, &c.drain_timeout_s))
    fail("bad --drain-timeout '" + o.drain + "'");
  if (!o.ratio.empty() && !o.commands.empty()) fail("use either --ratio or --command, not both");
  if (!o.ratio.empty() && !load::parse_ratio(o.ratio, &c.commands))
    fail("bad --ratio '" + o.ratio + "' (want SET:GET, e.g. 1:10)");
  for (const auto& t : o.commands) {
    load::CommandTemplate ct;
    if (!load::parse_template(t, &ct)) fail("bad --command '" + t + "'");
    c.commands.push_back(ct);
  }
  if (!o.command_ratio.empty()) {
    std::vector<unsigned> weights;
    std::string_view s = o.command_ratio;
    while (!s.empty()) {
      const std::size_t colon = s.find(':');
      const std::string part(s.substr(0, colon));
      try {
        weights.push_back(static_cast<unsigned>(std::stoul(part)));
      } catch (...) {
        fail("bad --command-ratio '" + o.command_ratio + "'");
      }
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
    if (weights.size() != c.commands.size()) fail("--command-ratio needs one weight per --command");
    for (std::size_t i = 0; i < weights.size(); ++i) c.commands[i].weight = weights[i];
  }
  if (!o.workload.empty()) {
    const auto w = bench::ycsb::workload_by_name(o.workload);
    if (!w) fail("unknown --workload '" + o.workload + "' (ycsb-a, ycsb-b … ycsb-f)");
    if (!o.ratio.empty() || !o.commands.empty()) fail("--workload replaces --command and --ratio");
    c.ycsb = o.workload;
  }
  const std::string& kp = o.key_pattern;
  if (kp == "uniform") {
    c.key_pattern = load::KeyPattern::kUniform;
  } else if (kp == "sequential") {
    c.key_pattern = load::KeyPattern::kSequential;
  } else if (kp == "gaussian") {
    c.key_pattern = load::KeyPattern::kGaussian;
  } else if (kp.rfind("zipf", 0) == 0) {
    c.key_pattern = load::KeyPattern::kZipf;
    if (kp.size() > 5 && kp[4] == ':') {
      try {
        c.zipf_theta = std::stod(kp.substr(5));
      } catch (...) {
        fail("bad --key-pattern '" + kp + "'");
      }
    } else if (kp != "zipf") {
      fail("bad --key-pattern '" + kp + "'");
    }
  } else {
    fail("unknown --key-pattern '" + kp + "' (uniform, zipf:θ, sequential, gaussian)");
  }
  if (o.arrivals == "uniform") {
    c.arrivals = load::Arrivals::kUniform;
  } else if (o.arrivals == "poisson") {
    c.arrivals = load::Arrivals::kPoisson;
  } else {
    fail("unknown --arrivals '" + o.arrivals + "' (uniform, poisson)");
  }
  if (c.sustain_threshold > 1) c.sustain_threshold /= 100;  // accept "97" as well as "0.97"
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    fail("unknown --format '" + o.format + "' (table, json, csv)");
}

void run(LoadOptions& o) {
  build_config(o);
  // With --requests, --duration only caps the run; without an explicit one the cap is an hour.
  if (o.cfg.requests > 0 && !o.duration_given) o.cfg.duration_s = 3600;
  load::LoadConfig& c = o.cfg;
  std::vector<std::optional<double>> rates;
  if (o.rate.empty()) {
    rates.push_back(std::nullopt);
  } else {
    std::vector<double> list;
    if (!load::parse_rate_list(o.rate, &list)) fail("bad --rate '" + o.rate + "'");
    for (double r : list) rates.push_back(r);
  }
  if (!c.ycsb.empty()) {
    // YCSB widens the scrambled Zipfian by twice the inserts it expects (expectednewkeys); keys
    // drawn beyond the records inserted so far are drawn again.
    double ops = static_cast<double>(c.keys);
    if (c.requests > 0) {
      ops = static_cast<double>(c.requests);
    } else if (!o.rate.empty()) {
      ops = 0;
      for (const auto& r : rates) ops += *r * (c.duration_s + c.warmup_s);
    }
    c.ycsb_expected_inserts =
        static_cast<std::uint64_t>(ops * bench::ycsb::workload_by_name(c.ycsb)->insert * 2);
  }

  load::Manifest m;
  load::fill_machine_fields(&m);
  m.args = o.argv;
  m.target_host = c.host;
  m.target_port = c.port;
  m.threads = c.threads;
  m.connections = c.connections;
  m.pipeline = c.pipeline;
  m.sustain_threshold = c.sustain_threshold;
  m.mode = c.pubsub ? "pubsub" : (o.rate.empty() ? "closed-loop" : "open-loop");
  m.cluster = c.cluster;
  m.placement = o.placement;
  if (c.pubsub) {
    m.workload = std::to_string(c.publishers) + " publishers, " + std::to_string(c.subscribers) +
                 " subscribers, " + std::to_string(c.channels) + " channels, payload " +
                 std::to_string(c.payload) + " B, " + std::to_string(c.threads) + " threads";
  } else if (!c.ycsb.empty()) {
    m.workload = bench::ycsb::workload_by_name(c.ycsb)->describe() + "; " + std::to_string(c.keys) +
                 " records of 10 x 100-byte fields (hashes user<FNV>, YCSB's Redis layout); " +
                 std::to_string(c.threads) + " threads x " + std::to_string(c.connections) +
                 " connections, pipeline " + std::to_string(c.pipeline);
  } else {
    std::string cmds;
    if (c.commands.empty()) cmds = "GET __key__";
    for (const auto& t : c.commands) {
      if (!cmds.empty()) cmds += " | ";
      for (std::size_t i = 0; i < t.args.size(); ++i) cmds += (i ? " " : "") + t.args[i];
      cmds += " x" + std::to_string(t.weight);
    }
    m.workload = cmds + "; " + std::to_string(c.keys) + " keys (" + o.key_pattern + "), " +
                 std::to_string(c.data_size) + " B values; " + std::to_string(c.threads) +
                 " threads x " + std::to_string(c.connections) + " connections, pipeline " +
                 std::to_string(c.pipeline) + ", arrivals " + o.arrivals;
  }

#if defined(KVLAB_LOAD_HAVE_TOPO)
  auto plan = std::make_shared<topo::PlanResult>(
      topo::plan_live(c.threads, o.placement, o.smt, o.avoid_cpus));
  if (!plan->ok) fail("placement: " + plan->error);
  if (o.placement != "none" || !o.avoid_cpus.empty()) {
    for (const auto& w : plan->warnings)
      std::fprintf(stderr, "kvlab load: placement: %s\n", w.c_str());
  }
  m.topology_summary = plan->topology_summary;
  for (unsigned i = 0; i < c.threads && i < plan->workers.size(); ++i)
    m.thread_cpus.push_back(topo::format_cpu_list(plan->workers[i].cpus));
  if (o.placement == "none" && !o.avoid_cpus.empty()) {
    // No policy, but keep off the avoided CPUs: every thread may run on all the others.
    std::vector<unsigned> avoid, rest;
    std::string error;
    if (!topo::parse_cpu_list(o.avoid_cpus, &avoid, &error)) fail("--avoid-cpus: " + error);
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    ::sched_getaffinity(0, sizeof allowed, &allowed);
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      if (CPU_ISSET(cpu, &allowed) && !std::binary_search(avoid.begin(), avoid.end(), cpu))
        rest.push_back(cpu);
    if (rest.empty()) fail("--avoid-cpus leaves no CPU to run on");
    for (auto& w : plan->workers) {
      w.cpus = rest;
      w.reason = "any CPU but " + o.avoid_cpus;
    }
    m.thread_cpus.assign(c.threads, topo::format_cpu_list(rest));
  }
  c.on_thread_start = [plan](unsigned i, std::string* error) {
    if (i >= plan->workers.size()) return true;
    if (!topo::bind_current_thread(plan->workers[i], error)) {
      *error = "cannot bind generator thread " + std::to_string(i) + ": " + *error;
      return false;
    }
    return true;
  };
#else
  if (o.placement != "none" || !o.avoid_cpus.empty())
    fail("--placement/--avoid-cpus need the topology library, which this build lacks");
#endif

  std::string error;
  if (!load::fetch_info(c, "server", &m.server_info, &error))
    fail("cannot query the server at " + c.host + ":" + std::to_string(c.port) + ": " + error,
         kExitConnection);
  if (o.prefill && !c.pubsub) {
    if (!o.quiet) {
      std::fprintf(stderr, "prefill: %s %llu keys...\n",
                   c.ycsb.empty() ? "SET" : "YCSB load phase,",
                   static_cast<unsigned long long>(c.keys));
    }
    load::StartError why;
    if (!load::prefill(c, &error, &why)) fail("prefill failed: " + error, start_error_code(why));
  }

  if (!o.hdr_log.empty() && !load::hdr_log_supported())
    fail("--hdr-log needs zlib, which this build lacks");
  // Interval log lines are encoded as the seconds arrive and written after each step, when the
  // step's wall-clock start is known; the file is opened first so that a bad path fails early.
  std::ofstream hdr_log;
  std::optional<load::HdrLogWriter> log_writer;
  struct PendingInterval {
    unsigned second;
    std::string line_tail;  // "length,max,HISTF..."
  };
  if (!o.hdr_log.empty()) {
    hdr_log.open(o.hdr_log, std::ios::trunc);
    if (!hdr_log) fail("cannot write --hdr-log " + o.hdr_log);
  }
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  std::vector<load::StepResult> steps;
  std::string start_failure;
  int start_failure_code = kExitOk;
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const auto& rate = rates[i];
    if (!o.quiet) {
      std::fprintf(stderr, "step %zu/%zu: %s\n", i + 1, rates.size(),
                   rate ? ("rate " + load::compact_rate(*rate) + "/s").c_str() : "closed loop");
    }
    std::vector<PendingInterval> intervals;
    auto progress = [&](const load::IntervalReport& r) {
      if (hdr_log.is_open() && r.histogram != nullptr) {
        intervals.push_back({r.second, load::hdr_interval_fields(1.0, *r.histogram)});
      }
      if (o.quiet) return;
      char line[200];
      std::snprintf(line, sizeof line, "[%3us] %10.0f/s  p50 %8.3f ms  p99 %8.3f ms  errors %llu%s",
                    r.second, static_cast<double>(r.completed), r.p50_us / 1000, r.p99_us / 1000,
                    static_cast<unsigned long long>(r.errors), r.warmup ? "  (warmup)" : "");
      if (tty) {
        std::fprintf(stderr, "\r%s\x1b[K", line);
      } else {
        std::fprintf(stderr, "%s\n", line);
      }
      std::fflush(stderr);
    };
    // The server's perf events over the whole step (warmup and drain included), per reply.
    std::unique_ptr<bench::CounterSet> counters;
    std::string counters_note;
    if (o.server_counters_pid > 0) {
      counters = std::make_unique<bench::CounterSet>();
      if (!counters->open_process(o.server_counters_pid, &counters_note))
        fail("--server-counters " + std::to_string(o.server_counters_pid) + ": " + counters_note);
      counters->start();
    }
    load::StepResult result;
    load::StartError why;
    const bool ok = o.quiet && !hdr_log.is_open()
                        ? load::run_step(c, rate, &result, &error, {}, &why)
                        : load::run_step(c, rate, &result, &error, progress, &why);
    if (!o.quiet && tty) std::fprintf(stderr, "\n");
    if (ok && hdr_log.is_open()) {
      if (!log_writer) {
        log_writer.emplace(result.start_epoch_s);
        hdr_log << log_writer->header("kvlab load " + std::string(KVLAB_VERSION) +
                                      ": corrected latency per second, ns; steps follow in time");
      }
      for (const auto& iv : intervals) {
        char start[32];
        std::snprintf(start, sizeof start, "%.3f,",
                      result.start_epoch_s - log_writer->start_epoch_s() + iv.second - 1);
        hdr_log << start << iv.line_tail << "\n";
      }
      hdr_log.flush();
    }
    if (!ok) {
      // The first step failing to start is a plain error; a later one (the server went away
      // between steps) still reports the steps that ran.
      if (steps.empty() || why != load::StartError::kConnection) fail(error, start_error_code(why));
      start_failure = "step " + std::to_string(i + 1) + " could not start: " + error;
      start_failure_code = start_error_code(why);
      break;
    }
    if (counters) {
      const bench::CounterValues v = counters->stop();
      const auto replies = static_cast<double>(result.replies);
      m.step_json_extras.resize(steps.size());
      m.step_json_extras.push_back(
          "\"server_counters_per_request\": " + bench::counters_json(v, replies) +
          ", \"server_counters_note\": " + json_string(counters_note));
      char line[256];
      auto cell = [&](bench::Event e, const char* f) {
        const double x = v.per_op(e, replies);
        if (x < 0) return std::string("-");
        char b[32];
        std::snprintf(b, sizeof b, f, x);
        return std::string(b);
      };
      std::snprintf(line, sizeof line,
                    "step %zu server (pid %d) per request: cycles %s, instructions %s, LLC "
                    "misses %s, task-clock %s ns, context switches %s, page faults %s",
                    steps.size() + 1, o.server_counters_pid,
                    cell(bench::Event::kCycles, "%.0f").c_str(),
                    cell(bench::Event::kInstructions, "%.0f").c_str(),
                    cell(bench::Event::kLlcMisses, "%.2f").c_str(),
                    cell(bench::Event::kTaskClockNs, "%.0f").c_str(),
                    cell(bench::Event::kContextSwitches, "%.3f").c_str(),
                    cell(bench::Event::kPageFaults, "%.4f").c_str());
      m.table_notes.push_back(line);
      if (!counters_note.empty() && steps.empty())
        m.table_notes.push_back("note: " + counters_note);
    }
    steps.push_back(std::move(result));
    // A closed connection ends the sweep: the steps after it would measure a broken server.
    if (steps.back().disconnects > 0) break;
    if (!steps.back().sustained && o.stop_after_ns) break;
  }
  const load::RunStatus status = judge(o, steps, start_failure, start_failure_code);
  m.status = status;

  const std::string table = load::format_table(m, steps);
  std::string formatted = table;
  if (o.format == "json") formatted = load::format_json(m, steps);
  if (o.format == "csv") formatted = load::format_csv(m, steps);
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    f << formatted;
    if (!f) fail("cannot write " + o.out, kExitErrors);
    std::fputs(table.c_str(), stdout);
  } else {
    std::fputs(formatted.c_str(), stdout);
  }
  std::fflush(stdout);
  // One .hgrm per step: FILE for a single step, FILE with ".stepN" before its extension in a
  // sweep (run.hgrm -> run.step1.hgrm, run.step2.hgrm ...).
  if (!o.hdr_out.empty()) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::string path = o.hdr_out;
      if (steps.size() > 1) {
        const std::size_t slash = path.rfind('/');
        std::size_t dot = path.rfind('.');
        if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
          dot = path.size();
        path.insert(dot, ".step" + std::to_string(i + 1));
      }
      std::ofstream f(path, std::ios::trunc);
      f << load::format_hgrm(steps[i].latency);
      if (!f) fail("cannot write --hdr-out " + path, kExitErrors);
    }
  }
  if (status.exit_code != kExitOk) fail(status.reason, status.exit_code);
}

}  // namespace

void add_load(CLI::App& app) {
  auto o = std::make_shared<LoadOptions>();
  CLI::App* sub = app.add_subcommand(
      "load",
      "Drive a RESP server (kvlab-server, Redis, Valkey): open loop at fixed rates with "
      "coordinated-omission-corrected latency, rate sweeps with a not-sustained verdict, closed "
      "loop, pub/sub delivery latency");
  load::LoadConfig& c = o->cfg;
  sub->add_option("--host", c.host, "server host")->capture_default_str();
  sub->add_option("--port", c.port, "server port")->capture_default_str();
  sub->add_option("--password", c.password, "AUTH password");
  sub->add_option("-t,--threads", c.threads, "generator threads")->capture_default_str();
  sub->add_option("-c,--connections", c.connections, "connections per thread")
      ->capture_default_str();
  sub->add_option("--pipeline", c.pipeline, "requests in flight per connection (window)")
      ->capture_default_str();
  sub->add_option("--duration", o->duration, "measured time per step (10s, 500ms, 2m)")
      ->capture_default_str();
  sub->add_option("--requests", c.requests, "stop after N requests in total instead of a duration");
  sub->add_option("--warmup", o->warmup, "unmeasured time before each step")->capture_default_str();
  sub->add_option(
      "--command", o->commands,
      "memtier-style template, e.g. \"SET __key__ __data__\" (repeatable); __key__ is one key per "
      "request, __rand_key__ a key drawn for each occurrence, __rand_int__ a number below --keys");
  sub->add_option("--command-ratio", o->command_ratio,
                  "weights of the --command templates, e.g. 1:10");
  sub->add_option("--ratio", o->ratio, "SET:GET mix, e.g. 1:10 (default: GET only)");
  sub->add_option("--workload", o->workload,
                  "YCSB core workload ycsb-a … ycsb-f over YCSB's Redis record layout; --keys "
                  "records, --prefill is the load phase");
  sub->add_option("--keys", c.keys, "key space size")->capture_default_str();
  sub->add_option("--key-prefix", c.key_prefix, "key prefix")->capture_default_str();
  sub->add_option("--key-pattern", o->key_pattern, "uniform | zipf:θ | sequential | gaussian")
      ->capture_default_str();
  sub->add_option("--data-size", c.data_size, "value size in bytes")->capture_default_str();
  sub->add_flag("--prefill", o->prefill, "SET every key once before the first step");
  sub->add_option("--rate", o->rate,
                  "open loop: total requests/s; a list (20k,50k,100k) runs a sweep; omit for "
                  "closed loop");
  sub->add_option("--arrivals", o->arrivals, "uniform | poisson")->capture_default_str();
  sub->add_option("--sustain-threshold", c.sustain_threshold,
                  "a step is sustained when achieved >= this fraction of the target")
      ->capture_default_str();
  sub->add_flag("--stop-after-ns", o->stop_after_ns, "end the sweep at the first unsustained step");
  sub->add_flag("--fail-on-ns", o->fail_on_ns,
                "exit 4 when a step is not sustained (by default NS is reported, not an error)");
  sub->add_option("--max-error-ratio", o->max_error_ratio,
                  "exit 1 when error replies and timeouts exceed this fraction of the requests")
      ->capture_default_str();
  sub->add_option("--drain-timeout", o->drain, "wait for replies in flight after each step")
      ->capture_default_str();
  sub->add_option("--seed", c.seed, "RNG seed")->capture_default_str();
  sub->add_flag("--pubsub", c.pubsub, "pub/sub delivery latency mode");
  sub->add_flag("--cluster", c.cluster,
                "Redis Cluster: --host/--port is any node; requests go to their key's node "
                "(CLUSTER SLOTS, hash tags), MOVED and ASK are followed and counted");
  sub->add_option("--publishers", c.publishers, "pub/sub: publisher connections")
      ->capture_default_str();
  sub->add_option("--subscribers", c.subscribers, "pub/sub: subscriber connections")
      ->capture_default_str();
  sub->add_option("--channels", c.channels, "pub/sub: channels (subscriber i listens to i mod K)")
      ->capture_default_str();
  sub->add_option("--payload", c.payload, "pub/sub: message size in bytes")->capture_default_str();
  sub->add_option("--format", o->format, "table | json | csv")->capture_default_str();
  sub->add_option("--out", o->out, "write the --format output to this file (table still printed)");
  sub->add_option("--server-counters", o->server_counters_pid,
                  "count the server's perf events (every thread of PID) over each step and report "
                  "them per request: cycles, instructions, cache and branch misses where the PMU "
                  "is exposed, task-clock, context switches, page faults");
  sub->add_option("--hdr-out", o->hdr_out,
                  "write each step's corrected latency histogram as HdrHistogram's percentile "
                  "distribution (.hgrm, ms); a sweep writes FILE.stepN.EXT");
  sub->add_option("--hdr-log", o->hdr_log,
                  "write an HdrHistogram interval log (format 1.3): one histogram per second of "
                  "every step, for latency over time and merging");
  sub->add_option("--placement", o->placement,
                  "pin generator threads: none, compact, scatter, per-l3, per-numa, explicit:LIST")
      ->capture_default_str();
  sub->add_option("--avoid-cpus", o->avoid_cpus, "keep generator threads off these CPUs (0-3,8)");
  sub->add_option("--smt", o->smt, "auto | on | off")->capture_default_str();
  sub->add_flag("-q,--quiet", o->quiet, "no progress lines");
  sub->callback([o, sub] {
    // The command line as given, for the manifest.
    o->argv.clear();
    std::ifstream cmdline("/proc/self/cmdline", std::ios::binary);
    std::string arg;
    while (std::getline(cmdline, arg, '\0')) o->argv.push_back(arg);
    o->duration_given = sub->get_option("--duration")->count() > 0;
    run(*o);
  });
}

}  // namespace kvlab::cli
