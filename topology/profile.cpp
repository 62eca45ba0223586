// Core-to-core latency measurement (see profile.hpp).
//
// Protocol: a shared counter on its own cache line. The initiator (pinned to a) writes an odd
// value and spins until the responder (pinned to b) answers with the next even value; each write
// moves the line to the writer's core, so one round trip = two line transfers. The initiator
// times a batch of round trips with steady_clock; one-way latency = batch time / (2 * round trips).
#include "topology/profile.hpp"

#include <hwloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "topology/json_writer.hpp"

namespace kvlab::topo {

namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The bounced line, padded to its own cache line so nothing else shares it.
struct alignas(64) PingPong {
  std::atomic<std::uint64_t> value{0};
  std::atomic<bool> stop{false};
  char pad[64 - sizeof(std::atomic<std::uint64_t>) - sizeof(std::atomic<bool>)];
};
static_assert(sizeof(PingPong) == 64, "the ping-pong line must fill exactly one cache line");

const char* const kClasses[] = {"smt_sibling", "same_l3",      "same_die",
                                "same_numa",   "same_package", "other_package"};

// Measures one pair. Returns measured=false with *error set when binding fails.
PairLatency measure_pair(const Model& m, unsigned a, unsigned b, const ProfileOptions& o,
                         Clock::time_point deadline, std::string* error) {
  PairLatency result;
  result.a = a;
  result.b = b;
  PingPong line;
  std::atomic<int> ready{0};
  std::string error_b;
  const unsigned batches = std::max(1u, o.batches);
  const std::uint64_t per_batch = std::max(1u, o.iters / batches);

  std::thread responder([&] {
    if (!apply(m, {1, {b}, {}, ""}, &error_b)) {
      // Relaxed is enough for the flags below: the initiator only needs to see them eventually,
      // and the join() publishes error_b.
      line.stop.store(true, std::memory_order_relaxed);
      ready.fetch_add(1, std::memory_order_release);
      return;
    }
    ready.fetch_add(1, std::memory_order_release);
    std::uint64_t expect = 1;
    while (!line.stop.load(std::memory_order_relaxed)) {
      // Acquire pairs with the initiator's release store of the odd value.
      if (line.value.load(std::memory_order_acquire) == expect) {
        // Release pairs with the initiator's acquire load that waits for the even answer.
        line.value.store(expect + 1, std::memory_order_release);
        expect += 2;
      } else {
        cpu_relax();
      }
    }
  });

  std::string error_a;
  std::vector<double> samples;
  // The initiator runs on a helper thread too, so the caller's own binding is left alone.
  std::thread initiator([&] {
    const bool bound = apply(m, {0, {a}, {}, ""}, &error_a);
    while (ready.load(std::memory_order_acquire) == 0) cpu_relax();
    if (!bound || line.stop.load(std::memory_order_relaxed)) {
      line.stop.store(true, std::memory_order_relaxed);
      return;
    }
    std::uint64_t next = 1;
    for (unsigned batch = 0; batch < batches && Clock::now() < deadline; ++batch) {
      const auto t0 = Clock::now();
      bool complete = true;
      for (std::uint64_t i = 0; i < per_batch; ++i) {
        line.value.store(next, std::memory_order_release);
        while (line.value.load(std::memory_order_acquire) != next + 1) cpu_relax();
        next += 2;
        // A preempted responder can stall us for a scheduler tick; bound the damage.
        if ((i & 63) == 63 && Clock::now() >= deadline) {
          complete = false;
          break;
        }
      }
      const auto t1 = Clock::now();
      if (!complete) break;
      samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                        (2.0 * static_cast<double>(per_batch)));
    }
    line.stop.store(true, std::memory_order_relaxed);
  });
  initiator.join();
  responder.join();
  if (!error_a.empty() || !error_b.empty()) {
    if (error) *error = !error_a.empty() ? error_a : error_b;
    return result;
  }
  if (samples.empty()) return result;
  std::sort(samples.begin(), samples.end());
  result.measured = true;
  result.batches = static_cast<unsigned>(samples.size());
  result.min_ns = samples.front();
  result.max_ns = samples.back();
  result.median_ns = samples[samples.size() / 2];
  result.p10_ns = samples[samples.size() / 10];
  result.p90_ns = samples[samples.size() * 9 / 10];
  return result;
}

std::string why_unavailable(const Model& m, const std::string& cls) {
  if (cls == "smt_sibling")
    return m.smt < 2 ? "no SMT (1 PU per core)" : "no two allowed PUs share a core";
  if (cls == "same_l3")
    return m.l3.empty() ? "no L3 information" : "no two allowed cores share an L3";
  if (cls == "same_die") {
    return m.dies == 0 ? "hwloc reports no dies" : "no two allowed cores share a die but not an L3";
  }
  if (cls == "same_numa") return "no two allowed cores share a NUMA node but not a die/L3";
  if (cls == "same_package") return "no two allowed cores share a package but not a NUMA node";
  return m.packages < 2 ? "single package" : "no allowed cores in two packages";
}

}  // namespace

