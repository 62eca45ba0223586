#include "tools/load/report.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "structures/common/json.hpp"
#include "tools/load/hdr_format.hpp"

namespace kvlab::load {
namespace {

std::string num(double v, int decimals = 3) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string summary_json(const LatencySummary& s) {
  return "{\"p50\": " + num(s.p50) + ", \"p90\": " + num(s.p90) + ", \"p99\": " + num(s.p99) +
         ", \"p999\": " + num(s.p999) + ", \"p9999\": " + num(s.p9999) +
         ", \"max\": " + num(s.max) + ", \"mean\": " + num(s.mean) +
         ", \"count\": " + std::to_string(s.count) + "}";
}

std::string ms(double us) {
  return num(us / 1000.0, 3);
}

std::string grouped(double v) {
  const auto n = static_cast<long long>(std::llround(v));
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

std::string pad(std::string s, std::size_t w, bool left = false) {
  if (s.size() >= w) return s;
  return left ? s + std::string(w - s.size(), ' ') : std::string(w - s.size(), ' ') + s;
}

}  // namespace

std::string compact_rate(double r) {
  char b[32];
  if (r >= 1e6) {
    std::snprintf(b, sizeof b, "%.3gM", r / 1e6);
  } else if (r >= 1e3) {
    std::snprintf(b, sizeof b, "%.3gk", r / 1e3);
  } else {
    std::snprintf(b, sizeof b, "%.0f", r);
  }
  return b;
}

void fill_machine_fields(Manifest* m) {
  m->kvlab_version = KVLAB_VERSION;
  m->git_sha = KVLAB_GIT_SHA;
  char b[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  m->date = b;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  m->host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        m->cpu_model = line.substr(colon + 1);
        while (!m->cpu_model.empty() && m->cpu_model.front() == ' ') m->cpu_model.erase(0, 1);
      }
      break;
    }
  }
}

std::string format_table(const Manifest& m, const std::vector<StepResult>& steps) {
  std::string out;
  out += "kvlab load " + m.mode + " -> " + m.target_host + ":" + std::to_string(m.target_port);
  if (auto it = m.server_info.find("kvlab_version"); it != m.server_info.end()) {
    out += " (kvlab-server " + it->second + ")";
  } else if (auto rv = m.server_info.find("redis_version"); rv != m.server_info.end()) {
    out += " (redis_version " + rv->second + ")";
  }
  out += "\n" + m.workload + "\n";
  const bool pubsub = m.mode == "pubsub";
  out += pubsub ? "latency = delivery time, from the intended publish time; milliseconds\n"
                : (m.mode == "open-loop"
                       ? "latency from the intended send time (coordinated omission corrected); "
                         "milliseconds\n"
                       : "closed loop: latency = service time; milliseconds\n");
  bool reads = false;
  for (const auto& s : steps) reads = reads || s.hits + s.misses > 0;
  out += pad("target/s", 10) + pad("achieved/s", 22) + pad("p50", 9) + pad("p90", 9) +
         pad("p99", 9) + pad("p99.9", 9) + pad("max", 10) + pad("errors", 8) +
         (pubsub ? pad("lost", 8) : pad("unsent", 8)) +
         (m.mode == "open-loop" ? pad("served/s", 11) : "") +
         (reads ? pad("hits/s", 11) + pad("misses/s", 11) : "") +
         (m.cluster ? pad("MOVED", 8) + pad("ASK", 8) : "") + "\n";
  for (const auto& s : steps) {
    const LatencySummary l = summarize_us(s.latency);
    std::string target = s.target_rate ? grouped(*s.target_rate) : "closed";
    out += pad(target, 10);
    if (!s.sustained) {
      out += pad("NS (" + grouped(s.achieved_rate) + ")", 22) + pad("-", 9) + pad("-", 9) +
             pad("-", 9) + pad("-", 9) + pad("-", 10);
    } else {
      out += pad(grouped(s.achieved_rate), 22) + pad(ms(l.p50), 9) + pad(ms(l.p90), 9) +
             pad(ms(l.p99), 9) + pad(ms(l.p999), 9) + pad(ms(l.max), 10);
    }
    out += pad(std::to_string(s.errors()), 8) +
           pad(std::to_string(pubsub ? s.lost() : s.unsent), 8) +
           (m.mode == "open-loop" ? pad(grouped(s.served_rate), 11) : "");
    if (reads) {
      out += pad(grouped(static_cast<double>(s.hits) / s.window_s), 11) +
             pad(grouped(static_cast<double>(s.misses) / s.window_s), 11);
    }
    if (m.cluster) out += pad(std::to_string(s.moved), 8) + pad(std::to_string(s.asks), 8);
    out += "\n";
  }
  for (const auto& n : m.table_notes) out += n + "\n";
  if (m.mode != "closed-loop") {
    out += "NS = not sustained: achieved (or served) < " + num(m.sustain_threshold * 100, 0) +
           "% of the target; its latency is not reported.\n";
  }
  return out;
}

