// Formatters for a BenchReport: the terminal table (sorted, with ratios to the best and to the
// floor), JSON (the report's fields and a few documented extra ones) and flat CSV.
#include <gnu/libc-version.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "structures/common/json.hpp"
#include "tools/bench/bench.hpp"
#include "tools/bench/ycsb.hpp"

namespace kvlab::bench {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      auto v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "unknown";
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

const FloorRow* floor_for(const BenchReport& r, unsigned threads) {
  for (const auto& f : r.floor)
    if (f.threads == threads) return &f;
  return nullptr;
}

// Best valid median among map rows with the same thread count (or queues with the same shape).
double best_for(const BenchReport& r, const Measurement& m) {
  double best = 0;
  for (const auto& o : r.results) {
    if (!o.valid || (o.family == "queue") != (m.family == "queue")) continue;
    if (o.threads != m.threads || o.producers != m.producers) continue;
    best = std::max(best, o.mops);
  }
  return best;
}

// Maps then queues; thread count ascending; fastest first; invalid rows last in their group.
std::vector<const Measurement*> sorted(const BenchReport& r) {
  std::vector<const Measurement*> v;
  for (const auto& m : r.results) v.push_back(&m);
  std::stable_sort(v.begin(), v.end(), [](const Measurement* a, const Measurement* b) {
    const bool qa = a->family == "queue", qb = b->family == "queue";
    if (qa != qb) return qb;
    if (a->threads != b->threads) return a->threads < b->threads;
    if (a->producers != b->producers) return a->producers < b->producers;
    if (a->valid != b->valid) return a->valid;
    return a->mops > b->mops;
  });
  return v;
}

std::string human_bytes(std::size_t b) {
  if (b >= (std::size_t{1} << 30)) return fmt("%.1f GiB", b / 1073741824.0);
  if (b >= (std::size_t{1} << 20)) return fmt("%.1f MiB", b / 1048576.0);
  if (b >= 1024) return fmt("%.0f KiB", b / 1024.0);
  return std::to_string(b) + " B";
}

// What a reader needs to trust or reproduce a number, besides the code: how it was built and
// what the machine was set to.
struct MachineFacts {
  std::string compiler, flags, build_type, kernel, allocator, governor, thp, smt;
  unsigned cpus = 0;
};

std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return f || !line.empty() ? line : "n/a";
}

MachineFacts machine_facts() {
  MachineFacts m;
#if defined(__clang__)
  m.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  m.compiler = "gcc " __VERSION__;
#endif
  m.flags = KVLAB_BENCH_CXX_FLAGS;
  m.build_type = KVLAB_BENCH_BUILD_TYPE;
  utsname u{};
  if (::uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  // The allocator: a preloaded or linked malloc shows up among the loaded objects.
  m.allocator = std::string("glibc malloc ") + gnu_get_libc_version();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    for (const char* lib : {"libjemalloc", "libtcmalloc", "libmimalloc", "libtbbmalloc_proxy"}) {
      if (line.find(lib) != std::string::npos) {
        m.allocator = lib + std::string(" (") + line.substr(line.rfind(' ') + 1) + ")";
        break;
      }
    }
  }
  m.governor = first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  m.thp = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  const std::string smt_active = first_line("/sys/devices/system/cpu/smt/active");
  m.smt = smt_active == "1"   ? "on (" + first_line("/sys/devices/system/cpu/smt/control") + ")"
          : smt_active == "0" ? "off (" + first_line("/sys/devices/system/cpu/smt/control") + ")"
                              : "n/a";
  m.cpus = std::max(1u, std::thread::hardware_concurrency());
  return m;
}

std::string workload_line(const BenchConfig& c) {
  if (!c.ycsb.empty()) {
    return ycsb::workload_by_name(c.ycsb)->describe() + " records=" + std::to_string(c.keys) +
           " (10 x 100 B fields) duration=" + fmt("%g", c.duration_s) +
           "s reps=" + std::to_string(c.reps) + " placement=" + c.placement;
  }
  return "keys=" + std::to_string(c.keys) + " prefill=" + fmt("%.2f", c.prefill) +
         " update=" + fmt("%g", c.update_pct) + "% dist=" + c.dist.describe() +
         " key=" + std::to_string(c.key_size) + "B value=" + std::to_string(c.value_size) +
         "B duration=" + fmt("%g", c.duration_s) + "s reps=" + std::to_string(c.reps) +
         " placement=" + c.placement;
}

}  // namespace

