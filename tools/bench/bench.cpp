// The kvlab bench driver: knob parsing helpers, the run order (maps, floor, queues) and the
// bookkeeping of the report. Formatting lives in output.cpp.
#include "tools/bench/bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <utility>

#include "structures/registry.hpp"
#include "tools/bench/backend_table.hpp"
#include "tools/bench/floor.hpp"
#include "tools/bench/harness.hpp"
#include "topology/placement.hpp"

namespace kvlab::bench {

std::string KeyDist::describe() const {
  if (!zipf) return "uniform";
  char buf[32];
  std::snprintf(buf, sizeof buf, "zipf:%g", theta);
  return buf;
}

bool parse_dist(const std::string& text, KeyDist* out, std::string* error) {
  if (text == "uniform") {
    *out = KeyDist{};
    return true;
  }
  if (text == "zipf") {
    *out = KeyDist{true, 0.99};
    return true;
  }
  if (text.rfind("zipf:", 0) == 0) {
    char* end = nullptr;
    const double theta = std::strtod(text.c_str() + 5, &end);
    if (end != text.c_str() + 5 && *end == '\0' && theta > 0 && std::isfinite(theta)) {
      *out = KeyDist{true, theta};
      return true;
    }
  }
  *error = "--dist: expected uniform, zipf or zipf:THETA with THETA > 0, got '" + text + "'";
  return false;
}

bool parse_duration(const std::string& text, double* seconds) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string unit(end);
  if (unit == "ms") {
    v /= 1000;
  } else if (unit == "m" || unit == "min") {
    v *= 60;
  } else if (!(unit.empty() || unit == "s")) {
    return false;
  }
  if (!(v > 0) || !std::isfinite(v)) return false;
  *seconds = v;
  return true;
}

bool parse_thread_list(const std::string& text, std::vector<unsigned>* out) {
  std::vector<unsigned> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    char* end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 1 || n > 4096) return false;
    v.push_back(static_cast<unsigned>(n));
    pos = comma + 1;
  }
  if (v.empty()) return false;
  *out = std::move(v);
  return true;
}

bool validate_config(const BenchConfig& c, std::string* error) {
  auto fail = [&](std::string msg) {
    *error = std::move(msg);
    return false;
  };
  if (c.keys < 1) return fail("--keys must be >= 1");
  if (!(c.prefill >= 0 && c.prefill <= 1)) return fail("--prefill must be in [0, 1]");
  if (!(c.update_pct >= 0 && c.update_pct <= 100)) return fail("--update must be in [0, 100]");
  if (c.key_size < 1 || c.key_size > 250) return fail("--key-size must be in [1, 250]");
  if (c.key_size < 8 && c.keys > (std::uint64_t{1} << (8 * c.key_size)))
    return fail("--key-size " + std::to_string(c.key_size) + " cannot encode " +
                std::to_string(c.keys) + " distinct keys");
  if (c.value_size < 1) return fail("--value-size must be >= 1");
  if (c.reps < 1) return fail("--reps must be >= 1");
  if (c.batch < 1 || c.batch > 32) return fail("--batch must be in [1, 32]");
  if (c.threads.empty()) return fail("--threads is empty");
  if (c.items < 1 || c.items >= (std::uint64_t{1} << 40))
    return fail("--items must be in [1, 2^40)");
  if (c.producers > 4096 || c.consumers > 4096) return fail("--producers/--consumers too large");
  return true;
}

namespace {

// (producers, consumers) pairs for the queue runs: the explicit ones, else half/half of each
// configured thread count (at least one of each).
std::vector<std::pair<unsigned, unsigned>> queue_shapes(const BenchConfig& c) {
  std::vector<std::pair<unsigned, unsigned>> out;
  if (c.producers || c.consumers) {
    out.emplace_back(std::max(1u, c.producers ? c.producers : c.consumers),
                     std::max(1u, c.consumers ? c.consumers : c.producers));
    return out;
  }
  for (const unsigned t : c.threads) {
    const unsigned p = std::max(1u, t / 2), q = std::max(1u, t - p);
    if (std::find(out.begin(), out.end(), std::make_pair(p, q)) == out.end())
      out.emplace_back(p, q);
  }
  return out;
}

std::string read_loadavg() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  if (!f) return "";
  char buf[128] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  std::string s = ok ? buf : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

const detail::BenchEntry* find_entry(std::string_view name) {
  for (const auto* e : detail::bench_entries())
    if (e->name == name) return e;
  return nullptr;
}

}  // namespace