std::string pair_class(const Model& m, unsigned a, unsigned b) {
  const int ca = m.core_of_pu(a);
  const int cb = m.core_of_pu(b);
  if (ca < 0 || cb < 0) return "other_package";
  if (ca == cb) return "smt_sibling";
  const CoreInfo& x = m.cores[static_cast<std::size_t>(ca)];
  const CoreInfo& y = m.cores[static_cast<std::size_t>(cb)];
  if (x.l3 >= 0 && x.l3 == y.l3) return "same_l3";
  if (x.die >= 0 && x.die == y.die) return "same_die";
  if (x.numa >= 0 && x.numa == y.numa) return "same_numa";
  if (x.package >= 0 && x.package == y.package) return "same_package";
  return "other_package";
}

ProfileResult profile(const Model& m, const ProfileOptions& o) {
  ProfileResult r;
  if (!m.this_system) {
    r.error = "profile measures this machine only; the topology comes from " +
              source_kind_name(m.kind) + " '" + m.source + "'";
    return r;
  }
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.max_seconds));
  const std::vector<unsigned>& cpus = m.allowed_pus;
  if (cpus.size() < 2) {
    r.error =
        "need at least two allowed CPUs to bounce a cache line (allowed: " + format_cpu_list(cpus) +
        ")";
    return r;
  }
  std::string error;
  if (o.matrix) {
    r.cpus = cpus;
    r.matrix_ns.assign(cpus.size(), std::vector<std::optional<double>>(cpus.size()));
    bool timed_out = false;
    for (std::size_t i = 0; i < cpus.size() && !error.size(); ++i) {
      r.matrix_ns[i][i] = 0.0;
      for (std::size_t k = i + 1; k < cpus.size(); ++k) {
        if (Clock::now() >= deadline) {
          timed_out = true;
          break;
        }
        const PairLatency p = measure_pair(m, cpus[i], cpus[k], o, deadline, &error);
        if (!error.empty()) break;
        if (p.measured) r.matrix_ns[i][k] = r.matrix_ns[k][i] = p.median_ns;
      }
    }
    if (timed_out)
      r.notes.push_back("time limit reached: some pairs are not measured (raise --max-seconds)");
  } else {
    for (const char* cls : kClasses) {
      ClassLatency c;
      c.name = cls;
      // Representative pair: the first pair (in OS order) of this class.
      for (std::size_t i = 0; i < cpus.size() && !c.available; ++i) {
        for (std::size_t k = i + 1; k < cpus.size(); ++k) {
          if (pair_class(m, cpus[i], cpus[k]) == cls) {
            c.available = true;
            c.pair.a = cpus[i];
            c.pair.b = cpus[k];
            break;
          }
        }
      }
      if (!c.available) {
        c.note = "cannot measure: " + why_unavailable(m, cls);
      } else if (Clock::now() >= deadline) {
        c.note = "time limit reached before this class";
      } else {
        c.pair = measure_pair(m, c.pair.a, c.pair.b, o, deadline, &error);
        if (!error.empty()) break;
        if (!c.pair.measured) c.note = "time limit reached during this class";
      }
      r.classes.push_back(std::move(c));
    }
  }
  if (!error.empty()) {
    r.error = error;
    return r;
  }
  r.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (m.is_vm) {
    r.notes.push_back(
        "virtual machine: vCPUs float over host cores, so a 'same L3' pair may cross host CCXs; "
        "numbers include hypervisor scheduling noise");
  }
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw <= 2) {
    r.notes.push_back(
        "only " + std::to_string(hw) +
        " CPUs: the two spinning threads take the whole machine, so other "
        "load preempts them; medians over batches damp that, but treat numbers as upper bounds");
  }
  r.ok = true;
  return r;
}

std::string profile_text(const Model& m, const ProfileResult& r) {
  std::string out = "Core-to-core latency (one-way, cache line bounce) on " + m.summary() + "\n";
  char buf[256];
  if (!r.classes.empty()) {
    std::snprintf(buf, sizeof buf, "  %-14s %-9s %10s %10s %10s %s\n", "class", "pair", "median ns",
                  "p10 ns", "p90 ns", "batches / note");
    out += buf;
    for (const ClassLatency& c : r.classes) {
      const std::string pair =
          c.available ? std::to_string(c.pair.a) + "<->" + std::to_string(c.pair.b) : "-";
      if (c.pair.measured) {
        std::snprintf(buf, sizeof buf, "  %-14s %-9s %10.1f %10.1f %10.1f %u\n", c.name.c_str(),
                      pair.c_str(), c.pair.median_ns, c.pair.p10_ns, c.pair.p90_ns, c.pair.batches);
      } else {
        std::snprintf(buf, sizeof buf, "  %-14s %-9s %10s %10s %10s %s\n", c.name.c_str(),
                      pair.c_str(), "-", "-", "-", c.note.c_str());
      }
      out += buf;
    }
  } else {
    out += "  PU  ";
    for (const unsigned c : r.cpus) {
      std::snprintf(buf, sizeof buf, "%7u", c);
      out += buf;
    }
    out += "\n";
    for (std::size_t i = 0; i < r.cpus.size(); ++i) {
      std::snprintf(buf, sizeof buf, "  %-4u", r.cpus[i]);
      out += buf;
      for (const auto& v : r.matrix_ns[i]) {
        if (v) {
          std::snprintf(buf, sizeof buf, "%7.1f", *v);
        } else {
          std::snprintf(buf, sizeof buf, "%7s", "-");
        }
        out += buf;
      }
      out += "\n";
    }
  }
  std::snprintf(buf, sizeof buf, "Elapsed %.2f s\n", r.elapsed_s);
  out += buf;
  for (const std::string& n : r.notes) out += "Note: " + n + "\n";
  return out;
}