std::string format_json(const Manifest& m, const std::vector<StepResult>& steps) {
  std::string o = "{\n  \"status\": {\"exit_code\": " + std::to_string(m.status.exit_code) +
                  ", \"reason\": " + json_string(m.status.reason) + "},\n  \"manifest\": {\n";
  o += "    \"kvlab_version\": " + json_string(m.kvlab_version) + ",\n";
  o += "    \"git_sha\": " + json_string(m.git_sha) + ",\n";
  o += "    \"date\": " + json_string(m.date) + ",\n";
  o += "    \"host\": " + json_string(m.host) + ",\n";
  o += "    \"cpu_model\": " + json_string(m.cpu_model) + ",\n";
  o += "    \"target\": {\"host\": " + json_string(m.target_host) +
       ", \"port\": " + std::to_string(m.target_port) + ", \"server_info\": {";
  bool first = true;
  for (const auto& [k, v] : m.server_info) {
    o += (first ? "" : ", ") + json_string(k) + ": " + json_string(v);
    first = false;
  }
  o += "}},\n    \"args\": [";
  for (std::size_t i = 0; i < m.args.size(); ++i) o += (i ? ", " : "") + json_string(m.args[i]);
  o += "],\n";
  o += "    \"mode\": " + json_string(m.mode) + ",\n";
  o += "    \"cluster\": " + std::string(m.cluster ? "true" : "false") + ",\n";
  o += "    \"workload\": " + json_string(m.workload) + ",\n";
  o += "    \"threads\": " + std::to_string(m.threads) +
       ", \"connections_per_thread\": " + std::to_string(m.connections) +
       ", \"pipeline\": " + std::to_string(m.pipeline) + ",\n";
  o += "    \"sustain_threshold\": " + num(m.sustain_threshold, 3) + ",\n";
  o += "    \"topology\": " + json_string(m.topology_summary) + ",\n";
  o += "    \"placement\": {\"policy\": " + json_string(m.placement) + ", \"thread_cpus\": [";
  for (std::size_t i = 0; i < m.thread_cpus.size(); ++i)
    o += (i ? ", " : "") + json_string(m.thread_cpus[i]);
  o += "]}\n  },\n  \"steps\": [";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepResult& s = steps[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"target_rate\": " + (s.target_rate ? num(*s.target_rate, 1) : std::string("null"));
    o += ", \"achieved_rate\": " + num(s.achieved_rate, 1);
    o += ", \"served_rate\": " + num(s.served_rate, 1);
    o += ", \"sustained\": " + std::string(s.sustained ? "true" : "false");
    o += ", \"requests\": " + std::to_string(s.requests);
    o += ", \"errors\": " + std::to_string(s.errors());
    o += ", \"errors_by_kind\": {\"error_replies\": " + std::to_string(s.error_replies) +
         ", \"timeouts\": " + std::to_string(s.timeouts) +
         ", \"disconnects\": " + std::to_string(s.disconnects) + "}";
    o += ", \"unsent\": " + std::to_string(s.unsent);
    o += ", \"hits\": " + std::to_string(s.hits) + ", \"misses\": " + std::to_string(s.misses);
    o += ", \"hits_per_s\": " + num(static_cast<double>(s.hits) / s.window_s, 1) +
         ", \"misses_per_s\": " + num(static_cast<double>(s.misses) / s.window_s, 1);
    o += ", \"replies\": " + std::to_string(s.replies);
    o += ", \"lost_requests\": " + std::to_string(s.lost_requests);
    o += ", \"first_disconnect_s\": " +
         (s.first_disconnect_s < 0 ? std::string("null") : num(s.first_disconnect_s, 3));
    o += ", \"window_s\": " + num(s.window_s, 3);
    if (m.cluster) {
      o += ", \"cluster\": {\"nodes\": " + std::to_string(s.cluster_nodes) +
           ", \"moved\": " + std::to_string(s.moved) + ", \"ask\": " + std::to_string(s.asks) +
           ", \"tryagain\": " + std::to_string(s.tryagains) + "}";
    }
    o += ",\n     \"latency_us\": " + summary_json(summarize_us(s.latency));
    o += ",\n     \"service_us\": " + summary_json(summarize_us(s.service));
    // The whole corrected histogram, HdrHistogram's compressed encoding: runs merge exactly.
    if (hdr_log_supported())
      o += ",\n     \"latency_hdr\": " + json_string(encode_compressed_base64(s.latency));
    if (i < m.step_json_extras.size() && !m.step_json_extras[i].empty())
      o += ",\n     " + m.step_json_extras[i];
    if (s.target_rate) o += ",\n     \"send_lag_us\": " + summary_json(summarize_us(s.send_lag));
    if (m.mode == "pubsub") {
      o += ",\n     \"pubsub\": {\"published\": " + std::to_string(s.published) +
           ", \"promised_deliveries\": " + std::to_string(s.promised) +
           ", \"delivered\": " + std::to_string(s.delivered) +
           ", \"lost\": " + std::to_string(s.lost()) + "}";
    }
    o += "}";
  }
  o += "\n  ]\n}\n";
  return o;
}