bool run_bench(const BenchConfig& config, BenchReport* report, std::string* error) {
  if (!validate_config(config, error)) return false;
  const auto selected = select_backends(config.backends, error);
  if (selected.empty()) {
    if (error->empty()) *error = "no backend selected by '" + config.backends + "'";
    return false;
  }
  report->config = config;
  report->loadavg_before = read_loadavg();
  detail::RunEnv env(report->config);
  if (config.placement != "none") {
    // Plan every thread count up front: a bad policy is a usage error, not an invalid row.
    std::set<unsigned> counts(config.threads.begin(), config.threads.end());
    for (const auto& [p, q] : queue_shapes(config)) counts.insert(p + q);
    for (const unsigned n : counts) {
      const auto& plan = env.plan(n);
      if (!plan.ok) {
        *error = "--placement " + config.placement + " for " + std::to_string(n) +
                 " threads: " + plan.error;
        return false;
      }
    }
  }

  std::vector<const detail::BenchEntry*> maps, queues;
  for (const auto* t : selected) {
    const auto* e = find_entry(t->name);
    if (!e) {
      Measurement m;
      m.backend = std::string(t->name);
      m.family = std::string(t->family);
      m.invalid_reason = "registered but not built into kvlab bench (tools/bench/meson.build)";
      report->results.push_back(m);
      report->warnings.push_back(m.backend + ": " + m.invalid_reason);
      continue;
    }
    (e->queue ? queues : maps).push_back(e);
  }
  const auto shapes = queue_shapes(config);
  const unsigned per_map =
      static_cast<unsigned>(config.threads.size()) * (config.via_adapter ? 2u : 1u);
  const bool floor = config.floor && !maps.empty();
  env.set_total(static_cast<unsigned>(maps.size()) * per_map +
                (floor ? 2u * static_cast<unsigned>(config.threads.size()) : 0u) +
                static_cast<unsigned>(queues.size() * shapes.size()));

  for (const auto* e : maps) {
    auto rows = e->run_map(env);
    for (auto& r : rows) report->results.push_back(std::move(r));
  }
  if (floor) report->floor = detail::run_floor(env, env.max_footprint());
  for (const auto* e : queues) {
    for (const auto& [p, q] : shapes) {
      auto rows = e->run_queue(env, p, q);
      for (auto& r : rows) report->results.push_back(std::move(r));
    }
  }
  report->footprint_method =
      "largest table footprint over all map runs; per table: growth of heap bytes in use "
      "(glibc mallinfo2, all arenas) or of RSS, whichever is larger, from before construction to "
      "after the prefill and again after the run; floor array = max(that, 1 MiB)";
  report->loadavg_after = read_loadavg();
  double lowest_share = 1;
  for (const auto& m : report->results)
    if (m.valid && m.cpu_share > 0) lowest_share = std::min(lowest_share, m.cpu_share);
  if (lowest_share < 0.8) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "busy machine: in some runs the benchmark threads got only %.0f%% of their CPU "
                  "time (see cpu%%; loadavg %s -> %s); rates are then lower and noisier than on an "
                  "idle machine",
                  lowest_share * 100, report->loadavg_before.c_str(),
                  report->loadavg_after.c_str());
    report->warnings.push_back(buf);
  }
  report->topology_summary = topo::live_topology_summary();
  report->placement_notes = env.placement_notes();
  for (auto& w : env.warnings()) report->warnings.push_back(w);
  return true;
}

}  // namespace kvlab::bench
