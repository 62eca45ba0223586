// Binding threads (and memory) on the live machine, and the live-machine entry points of
// placement.hpp.
//
// Binding goes through hwloc (hwloc_set_cpubind / hwloc_set_membind) and is then verified twice:
// with hwloc_get_cpubind and with the kernel's own sched_getaffinity, because hwloc silently does
// nothing when its topology is not this machine (HWLOC_XMLFILE, synthetic input).
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>

#include "topology/topology.hpp"

namespace kvlab::topo {

namespace {

std::vector<unsigned> kernel_affinity() {
  std::vector<unsigned> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

std::string errno_text() {
  return std::strerror(errno);
}

// The process-wide live model used by bind_current_thread(); loaded once, read-only afterwards.
const Model* live_model(std::string* error) {
  static std::once_flag once;
  static std::optional<Model> model;
  static std::string load_error;
  std::call_once(once, [] { model = load_model("live", &load_error); });
  if (!model) {
    if (error) *error = load_error;
    return nullptr;
  }
  return &*model;
}

}  // namespace

bool apply(const Model& m, const WorkerPlacement& p, std::string* error) {
  if (p.cpus.empty()) return true;
  if (!m.this_system) {
    if (error) {
      *error = "refusing to bind worker " + std::to_string(p.worker) +
               ": the topology comes from " + source_kind_name(m.kind) + " '" + m.source +
               "', not from this machine (hwloc would silently not bind)";
    }
    return false;
  }
  hwloc_topology_t topo = m.hw.get();
  hwloc_bitmap_t want = hwloc_bitmap_alloc();
  hwloc_bitmap_t got = hwloc_bitmap_alloc();
  const auto cleanup = [&] {
    hwloc_bitmap_free(want);
    hwloc_bitmap_free(got);
  };
  for (const unsigned c : p.cpus) hwloc_bitmap_set(want, c);
  if (hwloc_set_cpubind(topo, want, HWLOC_CPUBIND_THREAD) != 0) {
    if (error)
      *error = "binding worker " + std::to_string(p.worker) + " to CPUs " +
               format_cpu_list(p.cpus) + " failed: " + errno_text();
    cleanup();
    return false;
  }
  if (hwloc_get_cpubind(topo, got, HWLOC_CPUBIND_THREAD) != 0 || !hwloc_bitmap_isequal(want, got) ||
      kernel_affinity() != [&] {
        std::vector<unsigned> sorted = p.cpus;
        std::sort(sorted.begin(), sorted.end());
        sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
        return sorted;
      }()) {
    if (error) {
      *error = "binding worker " + std::to_string(p.worker) + " did not take: wanted CPUs " +
               format_cpu_list(p.cpus) + ", the kernel reports " +
               format_cpu_list(kernel_affinity());
    }
    cleanup();
    return false;
  }
  if (!p.numa_nodes.empty()) {
    hwloc_bitmap_zero(want);
    for (const unsigned n : p.numa_nodes) hwloc_bitmap_set(want, n);
    const int flags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;
    if (hwloc_set_membind(topo, want, HWLOC_MEMBIND_BIND, flags) != 0) {
      if (error)
        *error = "binding worker " + std::to_string(p.worker) + " memory to NUMA " +
                 format_cpu_list(p.numa_nodes) + " failed: " + errno_text();
      cleanup();
      return false;
    }
    hwloc_membind_policy_t policy{};
    if (hwloc_get_membind(topo, got, &policy, flags) != 0 || !hwloc_bitmap_isequal(want, got)) {
      if (error)
        *error = "memory binding of worker " + std::to_string(p.worker) + " to NUMA " +
                 format_cpu_list(p.numa_nodes) + " did not take";
      cleanup();
      return false;
    }
  }
  cleanup();
  return true;
}

bool bind_current_thread(const WorkerPlacement& p, std::string* error) {
  if (p.cpus.empty()) return true;
  const Model* m = live_model(error);
  if (m == nullptr) return false;
  return apply(*m, p, error);
}

PlanResult plan_live(unsigned n, std::string_view policy, std::string_view smt,
                     std::string_view avoid_cpus) {
  std::string error;
  std::optional<Model> m = load_model("live", &error);
  if (!m) {
    PlanResult r;
    r.error = "cannot load this machine's topology: " + error;
    return r;
  }
  if (!m->this_system && policy != "none") {
    // HWLOC_XMLFILE/HWLOC_SYNTHETIC: hwloc describes another machine and would not bind.
    PlanResult r;
    r.error =
        "hwloc does not describe this machine (is HWLOC_XMLFILE or HWLOC_SYNTHETIC set?): "
        "refusing to plan workers on it";
    r.topology_summary = m->summary();
    r.warnings = m->warnings;
    return r;
  }
  std::vector<unsigned> allowed = m->allowed_pus;
  std::vector<unsigned> avoid;
  if (!avoid_cpus.empty()) {
    if (!parse_cpu_list(avoid_cpus, &avoid, &error)) {
      PlanResult r;
      r.error = "CPUs to avoid: " + error;
      r.topology_summary = m->summary();
      return r;
    }
    std::erase_if(allowed,
                  [&](unsigned c) { return std::binary_search(avoid.begin(), avoid.end(), c); });
    if (allowed.empty()) {
      PlanResult r;
      r.error = "no CPUs left: the allowed CPUs " + format_cpu_list(m->allowed_pus) +
                " are all in the avoided set " + format_cpu_list(avoid);
      r.topology_summary = m->summary();
      return r;
    }
  }
  PlanResult r = plan(*m, allowed, n, policy, smt);
  // The model's own warnings (VM, HWLOC_XMLFILE, restricted allowed set) matter to every caller.
  r.warnings.insert(r.warnings.begin(), m->warnings.begin(), m->warnings.end());
  if (!avoid.empty() && r.ok) {
    r.warnings.push_back("keeping off CPUs " + format_cpu_list(avoid));
  }
  return r;
}

std::string live_topology_summary() {
  std::string error;
  const std::optional<Model> m = load_model("live", &error);
  return m ? m->summary() : "unknown topology (" + error + ")";
}

}  // namespace kvlab::topo