std::string format_csv(const Manifest& m, const std::vector<StepResult>& steps) {
  std::string o =
      "target_rate,achieved_rate,served_rate,sustained,requests,errors,error_replies,timeouts,"
      "disconnects,"
      "unsent,p50_us,p90_us,p99_us,p999_us,p9999_us,max_us,mean_us,svc_p50_us,svc_p99_us,"
      "svc_p999_us,svc_max_us,published,delivered,lost,hits,misses,lost_requests,moved,ask,"
      "kvlab_version,git_sha,mode\n";
  for (const auto& s : steps) {
    const LatencySummary l = summarize_us(s.latency), v = summarize_us(s.service);
    o += (s.target_rate ? num(*s.target_rate, 1) : std::string()) + "," + num(s.achieved_rate, 1) +
         "," + num(s.served_rate, 1) + "," + (s.sustained ? "true" : "false") + "," +
         std::to_string(s.requests) + "," + std::to_string(s.errors()) + "," +
         std::to_string(s.error_replies) + "," + std::to_string(s.timeouts) + "," +
         std::to_string(s.disconnects) + "," + std::to_string(s.unsent) + "," + num(l.p50) + "," +
         num(l.p90) + "," + num(l.p99) + "," + num(l.p999) + "," + num(l.p9999) + "," + num(l.max) +
         "," + num(l.mean) + "," + num(v.p50) + "," + num(v.p99) + "," + num(v.p999) + "," +
         num(v.max) + "," + std::to_string(s.published) + "," + std::to_string(s.delivered) + "," +
         std::to_string(s.lost()) + "," + std::to_string(s.hits) + "," + std::to_string(s.misses) +
         "," + std::to_string(s.lost_requests) + "," + m.kvlab_version + "," + m.git_sha + "," +
         m.mode + "\n";
  }
  return o;
}

}  // namespace kvlab::load
