// The machine model behind `kvlab topo` and the placement API (placement.hpp).
//
// A Model is built from hwloc 2.x: the live machine, a recorded XML file, or a synthetic string.
// It flattens what placement needs -- packages, dies, L3 domains (the CCX on AMD), cores with their
// PUs, NUMA nodes with and without CPUs, the NUMA distance matrix, core kinds, NICs with their
// locality and IRQ affinity (live only) -- and keeps the hwloc topology for hwloc_distrib() and
// binding.
//
// Invariants of a loaded Model:
//  1. CPU numbers are OS indexes everywhere (what system calls take); logical indexes (hwloc's
//     L#) are kept only for display.
//  2. A core's NUMA node is found through its nodeset (the CPU-bearing node in the nodeset whose
//     cpuset covers the core, the smallest one), never by looking for a parent of type NUMANode:
//     NUMA nodes attach at package level on NPS1, at a group on NPS2/4, at the L3 on L3-as-NUMA.
//  3. `allowed_pus` is a subset of `pus`; for the live machine it is the cgroup-allowed set
//     intersected with the calling thread's affinity (taskset) at load time.
//  4. this_system is true only for the live machine loaded without HWLOC_XMLFILE/HWLOC_SYNTHETIC;
//     apply() refuses to bind otherwise (hwloc binding on a foreign topology is a silent no-op).
//
// Thread safety: a const Model may be shared between threads (hwloc allows concurrent read-only
// use of a loaded topology, and binding calls only read it). load_model() is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "topology/placement.hpp"

struct hwloc_topology;  // hwloc's opaque topology (hwloc_topology_t)

namespace kvlab::topo {

enum class SourceKind { kLive, kXml, kSynthetic };

struct CoreInfo {
  unsigned logical = 0;
  unsigned os = 0;
  std::vector<unsigned> pus;  // OS indexes of its PUs, hwloc order (first = primary thread)
  int package = -1;           // logical index of its package, -1 if none
  int die = -1;               // logical index of its Die, -1 when hwloc reports no dies
  int l3 = -1;                // index into Model::l3, -1 without L3 information
  int numa = -1;              // index into Model::numa, found through the nodeset
  int kind = -1;              // index into Model::core_kinds, -1 when hwloc reports none
};

struct L3Info {
  unsigned logical = 0;
  std::uint64_t size_bytes = 0;
  int package = -1;
  std::vector<int> numa;        // indexes into Model::numa of the nodes its cores use
  std::vector<unsigned> cores;  // indexes into Model::cores
  std::vector<unsigned> pus;    // sorted OS indexes
};

struct NumaInfo {
  unsigned logical = 0;
  unsigned os = 0;
  std::uint64_t memory_bytes = 0;
  int package = -1;           // -1 for nodes above the packages (e.g. CXL memory)
  std::vector<unsigned> pus;  // PUs of the cores whose node this is; empty = memory-only
  std::vector<int> l3;        // indexes into Model::l3
  std::vector<std::string> nics;
};

struct IrqInfo {
  unsigned irq = 0;
  std::vector<unsigned> affinity;  // effective affinity if the kernel exposes it
};

struct NicInfo {
  std::string name;
  std::string pci;  // "0000:00:03.0"
  std::vector<unsigned> local_cpus;
  std::vector<int> numa;  // indexes into Model::numa (CPU nodes local to the NIC)
  std::vector<IrqInfo> irqs;
};

struct CoreKind {
  std::string name;  // hwloc's CoreType info, e.g. "AMDPerformance"
  int efficiency = -1;
  std::vector<unsigned> pus;
};

struct Model {
  SourceKind kind = SourceKind::kLive;
  std::string source;  // "live", the XML path, or the synthetic description
  bool this_system = false;

  std::string vendor;          // "AuthenticAMD"
  std::string cpu_model;       // trimmed, e.g. "AMD EPYC 9654"
  std::string cpu_model_raw;   // as hwloc reports it
  std::string zen_generation;  // "Zen 4", "" when unknown / not AMD
  int family = -1;
  int model_number = -1;