std::string format_table(const BenchReport& r) {
  const BenchConfig& c = r.config;
  std::string out;
  char line[512];
  const auto rows = sorted(r);
  const bool any_map =
      std::any_of(rows.begin(), rows.end(), [](auto* m) { return m->family != "queue"; });
  const bool any_queue =
      std::any_of(rows.begin(), rows.end(), [](auto* m) { return m->family == "queue"; });
  if (any_map) {
    out += "maps: " + workload_line(c) + "\n";
    std::snprintf(line, sizeof line, "%-20s %-7s %3s %9s %9s %9s %6s %7s %10s %4s  %s\n", "backend",
                  "via", "thr", "Mops/s", "min", "max", "xbest", "xfloor", "footprint", "cpu%",
                  "valid / note");
    out += line;
    unsigned group = 0;
    for (const auto* m : rows) {
      if (m->family == "queue") continue;
      if (m->threads != group) {
        if (group) out += "\n";
        group = m->threads;
      }
      const FloorRow* f = floor_for(r, m->threads);
      std::string note = m->valid ? "valid" : "INVALID: " + m->invalid_reason;
      if (!m->note.empty()) note += "; " + m->note;
      if (m->valid) {
        const double best = best_for(r, *m);
        std::snprintf(
            line, sizeof line, "%-20s %-7s %3u %9.3f %9.3f %9.3f %6.2f %7s %10s %4.0f  %s\n",
            m->backend.c_str(), m->via_adapter ? "adapter" : "direct", m->threads, m->mops / 1e6,
            m->mops_min / 1e6, m->mops_max / 1e6, best > 0 ? m->mops / best : 0.0,
            f && f->mops > 0 ? fmt("%.3f", m->mops / f->mops).c_str() : "-",
            human_bytes(m->footprint_bytes).c_str(), m->cpu_share * 100, note.c_str());
      } else {
        std::snprintf(line, sizeof line, "%-20s %-7s %3u %9s %9s %9s %6s %7s %10s %4s  %s\n",
                      m->backend.c_str(), m->via_adapter ? "adapter" : "direct", m->threads, "-",
                      "-", "-", "-", "-", "-", "-", note.c_str());
      }
      out += line;
    }
    if (!r.floor.empty()) {
      out += "\nfloor (array of " + human_bytes(r.floor.front().array_bytes) +
             " = largest table footprint; " + "same threads):\n";
      std::snprintf(line, sizeof line, "%-20s %3s %9s %9s %9s %4s\n", "variant", "thr", "Mops/s",
                    "min", "max", "cpu%");
      out += line;
      for (const auto& f : r.floor) {
        std::snprintf(line, sizeof line, "%-20s %3u %9.3f %9.3f %9.3f %4.0f\n", "random-read",
                      f.threads, f.mops / 1e6, f.mops_min / 1e6, f.mops_max / 1e6,
                      f.cpu_share * 100);
        out += line;
        std::snprintf(line, sizeof line, "%-20s %3u %9.3f %9.3f %9.3f %4.0f\n", "pointer-chase",
                      f.threads, f.chase_mops / 1e6, f.chase_mops_min / 1e6, f.chase_mops_max / 1e6,
                      f.chase_cpu_share * 100);
        out += line;
      }
      out +=
          "xbest = median / best median at the same thread count; xfloor = median / floor "
          "random-read at the same thread count; cpu% = CPU time / (wall time x threads)\n";
    }
  }
  if (any_queue) {
    if (any_map) out += "\n";
    out += "queues: items=" + std::to_string(c.items) +
           " per repetition, reps=" + std::to_string(c.reps) +
           ", capacity (bounded)=" + std::to_string(c.queue_capacity) + "\n";
    std::snprintf(line, sizeof line, "%-20s %7s %9s %9s %9s %6s %4s  %s\n", "backend", "P/C",
                  "Mops/s", "min", "max", "xbest", "cpu%", "valid / note");
    out += line;
    for (const auto* m : rows) {
      if (m->family != "queue") continue;
      std::string note = m->valid ? "valid" : "INVALID: " + m->invalid_reason;
      if (!m->note.empty()) note += "; " + m->note;
      const std::string pc = std::to_string(m->producers) + "/" + std::to_string(m->consumers);
      if (m->valid) {
        const double best = best_for(r, *m);
        std::snprintf(line, sizeof line, "%-20s %7s %9.3f %9.3f %9.3f %6.2f %4.0f  %s\n",
                      m->backend.c_str(), pc.c_str(), m->mops / 1e6, m->mops_min / 1e6,
                      m->mops_max / 1e6, best > 0 ? m->mops / best : 0.0, m->cpu_share * 100,
                      note.c_str());
      } else {
        std::snprintf(line, sizeof line, "%-20s %7s %9s %9s %9s %6s %4s  %s\n", m->backend.c_str(),
                      pc.c_str(), "-", "-", "-", "-", "-", note.c_str());
      }
      out += line;
    }
  }
  if (c.counters) {
    out += "\nperf events per operation (totals over every repetition / operations):\n";
    std::snprintf(line, sizeof line, "%-20s %3s %9s %9s %5s %8s %8s %8s %10s %8s %8s\n", "backend",
                  "thr", "cycles", "instr", "IPC", "LLC-miss", "L1D-miss", "br-miss", "task-ns",
                  "ctx-sw", "faults");
    out += line;
    auto cell = [](double v, const char* f) { return v < 0 ? std::string("-") : fmt(f, v); };
    for (const auto* m : rows) {
      const double ops = static_cast<double>(m->ops);
      const auto& k = m->counters;
      std::snprintf(
          line, sizeof line, "%-20s %3u %9s %9s %5s %8s %8s %8s %10s %8s %8s\n", m->backend.c_str(),
          m->threads, cell(k.per_op(Event::kCycles, ops), "%.1f").c_str(),
          cell(k.per_op(Event::kInstructions, ops), "%.1f").c_str(), cell(k.ipc(), "%.2f").c_str(),
          cell(k.per_op(Event::kLlcMisses, ops), "%.3f").c_str(),
          cell(k.per_op(Event::kL1dMisses, ops), "%.3f").c_str(),
          cell(k.per_op(Event::kBranchMisses, ops), "%.3f").c_str(),
          cell(k.per_op(Event::kTaskClockNs, ops), "%.1f").c_str(),
          cell(k.per_op(Event::kContextSwitches, ops), "%.2e").c_str(),
          cell(k.per_op(Event::kPageFaults, ops), "%.2e").c_str());
      out += line;
    }
    if (!r.counters_note.empty()) out += "note: " + r.counters_note + "\n";
  }
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  if (r.interrupted)
    out += "interrupted: the runs above finished; the one running at the signal was dropped\n";
  return out;
}

