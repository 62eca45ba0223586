// Worker placement for kvlab: the small, stable API the server, the bench and the load generator
// use. It plans where n workers run on THIS machine (hwloc live topology, intersected with the
// process's allowed CPUs) and binds a thread to its placement.
//
// The full model/planner (XML and synthetic machines, the pure plan(), reports) lives in
// topology/topology.hpp; this header only exposes the live-machine entry points.
//
// Thread safety: every function is safe to call from any thread; plan_live() loads its own
// topology each call (a few milliseconds), so call it once at startup, not per request.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvlab::topo {

struct WorkerPlacement {
  unsigned worker = 0;
  std::vector<unsigned> cpus;        // OS indexes of the PUs this worker may run on
  std::vector<unsigned> numa_nodes;  // OS indexes of the NUMA nodes for its memory (may be empty)
  std::string reason;                // one line, e.g. "core 3 in L3 #1 (CCX), NUMA 0"
};

struct PlanResult {
  bool ok = false;
  std::string error;  // set when !ok (bad policy string, no CPUs left, ...)
  std::vector<WorkerPlacement> workers;
  std::vector<std::string> warnings;
  std::string topology_summary;  // one line, e.g. "1 package, 1 NUMA node, 1 L3, 2 cores, 2 PUs
                                 // (AMD EPYC 7763, Zen 3)"
};

// Plans n workers on THIS machine (live hwloc topology, intersected with the process's allowed
// CPUs). policy: "none", "compact", "scatter", "per-l3", "ccx", "per-l3:pin", "per-numa",
// "explicit:0,2-3". smt: "auto", "on", "off". avoid_cpus: a CPU list string ("0-1,4") to exclude
// (the load generator keeps off the server's CPUs); empty = none.
PlanResult plan_live(unsigned n, std::string_view policy, std::string_view smt = "auto",
                     std::string_view avoid_cpus = {});

// Binds the calling thread (and, when numa_nodes is non-empty and policy was per-numa, its memory)
// to p, then verifies the binding. Returns false and fills *error on failure. "none" placements
// (empty cpus) are a no-op returning true.
bool bind_current_thread(const WorkerPlacement& p, std::string* error);

// {0,1,2,3,8} -> "0-3,8"; input need not be sorted; duplicates are dropped. {} -> "".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

// "0-3,8" -> {0,1,2,3,8} (sorted, unique). Accepts blanks around items and "" (empty set).
// Returns false and fills *error (if non-null) on a malformed list.
bool parse_cpu_list(std::string_view text, std::vector<unsigned>* out, std::string* error);

// One line describing the live machine, as in PlanResult::topology_summary.
std::string live_topology_summary();

}  // namespace kvlab::topo
