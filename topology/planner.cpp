// The placement planner: plan(model, allowed, n, policy, smt).
//
// Pure: it reads the Model and, for scatter, runs hwloc_distrib() on a private copy of the hwloc
// tree; it makes no system calls, so it gives the same answer for a recorded XML machine as it
// would on that machine.
//
// Invariants of every successful plan (tested in tests/topology/planner_test.cpp):
//  1. Every CPU handed out is in allowed ∩ model.pus.
//  2. No place (PU, or L3/NUMA domain for per-l3/per-numa) is reused until n exceeds the places.
//  3. smt=off never puts two workers on one core while n <= usable cores; smt=auto only starts
//     using SMT siblings once every usable core has a worker (compact, scatter, per-l3:pin).
//  4. compact uses the fewest L3 domains that can hold n workers; scatter is hwloc_distrib, so it
//     is balanced within ±1 at every level and matches `hwloc-distrib --single n`.
#include <hwloc.h>

#include <algorithm>
#include <climits>
#include <map>

#include "topology/topology.hpp"

namespace kvlab::topo {

namespace {

enum class Smt { kAuto, kOn, kOff };
enum class Policy { kNone, kCompact, kScatter, kPerL3, kPerL3Pin, kPerNuma, kExplicit };

struct UsableCore {
  unsigned index = 0;         // into Model::cores
  std::vector<unsigned> pus;  // allowed PUs of the core, core order (first = primary thread)
};

std::string describe_pu(const Model& m, unsigned pu) {
  const int ci = m.core_of_pu(pu);
  if (ci < 0) return "PU P#" + std::to_string(pu);
  const CoreInfo& c = m.cores[static_cast<std::size_t>(ci)];
  std::string s = "core L#" + std::to_string(c.logical) + " (PU P#" + std::to_string(pu);
  if (!c.pus.empty() && c.pus.front() != pu) s += ", SMT sibling";
  s += ")";
  if (c.l3 >= 0) s += " in L3 L#" + std::to_string(c.l3) + " (CCX)";
  if (c.numa >= 0) s += ", NUMA P#" + std::to_string(m.numa[static_cast<std::size_t>(c.numa)].os);
  if (c.package >= 0) s += ", package L#" + std::to_string(c.package);
  if (c.kind >= 0) s += ", " + m.core_kinds[static_cast<std::size_t>(c.kind)].name;
  return s;
}

std::string numa_list_text(const Model& m, const std::vector<int>& nodes) {
  std::vector<unsigned> os;
  for (const int n : nodes) os.push_back(m.numa[static_cast<std::size_t>(n)].os);
  return format_cpu_list(os);
}

PlanResult fail(const Model& m, std::string message) {
  PlanResult r;
  r.ok = false;
  r.error = std::move(message);
  r.topology_summary = m.summary();
  return r;
}

// Workers i = 0..n-1 take places[i mod size], one PU each.
void assign_single_pus(const Model& m, const std::vector<unsigned>& places, unsigned n,
                       const char* policy_name, PlanResult& r) {
  for (unsigned i = 0; i < n; ++i) {
    const unsigned pu = places[i % places.size()];
    r.workers.push_back({i, {pu}, {}, describe_pu(m, pu)});
  }
  if (n > places.size()) {
    r.warnings.push_back(std::to_string(n) + " workers on " + std::to_string(places.size()) + " " +
                         policy_name + " places: CPUs are shared (oversubscribed)");
  }
}

// The places of a set of cores under an SMT mode. kAuto: primary threads of all cores, then the
// second threads, and so on (siblings last); kOn: each core's PUs together; kOff: primaries only.
std::vector<unsigned> places_of(const std::vector<UsableCore>& cores, Smt smt) {
  std::vector<unsigned> out;
  if (smt == Smt::kOn) {
    for (const UsableCore& c : cores) out.insert(out.end(), c.pus.begin(), c.pus.end());
    return out;
  }
  std::size_t tiers = 1;
  if (smt == Smt::kAuto) {
    for (const UsableCore& c : cores) tiers = std::max(tiers, c.pus.size());
  }
  for (std::size_t t = 0; t < tiers; ++t) {
    for (const UsableCore& c : cores) {
      if (t < c.pus.size()) out.push_back(c.pus[t]);
    }
  }
  return out;
}

void warn_siblings(const PlanResult& r, const Model& m, std::vector<std::string>& warnings) {
  std::map<int, unsigned> per_core;
  for (const WorkerPlacement& w : r.workers) {
    if (w.cpus.size() == 1) ++per_core[m.core_of_pu(w.cpus.front())];
  }
  unsigned shared = 0;
  for (const auto& kv : per_core) shared += kv.second > 1 ? 1 : 0;
  if (shared > 0) {
    warnings.push_back(std::to_string(shared) + (shared == 1 ? " core runs" : " cores run") +
                       " two or more workers (SMT siblings or wrap-around)");
  }
}

PlanResult plan_compact(const Model& m, const std::vector<UsableCore>& cores, unsigned n, Smt smt,
                        PlanResult r) {
  // Group the usable cores by L3 domain, in hwloc order.
  std::vector<int> order;
  std::map<int, std::vector<UsableCore>> groups;
  for (const UsableCore& c : cores) {
    const int l3 = m.cores[c.index].l3;
    if (groups.find(l3) == groups.end()) order.push_back(l3);
    groups[l3].push_back(c);
  }
  // smt=auto behaves like off while every worker can have its own core.
  const Smt eff = smt == Smt::kAuto && n <= cores.size() ? Smt::kOff : smt;
  std::vector<std::size_t> capacity(order.size());
  std::size_t total = 0;
  for (std::size_t g = 0; g < order.size(); ++g) {
    capacity[g] = places_of(groups[order[g]], eff).size();
    total += capacity[g];
  }
  std::vector<UsableCore> chosen_cores;
  if (n <= total) {
    // Fewest L3s: take the largest domains first (ties in hwloc order), then restore hwloc order.
    std::vector<std::size_t> idx(order.size());
    for (std::size_t g = 0; g < idx.size(); ++g) idx[g] = g;
    std::stable_sort(idx.begin(), idx.end(),
                     [&](std::size_t a, std::size_t b) { return capacity[a] > capacity[b]; });
    std::vector<std::size_t> chosen;
    std::size_t sum = 0;
    for (const std::size_t g : idx) {
      if (sum >= n) break;
      chosen.push_back(g);
      sum += capacity[g];
    }
    std::sort(chosen.begin(), chosen.end());
    for (const std::size_t g : chosen) {
      const auto& gc = groups[order[g]];
      chosen_cores.insert(chosen_cores.end(), gc.begin(), gc.end());
    }
  } else {
    chosen_cores = cores;
  }
  assign_single_pus(m, places_of(chosen_cores, eff), n, "compact", r);
  return r;
}

PlanResult plan_scatter(const Model& m, const std::vector<UsableCore>& cores,
                        const std::vector<unsigned>& allowed, unsigned n, Smt smt, PlanResult r) {
  const bool primaries_only = smt == Smt::kOff || (smt == Smt::kAuto && n <= cores.size());
  std::vector<unsigned> places;
  if (primaries_only) {
    for (const UsableCore& c : cores) places.push_back(c.pus.front());
  } else {
    places = allowed;
  }
  std::sort(places.begin(), places.end());

  hwloc_topology_t copy = nullptr;
  if (hwloc_topology_dup(&copy, m.hw.get()) != 0) return fail(m, "hwloc_topology_dup failed");
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (const unsigned pu : places) hwloc_bitmap_set(set, pu);
  bool ok = true;
  if (places != m.pus) ok = hwloc_topology_restrict(copy, set, 0) == 0;
  std::vector<hwloc_bitmap_t> sets(n, nullptr);
  hwloc_obj_t root = hwloc_get_root_obj(copy);
  if (ok) ok = hwloc_distrib(copy, &root, 1, sets.data(), n, INT_MAX, 0) == 0;
  std::vector<unsigned> chosen;
  for (unsigned i = 0; i < n && ok; ++i) {
    hwloc_bitmap_singlify(sets[i]);
    chosen.push_back(static_cast<unsigned>(hwloc_bitmap_first(sets[i])));
  }
  for (hwloc_bitmap_t s : sets) hwloc_bitmap_free(s);
  hwloc_bitmap_free(set);
  hwloc_topology_destroy(copy);
  if (!ok) return fail(m, "hwloc could not distribute " + std::to_string(n) + " workers");
  for (unsigned i = 0; i < n; ++i)
    r.workers.push_back({i, {chosen[i]}, {}, describe_pu(m, chosen[i])});
  if (n > places.size()) {
    r.warnings.push_back(std::to_string(n) + " workers on " + std::to_string(places.size()) +
                         " scatter places: CPUs are shared (oversubscribed)");
  }
  return r;
}

PlanResult plan_per_l3(const Model& m, const std::vector<UsableCore>& cores, unsigned n, Smt smt,
                       bool pin, PlanResult r) {
  if (m.l3.empty())
    return fail(m, "no L3 cache information in this topology: use compact, scatter or per-numa");
  std::vector<int> order;
  std::map<int, std::vector<UsableCore>> groups;
  for (const UsableCore& c : cores) {
    const int l3 = m.cores[c.index].l3;
    if (l3 < 0) continue;
    if (groups.find(l3) == groups.end()) order.push_back(l3);
    groups[l3].push_back(c);
  }
  if (order.empty()) return fail(m, "no allowed CPU lies in an L3 domain");
  const auto d = static_cast<unsigned>(order.size());
  bool oversubscribed = false;
  for (unsigned i = 0; i < n; ++i) {
    const int l3 = order[i % d];
    const L3Info& info = m.l3[static_cast<std::size_t>(l3)];
    const auto& gc = groups[l3];
    std::string where = "L3 L#" + std::to_string(info.logical) + " (CCX, " +
                        std::to_string(info.size_bytes >> 20) + " MiB)";
    if (!info.numa.empty()) where += ", NUMA P#" + numa_list_text(m, info.numa);
    if (info.package >= 0) where += ", package L#" + std::to_string(info.package);
    if (pin) {
      const unsigned j = i / d;
      // Within the L3, smt=auto takes every core before any sibling.
      const std::vector<unsigned> places = places_of(gc, smt);
      if (j >= places.size()) oversubscribed = true;
      const unsigned pu = places[j % places.size()];
      r.workers.push_back({i, {pu}, {}, describe_pu(m, pu)});
    } else {
      std::vector<unsigned> cpus = places_of(gc, smt == Smt::kOff ? Smt::kOff : Smt::kOn);
      std::sort(cpus.begin(), cpus.end());
      r.workers.push_back(
          {i,
           cpus,
           {},
           where + ", " + std::to_string(gc.size()) + " cores, CPUs " + format_cpu_list(cpus)});
    }
  }
  if (oversubscribed) {
    r.warnings.push_back(
        "per-l3:pin: more workers than places in some L3 domains: CPUs are shared");
  }
  if (!pin && n > d) {
    r.warnings.push_back(std::to_string(n) + " workers over " + std::to_string(d) +
                         " L3 domains: workers of one L3 share its CPUs");
  }
  return r;
}

PlanResult plan_per_numa(const Model& m, const std::vector<UsableCore>& cores, unsigned n, Smt smt,
                         PlanResult r) {
  std::vector<int> order;
  std::map<int, std::vector<UsableCore>> groups;
  for (const UsableCore& c : cores) {
    const int node = m.cores[c.index].numa;
    if (node < 0) continue;
    if (groups.find(node) == groups.end()) order.push_back(node);
    groups[node].push_back(c);
  }
  if (order.empty()) return fail(m, "no allowed CPU belongs to a NUMA node");
  std::sort(order.begin(), order.end());  // logical order of the nodes
  const auto d = static_cast<unsigned>(order.size());
  for (unsigned i = 0; i < n; ++i) {
    const int node = order[i % d];
    const NumaInfo& info = m.numa[static_cast<std::size_t>(node)];
    const auto& gc = groups[node];
    std::vector<unsigned> cpus = places_of(gc, smt == Smt::kOff ? Smt::kOff : Smt::kOn);
    std::sort(cpus.begin(), cpus.end());
    std::string reason = "NUMA P#" + std::to_string(info.os) + " (" + std::to_string(gc.size()) +
                         " cores, CPUs " + format_cpu_list(cpus) + ")";
    if (info.package >= 0) reason += ", package L#" + std::to_string(info.package);
    reason += ", memory bound to node " + std::to_string(info.os);
    r.workers.push_back({i, cpus, {info.os}, reason});
  }
  if (n > d) {
    r.warnings.push_back(std::to_string(n) + " workers over " + std::to_string(d) +
                         " NUMA nodes with CPUs: up to " + std::to_string((n + d - 1) / d) +
                         " workers share one node's CPUs");
  }
  return r;
}

}  // namespace

PlanResult plan(const Model& m, const std::vector<unsigned>& allowed_in, unsigned n,
                std::string_view policy_text, std::string_view smt_text) {
  Smt smt;
  if (smt_text == "auto" || smt_text.empty()) {
    smt = Smt::kAuto;
  } else if (smt_text == "on") {
    smt = Smt::kOn;
  } else if (smt_text == "off") {
    smt = Smt::kOff;
  } else {
    return fail(m,
                "unknown --smt value '" + std::string(smt_text) + "' (expected auto, on or off)");
  }

  Policy policy;
  std::string_view explicit_list;
  if (policy_text == "none") {
    policy = Policy::kNone;
  } else if (policy_text == "compact") {
    policy = Policy::kCompact;
  } else if (policy_text == "scatter") {
    policy = Policy::kScatter;
  } else if (policy_text == "per-l3" || policy_text == "ccx") {
    policy = Policy::kPerL3;
  } else if (policy_text == "per-l3:pin" || policy_text == "ccx:pin") {
    policy = Policy::kPerL3Pin;
  } else if (policy_text == "per-numa") {
    policy = Policy::kPerNuma;
  } else if (policy_text.rfind("explicit:", 0) == 0) {
    policy = Policy::kExplicit;
    explicit_list = policy_text.substr(9);
  } else {
    return fail(m, "unknown placement policy '" + std::string(policy_text) + "' (expected " +
                       std::string(kPolicyHelp) + ")");
  }
  if (n == 0) return fail(m, "need at least one worker");

  PlanResult r;
  r.ok = true;
  r.topology_summary = m.summary();
  if (policy == Policy::kNone) {
    for (unsigned i = 0; i < n; ++i) r.workers.push_back({i, {}, {}, "not bound (placement none)"});
    return r;
  }

  std::vector<unsigned> allowed;
  for (const unsigned pu : allowed_in) {
    if (std::binary_search(m.pus.begin(), m.pus.end(), pu)) allowed.push_back(pu);
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  if (allowed.empty()) {
    return fail(m, "no CPUs left: the allowed set (" + format_cpu_list(allowed_in) +
                       ") has no CPU of this topology (" + format_cpu_list(m.pus) + ")");
  }

  if (policy == Policy::kExplicit) {
    std::vector<unsigned> list;
    std::string error;
    if (!parse_cpu_list(explicit_list, &list, &error))
      return fail(m, "explicit placement: " + error);
    if (list.empty()) return fail(m, "explicit placement needs a CPU list, e.g. explicit:0,2-3");
    for (const unsigned pu : list) {
      if (!std::binary_search(m.pus.begin(), m.pus.end(), pu)) {
        return fail(m, "explicit placement: CPU " + std::to_string(pu) +
                           " is not in this topology (" + format_cpu_list(m.pus) + ")");
      }
      if (!std::binary_search(allowed.begin(), allowed.end(), pu)) {
        return fail(m, "explicit placement: CPU " + std::to_string(pu) +
                           " is outside the allowed set (" + format_cpu_list(allowed) + ")");
      }
    }
    assign_single_pus(m, list, n, "explicit", r);
    for (WorkerPlacement& w : r.workers) w.reason += " (explicit)";
    return r;
  }

  std::vector<UsableCore> cores;
  for (std::size_t i = 0; i < m.cores.size(); ++i) {
    UsableCore c{static_cast<unsigned>(i), {}};
    for (const unsigned pu : m.cores[i].pus) {
      if (std::binary_search(allowed.begin(), allowed.end(), pu)) c.pus.push_back(pu);
    }
    if (!c.pus.empty()) cores.push_back(std::move(c));
  }
  if (cores.empty()) return fail(m, "no CPUs left: no allowed CPU belongs to a core");

  switch (policy) {
    case Policy::kCompact:
      r = plan_compact(m, cores, n, smt, std::move(r));
      break;
    case Policy::kScatter:
      r = plan_scatter(m, cores, allowed, n, smt, std::move(r));
      break;
    case Policy::kPerL3:
      r = plan_per_l3(m, cores, n, smt, false, std::move(r));
      break;
    case Policy::kPerL3Pin:
      r = plan_per_l3(m, cores, n, smt, true, std::move(r));
      break;
    case Policy::kPerNuma:
      r = plan_per_numa(m, cores, n, smt, std::move(r));
      break;
    default:
      break;
  }
  if (r.ok &&
      (policy == Policy::kCompact || policy == Policy::kScatter || policy == Policy::kPerL3Pin)) {
    warn_siblings(r, m, r.warnings);
  }
  return r;
}

}  // namespace kvlab::topo