std::string format_json(const BenchReport& r) {
  const BenchConfig& c = r.config;
  const MachineFacts mf = machine_facts();
  std::string o = "{\n  \"manifest\": {\n";
  o += "    \"interrupted\": " + std::string(r.interrupted ? "true" : "false") + ",\n";
  o += "    \"build\": {\"compiler\": " + json_string(mf.compiler) +
       ", \"flags\": " + json_string(mf.flags) + ", \"build_type\": " + json_string(mf.build_type) +
       "},\n";
  o += "    \"machine\": {\"kernel\": " + json_string(mf.kernel) +
       ", \"allocator\": " + json_string(mf.allocator) +
       ", \"cpu_governor\": " + json_string(mf.governor) +
       ", \"transparent_hugepages\": " + json_string(mf.thp) + ", \"smt\": " + json_string(mf.smt) +
       ", \"cpus\": " + std::to_string(mf.cpus) +
       ", \"other_cpu_load\": " + json_num(r.other_cpu_load) + "},\n";
  o += "    \"workload\": " + json_string(c.ycsb.empty() ? "maps" : c.ycsb) + ",\n";
  if (c.counters) o += "    \"counters_note\": " + json_string(r.counters_note) + ",\n";
  o += "    \"kvlab_version\": " + json_string(KVLAB_VERSION) + ",\n";
  o += "    \"git_sha\": " + json_string(KVLAB_GIT_SHA) + ",\n";
  o += "    \"date\": " + json_string(utc_now()) + ",\n";
  o += "    \"host\": " + json_string(hostname()) + ",\n";
  o += "    \"cpu_model\": " + json_string(cpu_model()) + ",\n";
  o += "    \"topology_summary\": " + json_string(r.topology_summary) + ",\n";
  o += "    \"placement\": " + json_string(c.placement) + ",\n";
  o += "    \"loadavg\": [" + json_string(r.loadavg_before) + ", " + json_string(r.loadavg_after) +
       "],\n";
  o += "    \"placement_plan\": [";
  for (std::size_t i = 0; i < r.placement_notes.size(); ++i)
    o += (i ? ", " : "") + json_string(r.placement_notes[i]);
  o += "],\n    \"args\": [";
  for (std::size_t i = 0; i < c.argv.size(); ++i) o += (i ? ", " : "") + json_string(c.argv[i]);
  o += "],\n    \"footprint_method\": " + json_string(r.footprint_method) + ",\n";
  o += "    \"value_type\": " +
       json_string(c.value_size <= 8 ? "std::uint64_t" : "std::string of value_size bytes") + ",\n";
  o += "    \"warnings\": [";
  for (std::size_t i = 0; i < r.warnings.size(); ++i)
    o += (i ? ", " : "") + json_string(r.warnings[i]);
  o += "]\n  },\n  \"results\": [";
  bool first = true;
  for (const auto* m : sorted(r)) {
    o += first ? "\n" : ",\n";
    first = false;
    const bool q = m->family == "queue";
    o += "    {\"backend\": " + json_string(m->backend) +
         ", \"family\": " + json_string(m->family) +
         ", \"threads\": " + std::to_string(m->threads) + ", \"workload\": {";
    if (q) {
      o += "\"keys\": null, \"update_pct\": null, \"dist\": null, \"key_size\": null, "
           "\"value_size\": 8, \"duration_s\": null, \"producers\": " +
           std::to_string(m->producers) + ", \"consumers\": " + std::to_string(m->consumers) +
           ", \"items\": " + std::to_string(c.items) +
           ", \"capacity\": " + std::to_string(c.queue_capacity);
    } else {
      if (!c.ycsb.empty()) o += "\"ycsb\": " + json_string(c.ycsb) + ", ";
      o += "\"keys\": " + std::to_string(c.keys) + ", \"update_pct\": " + json_num(c.update_pct) +
           ", \"dist\": " + json_string(c.dist.describe()) +
           ", \"key_size\": " + std::to_string(c.key_size) +
           ", \"value_size\": " + std::to_string(c.value_size) +
           ", \"duration_s\": " + json_num(c.duration_s) + ", \"prefill\": " + json_num(c.prefill) +
           ", \"epoch_mode\": " + std::string(c.epoch_guards ? "\"guard\"" : "\"qsbr\"") +
           ", \"batch\": " + std::to_string(c.batch);
    }
    o += "}, ";
    if (m->valid) {
      o += "\"mops\": " + json_num(m->mops / 1e6) +
           ", \"mops_min\": " + json_num(m->mops_min / 1e6) +
           ", \"mops_max\": " + json_num(m->mops_max / 1e6);
    } else {
      o += "\"mops\": null, \"mops_min\": null, \"mops_max\": null";
    }
    o += ", \"reps\": " + std::to_string(m->reps) + ", \"valid\": " + (m->valid ? "true" : "false");
    o += ", \"rep_mops\": [";
    for (std::size_t i = 0; i < m->rep_values.size(); ++i)
      o += (i ? ", " : "") + json_num(m->rep_values[i] / 1e6);
    o += "]";
    o += ", \"via_adapter\": " + std::string(m->via_adapter ? "true" : "false");
    o += ", \"cpu_share\": " + json_num(m->cpu_share);
    o += ", \"note\": " + json_string(m->note);
    if (!m->valid) o += ", \"invalid_reason\": " + json_string(m->invalid_reason);
    if (!q) o += ", \"footprint_bytes\": " + std::to_string(m->footprint_bytes);
    o += ", \"ops_validated\": " + std::to_string(m->ops);
    if (c.counters) {
      o += ", \"counters_per_op\": " + counters_json(m->counters, static_cast<double>(m->ops));
    }
    o += "}";
  }
  o += "\n  ],\n  \"floor\": [";
  first = true;
  for (const auto& f : r.floor) {
    o += first ? "\n" : ",\n";
    first = false;
    o += "    {\"threads\": " + std::to_string(f.threads) +
         ", \"mops\": " + json_num(f.mops / 1e6) + ", \"mops_min\": " + json_num(f.mops_min / 1e6) +
         ", \"mops_max\": " + json_num(f.mops_max / 1e6) +
         ", \"chase_mops\": " + json_num(f.chase_mops / 1e6) +
         ", \"chase_mops_min\": " + json_num(f.chase_mops_min / 1e6) +
         ", \"chase_mops_max\": " + json_num(f.chase_mops_max / 1e6) +
         ", \"array_bytes\": " + std::to_string(f.array_bytes) +
         ", \"reps\": " + std::to_string(f.reps) + ", \"cpu_share\": " + json_num(f.cpu_share) +
         ", \"chase_cpu_share\": " + json_num(f.chase_cpu_share) + "}";
  }
  o += first ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

std::string format_csv(const BenchReport& r) {
  const BenchConfig& c = r.config;
  std::string o;
  o += "# kvlab_version=" + std::string(KVLAB_VERSION) + " git_sha=" + KVLAB_GIT_SHA +
       " date=" + utc_now() + " host=" + hostname() + "\n";
  o += "# cpu_model=" + cpu_model() + "\n# topology_summary=" + r.topology_summary + "\n";
  o += "# placement=" + c.placement + "\n# loadavg=" + r.loadavg_before + " -> " + r.loadavg_after +
       "\n# args=";
  for (const auto& a : c.argv) o += a + " ";
  o += "\n";
  o += "backend,family,via_adapter,threads,producers,consumers,keys,prefill,update_pct,dist,"
       "key_size,value_size,duration_s,items,mops,mops_min,mops_max,reps,valid,ratio_best,"
       "ratio_floor,footprint_bytes,cpu_share,note,invalid_reason\n";
  for (const auto* m : sorted(r)) {
    const bool q = m->family == "queue";
    const FloorRow* f = q ? nullptr : floor_for(r, m->threads);
    const double best = best_for(r, *m);
    o += csv_field(m->backend) + "," + m->family + "," + (m->via_adapter ? "true" : "false") + "," +
         std::to_string(m->threads) + "," + std::to_string(m->producers) + "," +
         std::to_string(m->consumers) + ",";
    if (q) {
      o += ",,,,,8,," + std::to_string(c.items) + ",";
    } else {
      o += std::to_string(c.keys) + "," + json_num(c.prefill) + "," + json_num(c.update_pct) + "," +
           c.dist.describe() + "," + std::to_string(c.key_size) + "," +
           std::to_string(c.value_size) + "," + json_num(c.duration_s) + ",,";
    }
    if (m->valid) {
      o += json_num(m->mops / 1e6) + "," + json_num(m->mops_min / 1e6) + "," +
           json_num(m->mops_max / 1e6) + ",";
    } else {
      o += ",,,";
    }
    o += std::to_string(m->reps) + "," + (m->valid ? "true" : "false") + ",";
    o += (m->valid && best > 0 ? json_num(m->mops / best) : "") + ",";
    o += (m->valid && f && f->mops > 0 ? json_num(m->mops / f->mops) : "") + ",";
    o += (q ? "" : std::to_string(m->footprint_bytes)) + "," + json_num(m->cpu_share) + "," +
         csv_field(m->note) + "," + csv_field(m->invalid_reason) + "\n";
  }
  for (const auto& f : r.floor) {
    for (const bool chase : {false, true}) {
      o += std::string(chase ? "floor/pointer-chase" : "floor/random-read") + ",floor,false," +
           std::to_string(f.threads) + ",0,0,,,,,,,,,";
      o += json_num((chase ? f.chase_mops : f.mops) / 1e6) + "," +
           json_num((chase ? f.chase_mops_min : f.mops_min) / 1e6) + "," +
           json_num((chase ? f.chase_mops_max : f.mops_max) / 1e6) + "," + std::to_string(f.reps) +
           ",true,,," + std::to_string(f.array_bytes) + "," +
           json_num(chase ? f.chase_cpu_share : f.cpu_share) + ",,\n";
    }
  }
  return o;
}

}  // namespace kvlab::bench
