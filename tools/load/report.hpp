// Results of kvlab load as a terminal table, JSON (with the reproducibility manifest) or CSV.
//
// JSON schema: {"manifest": {"kvlab_version", "git_sha", "date", "host", "cpu_model",
// "target": {"host", "port", "server_info": {INFO server fields}}, "args", ...}, "steps": [
// {"target_rate" (null in closed loop), "achieved_rate", "sustained", "requests", "errors",
// "latency_us": {"p50", "p90", "p99", "p999", "p9999", "max", "mean"}, "service_us": {...}, ...}]}
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tools/load/load.hpp"

namespace kvlab::load {

// The verdict of a run, as the exit status says it (tools/load/README.md lists the codes).
struct RunStatus {
  int exit_code = 0;
  std::string reason;  // empty when exit_code == 0
};

struct Manifest {
  std::string kvlab_version, git_sha, date, host, cpu_model;
  std::string target_host;
  unsigned target_port = 0;
  std::map<std::string, std::string> server_info;
  std::vector<std::string> args;
  std::string mode;      // "open-loop", "closed-loop", "pubsub"
  std::string workload;  // one line
  std::string topology_summary;
  std::string placement;                 // policy
  std::vector<std::string> thread_cpus;  // per generator thread, CPU list ("" = unpinned)
  unsigned threads = 0, connections = 0, pipeline = 0;
  double sustain_threshold = 0.97;
  bool cluster = false;  // --cluster: redirections are reported
  RunStatus status;
  // Per step, extra JSON members ("name": value, without braces; may be empty) and table lines
  // that the CLI adds (the server's perf events, --server-counters).
  std::vector<std::string> step_json_extras;
  std::vector<std::string> table_notes;
};

// Fills version, date (UTC, ISO 8601), host name and CPU model.
void fill_machine_fields(Manifest* m);

std::string format_table(const Manifest& m, const std::vector<StepResult>& steps);
std::string format_json(const Manifest& m, const std::vector<StepResult>& steps);
std::string format_csv(const Manifest& m, const std::vector<StepResult>& steps);

// "20k", "1.5M": compact rate for tables and progress lines.
std::string compact_rate(double r);

}  // namespace kvlab::load