std::string profile_json(const Model& m, const ProfileResult& r, const ProfileOptions& o) {
  JsonWriter j;
  j.begin_object();
  j.field("schema", "topology-profile/1");
  j.field("topology_summary", m.summary());
  j.field("mode", o.matrix ? "matrix" : "classes");
  j.field("iters", o.iters);
  j.field("batches", o.batches);
  j.field("max_seconds", o.max_seconds);
  j.field("elapsed_s", r.elapsed_s);
  j.field("unit", "ns one-way");
  if (!o.matrix) {
    j.key("classes").begin_array();
    for (const ClassLatency& c : r.classes) {
      j.begin_object();
      j.field("class", c.name);
      j.field("available", c.available);
      j.field("measured", c.pair.measured);
      if (c.available) j.field("cpus", std::to_string(c.pair.a) + "," + std::to_string(c.pair.b));
      if (c.pair.measured) {
        j.field("median_ns", c.pair.median_ns)
            .field("p10_ns", c.pair.p10_ns)
            .field("p90_ns", c.pair.p90_ns);
        j.field("min_ns", c.pair.min_ns).field("max_ns", c.pair.max_ns);
        j.field("batches", c.pair.batches);
      } else {
        j.field("note", c.note);
      }
      j.end_object();
    }
    j.end_array();
  } else {
    j.key("cpus").begin_array(true);
    for (const unsigned c : r.cpus) j.value(c);
    j.end_array();
    j.key("matrix_ns").begin_array();
    for (const auto& row : r.matrix_ns) {
      j.begin_array(true);
      for (const auto& v : row) {
        if (v) {
          j.value(*v);
        } else {
          j.null();
        }
      }
      j.end_array();
    }
    j.end_array();
  }
  j.key("notes").begin_array();
  for (const std::string& n : r.notes) j.value(n);
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

bool export_profile_xml(const Model& m, const ProfileResult& r, const std::string& path,
                        std::string* error) {
  if (!m.this_system) {
    if (error) *error = "export needs the live topology";
    return false;
  }
  std::vector<unsigned> cpus = r.cpus.empty() ? m.allowed_pus : r.cpus;
  const std::size_t n = cpus.size();
  std::vector<hwloc_uint64_t> values(n * n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      if (i == k) continue;
      std::optional<double> v;
      if (!r.matrix_ns.empty()) {
        v = r.matrix_ns[i][k];
      } else {
        const std::string cls = pair_class(m, cpus[i], cpus[k]);
        for (const ClassLatency& c : r.classes) {
          if (c.name == cls && c.pair.measured) v = c.pair.median_ns;
        }
      }
      if (!v) {
        if (error)
          *error = "no latency for CPUs " + std::to_string(cpus[i]) + " and " +
                   std::to_string(cpus[k]) + ": cannot write a full matrix";
        return false;
      }
      values[i * n + k] = static_cast<hwloc_uint64_t>(std::max(1.0, *v + 0.5));
    }
  }
  hwloc_topology_t copy = nullptr;
  if (hwloc_topology_dup(&copy, m.hw.get()) != 0) {
    if (error) *error = "hwloc_topology_dup failed";
    return false;
  }
  std::vector<hwloc_obj_t> objs;
  for (const unsigned c : cpus) objs.push_back(hwloc_get_pu_obj_by_os_index(copy, c));
  bool ok = std::none_of(objs.begin(), objs.end(), [](hwloc_obj_t o) { return o == nullptr; });
  if (ok) {
    hwloc_distances_add_handle_t h = hwloc_distances_add_create(
        copy, "CoreToCoreLatencyNs",
        HWLOC_DISTANCES_KIND_FROM_USER | HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0);
    ok = h != nullptr &&
         hwloc_distances_add_values(copy, h, static_cast<unsigned>(n), objs.data(), values.data(),
                                    0) == 0 &&
         hwloc_distances_add_commit(copy, h, 0) == 0;
  }
  if (ok) ok = hwloc_topology_export_xml(copy, path.c_str(), 0) == 0;
  hwloc_topology_destroy(copy);
  if (!ok && error) *error = "hwloc could not add the matrix or write '" + path + "'";
  return ok;
}

}  // namespace kvlab::topo