  unsigned packages = 0;
  unsigned dies = 0;  // hwloc Die objects; 0 when the topology does not report dies
  unsigned smt = 1;   // PUs per core (the maximum)

  std::vector<CoreInfo> cores;  // hwloc logical order
  std::vector<L3Info> l3;
  std::vector<NumaInfo> numa;         // hwloc logical order
  std::vector<unsigned> pus;          // all PUs (sorted OS indexes)
  std::vector<unsigned> allowed_pus;  // see invariant 3
  std::vector<unsigned> offline_pus;  // in the complete cpuset but not online
  std::vector<CoreKind> core_kinds;

  std::string distances_name;            // e.g. "NUMALatency"; empty without a matrix
  std::vector<unsigned> distance_nodes;  // OS indexes, matrix order
  std::vector<std::vector<std::uint64_t>> distances;

  std::vector<NicInfo> nics;
  // CPU NUMA nodes per package when uniform and 1, 2 or 4; 0 = one node over several packages
  // (NPS0); -1 = unknown (L3-as-NUMA, memory-only layouts, uneven packages).
  int nps_guess = -1;
  bool l3_as_numa = false;
  bool is_vm = false;
  std::vector<std::string> warnings;

  std::shared_ptr<hwloc_topology> hw;

  unsigned numa_nodes_with_cpus() const;
  // One line: "2 packages, 8 NUMA nodes, 24 L3, 192 cores, 384 PUs (AMD EPYC 9654, Zen 4)".
  std::string summary() const;
  // Index into cores of the core holding PU os, or -1.
  int core_of_pu(unsigned os) const;
};

// Whether to load I/O objects (PCI devices, NICs). Only `topo report` and `topo export` show them;
// placement needs none, and skipping them keeps hwloc's PCI backend (libpciaccess, which leaks
// about 1 KB per load) out of every server and benchmark start.
enum class IoObjects { kNone, kImportant };

// input: "" or "live", "synthetic:DESCRIPTION", or a path to an hwloc XML file.
// Returns std::nullopt and fills *error when hwloc cannot load it.
std::optional<Model> load_model(std::string_view input, std::string* error,
                                IoObjects io = IoObjects::kNone);

// Placement policy names accepted by plan(), for help texts.
inline constexpr std::string_view kPolicyHelp =
    "none, compact, scatter, per-l3 (alias ccx), per-l3:pin, per-numa, explicit:LIST";

// The planner. Pure: reads the model and its hwloc tree, makes no system calls.
// allowed: OS indexes the workers may use (pass model.allowed_pus); intersected with the model.
// policy and smt as in placement.hpp. smt: "on" = PUs are places in hwloc order (siblings
// adjacent); "auto" = one worker per core first, SMT siblings only once every core has one;
// "off" = never a sibling (workers wrap around the cores when n exceeds them).
PlanResult plan(const Model& model, const std::vector<unsigned>& allowed, unsigned n,
                std::string_view policy, std::string_view smt);

// Binds the calling thread to p (memory too when p.numa_nodes is non-empty) and verifies it with
// hwloc_get_cpubind and sched_getaffinity. Refuses, with a message saying so, when the model is
// not this machine. Empty p.cpus (policy none) is a no-op returning true.
bool apply(const Model& model, const WorkerPlacement& p, std::string* error);

// Renderers used by `kvlab topo` (report.cpp).
std::string report_text(const Model& model);
std::string report_json(const Model& model);
std::string plan_text(const Model& model, const PlanResult& result, std::string_view policy,
                      std::string_view smt);
std::string plan_json(const Model& model, const PlanResult& result, std::string_view policy,
                      std::string_view smt);

std::string source_kind_name(SourceKind kind);
// "AMD EPYC 9654 96-Core Processor   " -> "AMD EPYC 9654".
std::string trim_cpu_model(std::string_view raw);
// AMD family/model -> "Zen", "Zen+", "Zen 2", "Zen 3", "Zen 4", "Zen 5"; "" when unknown.
std::string zen_generation(int family, int model);

}  // namespace kvlab::topo
