// Loading a machine into a Model: hwloc does the discovery (live, XML or synthetic); this file
// flattens its tree into the plain tables the planner and the reports use, adds what hwloc leaves
// to the OS on Linux (IRQ affinity of NIC queues, the hypervisor flag), and collects warnings.
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "topology/topology.hpp"

namespace kvlab::topo {

namespace {

std::vector<unsigned> to_list(hwloc_const_bitmap_t set) {
  std::vector<unsigned> out;
  if (set == nullptr || hwloc_bitmap_iszero(set)) return out;
  if (hwloc_bitmap_weight(set) < 0) return out;  // infinite set
  int i = -1;
  while ((i = hwloc_bitmap_next(set, i)) != -1) out.push_back(static_cast<unsigned>(i));
  return out;
}

std::string info(hwloc_obj_t obj, const char* name) {
  const char* v = obj != nullptr ? hwloc_obj_get_info_by_name(obj, name) : nullptr;
  return v != nullptr ? std::string(v) : std::string();
}

int to_int(const std::string& s) {
  if (s.empty()) return -1;
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  return end != nullptr && *end == '\0' ? static_cast<int>(v) : -1;
}

std::string read_first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

bool cpuinfo_has_hypervisor_flag() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) return line.find(" hypervisor") != std::string::npos;
  }
  return false;
}

std::string plural(unsigned n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The NUMA node of a CPU object: among the nodes in its nodeset whose cpuset covers the object,
// the smallest. Works wherever the nodes attach (package, group, die, L3), and skips memory-only
// nodes attached higher up (CXL at machine level), whose cpuset is their parent's.
int numa_of(hwloc_topology_t topo, hwloc_obj_t obj) {
  int best = -1;
  int best_weight = 0;
  unsigned best_os = 0;
  hwloc_obj_t node = nullptr;
  while ((node = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, node)) != nullptr) {
    if (!hwloc_bitmap_isset(obj->nodeset, node->os_index)) continue;
    if (node->cpuset == nullptr || hwloc_bitmap_iszero(node->cpuset)) continue;
    if (!hwloc_bitmap_isincluded(obj->cpuset, node->cpuset)) continue;
    // Ties (nodes sharing a parent, e.g. DDR + HBM) go to the lower OS index, as Linux does.
    const int w = hwloc_bitmap_weight(node->cpuset);
    if (best == -1 || w < best_weight || (w == best_weight && node->os_index < best_os)) {
      best = static_cast<int>(node->logical_index);
      best_weight = w;
      best_os = node->os_index;
    }
  }
  return best;
}

int logical_of_ancestor(hwloc_topology_t topo, hwloc_obj_type_t type, hwloc_obj_t obj) {
  hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, type, obj);
  return a != nullptr ? static_cast<int>(a->logical_index) : -1;
}

void collect_nics(hwloc_topology_t topo, Model& m) {
  hwloc_obj_t os = nullptr;
  while ((os = hwloc_get_next_osdev(topo, os)) != nullptr) {
    if (os->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK) continue;
    NicInfo nic;
    nic.name = os->name != nullptr ? os->name : "?";
    for (hwloc_obj_t p = os->parent; p != nullptr; p = p->parent) {
      if (p->type == HWLOC_OBJ_PCI_DEVICE) {
        char bus[32];
        std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%01x", p->attr->pcidev.domain,
                      p->attr->pcidev.bus, p->attr->pcidev.dev, p->attr->pcidev.func);
        nic.pci = bus;
        break;
      }
    }
    hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topo, os);
    if (local != nullptr) {
      nic.local_cpus = to_list(local->cpuset);
      for (std::size_t i = 0; i < m.numa.size(); ++i) {
        if (!m.numa[i].pus.empty() && hwloc_bitmap_isset(local->nodeset, m.numa[i].os)) {
          nic.numa.push_back(static_cast<int>(i));
        }
      }
    }
    m.nics.push_back(std::move(nic));
  }
}

// Linux only, live machine only: the MSI/MSI-X vectors of the NIC's PCI function and where the
// kernel routes them. Unreadable files are skipped (non-root containers hide some).
void collect_irqs(NicInfo& nic) {
  namespace fs = std::filesystem;
  if (nic.pci.empty()) return;
  std::vector<unsigned> irqs;
  std::error_code ec;
  const fs::path dev = fs::path("/sys/bus/pci/devices") / nic.pci;
  for (const auto& e : fs::directory_iterator(dev / "msi_irqs", ec)) {
    const int irq = to_int(e.path().filename().string());
    if (irq >= 0) irqs.push_back(static_cast<unsigned>(irq));
  }
  if (irqs.empty()) {
    const int irq = to_int(read_first_line(dev / "irq"));
    if (irq > 0) irqs.push_back(static_cast<unsigned>(irq));
  }
  std::sort(irqs.begin(), irqs.end());
  for (const unsigned irq : irqs) {
    const fs::path dir = fs::path("/proc/irq") / std::to_string(irq);
    std::string list = read_first_line(dir / "effective_affinity_list");
    if (list.empty()) list = read_first_line(dir / "smp_affinity_list");
    IrqInfo info{irq, {}};
    std::string ignored;
    if (!list.empty()) parse_cpu_list(list, &info.affinity, &ignored);
    nic.irqs.push_back(std::move(info));
  }
}

std::string size_text(std::uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  }
  return buf;
}

void add_warnings(Model& m) {
  for (const char* var : {"HWLOC_XMLFILE", "HWLOC_SYNTHETIC"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') {
      m.warnings.push_back(std::string(var) + "=" + v +
                           " is set in the environment: hwloc reads it "
                           "instead of this machine for 'live' topologies and binding becomes a "
                           "silent no-op; unset it");
    }
  }
  if (m.kind == SourceKind::kLive && !m.this_system) {
    m.warnings.push_back(
        "the 'live' topology is not this machine (hwloc says so): binding is disabled");
  }
  if (m.is_vm) {
    std::string w =
        "virtual machine (cpuid hypervisor bit): cache and core data come from the "
        "hypervisor";
    if (!m.l3.empty()) {
      const L3Info& l3 = m.l3.front();
      w += "; L3 L#0 claims " + size_text(l3.size_bytes) + " shared by " +
           plural(static_cast<unsigned>(l3.cores.size()), "core", "cores") +
           ", but vCPUs may sit on different host CCXs: treat L3 sharing as unverified and check "
           "with `kvlab topo profile`";
    }
    m.warnings.push_back(std::move(w));
  }
  for (const NumaInfo& n : m.numa) {
    if (n.pus.empty()) {
      m.warnings.push_back("NUMA node P#" + std::to_string(n.os) + " has memory (" +
                           size_text(n.memory_bytes) +
                           ") but no CPUs (CXL or HBM?): no worker is placed there");
    }
  }
  if (!m.offline_pus.empty()) {
    m.warnings.push_back("offline CPUs: " + format_cpu_list(m.offline_pus) +
                         " (not used by plans)");
  }
  if (m.l3.empty() && !m.cores.empty()) {
    m.warnings.push_back("no L3 cache information: per-l3 placement is unavailable");
  }
  if (m.allowed_pus.size() < m.pus.size()) {
    m.warnings.push_back("this process may use only CPUs " + format_cpu_list(m.allowed_pus) +
                         " of " + format_cpu_list(m.pus) +
                         " (taskset/cgroup): plans stay inside them");
  }
}

}  // namespace

std::string source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::kLive:
      return "live";
    case SourceKind::kXml:
      return "xml";
    case SourceKind::kSynthetic:
      return "synthetic";
  }
  return "?";
}

std::string trim_cpu_model(std::string_view raw) {
  std::string s(raw);
  if (const auto w = s.find(" w/ "); w != std::string::npos) s.resize(w);
  std::istringstream words(s);
  std::string word;
  std::string out;
  while (words >> word) {
    if (word == "Processor" || word == "CPU") continue;
    if (word.size() > 5 && word.compare(word.size() - 5, 5, "-Core") == 0) continue;
    if (!out.empty()) out += ' ';
    out += word;
  }
  return out;
}

std::string zen_generation(int family, int model) {
  // AMD's family/model ranges (cpuid leaf 1), as documented in AMD's revision guides and used by
  // Linux' arch/x86 code: 17h = Zen/Zen+/Zen 2, 19h = Zen 3/Zen 4, 1Ah = Zen 5.
  if (family == 0x17) {
    if (model == 0x08 || model == 0x18) return "Zen+";
    return model < 0x30 ? "Zen" : "Zen 2";
  }
  if (family == 0x19) {
    if ((model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0x7f) ||
        (model >= 0xa0 && model <= 0xaf)) {
      return "Zen 4";
    }
    return "Zen 3";
  }
  if (family == 0x1a) return "Zen 5";
  return "";
}

unsigned Model::numa_nodes_with_cpus() const {
  return static_cast<unsigned>(
      std::count_if(numa.begin(), numa.end(), [](const NumaInfo& n) { return !n.pus.empty(); }));
}

std::string Model::summary() const {
  std::string s = plural(packages, "package", "packages") + ", " +
                  plural(static_cast<unsigned>(numa.size()), "NUMA node", "NUMA nodes") + ", " +
                  std::to_string(l3.size()) + " L3, " +
                  plural(static_cast<unsigned>(cores.size()), "core", "cores") + ", " +
                  plural(static_cast<unsigned>(pus.size()), "PU", "PUs");
  std::string cpu = cpu_model;
  if (!zen_generation.empty()) cpu += (cpu.empty() ? "" : ", ") + zen_generation;
  if (!cpu.empty()) s += " (" + cpu + ")";
  return s;
}

int Model::core_of_pu(unsigned os) const {
  for (std::size_t i = 0; i < cores.size(); ++i) {
    if (std::find(cores[i].pus.begin(), cores[i].pus.end(), os) != cores[i].pus.end()) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::optional<Model> load_model(std::string_view input, std::string* error, IoObjects io) {
  Model m;
  const std::string in(input);
  if (in.empty() || in == "live") {
    m.kind = SourceKind::kLive;
    m.source = "live";
  } else if (in.rfind("synthetic:", 0) == 0) {
    m.kind = SourceKind::kSynthetic;
    m.source = in.substr(10);
  } else {
    m.kind = SourceKind::kXml;
    m.source = in;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(in, ec)) {
      if (error)
        *error = "cannot read topology file '" + in +
                 "' (expected live, synthetic:STRING or an hwloc XML file)";
      return std::nullopt;
    }
  }

  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) {
    if (error) *error = "hwloc_topology_init failed";
    return std::nullopt;
  }
  m.hw.reset(raw, [](hwloc_topology* t) { hwloc_topology_destroy(t); });
  hwloc_topology_t topo = raw;
  hwloc_topology_set_io_types_filter(
      topo, io == IoObjects::kImportant ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT : HWLOC_TYPE_FILTER_KEEP_NONE);
  if (m.kind == SourceKind::kSynthetic &&
      hwloc_topology_set_synthetic(topo, m.source.c_str()) != 0) {
    if (error) *error = "hwloc rejects the synthetic description '" + m.source + "'";
    return std::nullopt;
  }
  if (m.kind == SourceKind::kXml && hwloc_topology_set_xml(topo, m.source.c_str()) != 0) {
    if (error)
      *error =
          "hwloc cannot parse '" + m.source + "' as a topology XML (hwloc 2.9 reads format 2.x)";
    return std::nullopt;
  }
  if (hwloc_topology_load(topo) != 0) {
    if (error) *error = "hwloc_topology_load failed for '" + m.source + "'";
    return std::nullopt;
  }
  m.this_system = m.kind == SourceKind::kLive && hwloc_topology_is_thissystem(topo) != 0;

  hwloc_obj_t pkg0 = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  m.vendor = info(pkg0, "CPUVendor");
  if (m.vendor.empty()) m.vendor = info(root, "CPUVendor");
  m.cpu_model_raw = info(pkg0, "CPUModel");
  if (m.cpu_model_raw.empty()) m.cpu_model_raw = info(root, "CPUModel");
  m.cpu_model = trim_cpu_model(m.cpu_model_raw);
  m.family = to_int(info(pkg0, "CPUFamilyNumber"));
  m.model_number = to_int(info(pkg0, "CPUModelNumber"));
  if (m.vendor == "AuthenticAMD") m.zen_generation = zen_generation(m.family, m.model_number);

  m.packages =
      static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE)));
  m.dies = static_cast<unsigned>(std::max(0, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_DIE)));
  m.pus = to_list(hwloc_topology_get_topology_cpuset(topo));
  {
    hwloc_bitmap_t offline = hwloc_bitmap_alloc();
    hwloc_bitmap_andnot(offline, hwloc_topology_get_complete_cpuset(topo),
                        hwloc_topology_get_topology_cpuset(topo));
    m.offline_pus = to_list(offline);
    hwloc_bitmap_free(offline);
  }

  // NUMA nodes first: cores and L3s refer to them.
  const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; ++i) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    NumaInfo ni;
    ni.logical = n->logical_index;
    ni.os = n->os_index;
    ni.memory_bytes = n->attr->numanode.local_memory;
    ni.package = logical_of_ancestor(topo, HWLOC_OBJ_PACKAGE, n);
    m.numa.push_back(std::move(ni));
  }

  const int nl3 = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L3CACHE);
  for (int i = 0; i < nl3; ++i) {
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L3CACHE, static_cast<unsigned>(i));
    L3Info l3;
    l3.logical = c->logical_index;
    l3.size_bytes = c->attr->cache.size;
    l3.package = logical_of_ancestor(topo, HWLOC_OBJ_PACKAGE, c);
    l3.pus = to_list(c->cpuset);
    m.l3.push_back(std::move(l3));
  }

  // Cores (or PUs standing in for cores when a topology has no Core level).
  const hwloc_obj_type_t core_type =
      hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  const int ncores = hwloc_get_nbobjs_by_type(topo, core_type);
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, core_type, static_cast<unsigned>(i));
    CoreInfo ci;
    ci.logical = c->logical_index;
    ci.os = c->os_index;
    hwloc_obj_t pu = nullptr;
    while ((pu = hwloc_get_next_obj_inside_cpuset_by_type(topo, c->cpuset, HWLOC_OBJ_PU, pu)) !=
           nullptr) {
      ci.pus.push_back(pu->os_index);
    }
    ci.package = logical_of_ancestor(topo, HWLOC_OBJ_PACKAGE, c);
    ci.die = logical_of_ancestor(topo, HWLOC_OBJ_DIE, c);
    ci.l3 = logical_of_ancestor(topo, HWLOC_OBJ_L3CACHE, c);
    ci.numa = numa_of(topo, c);
    m.smt = std::max<unsigned>(m.smt, static_cast<unsigned>(ci.pus.size()));
    const auto index = static_cast<unsigned>(m.cores.size());
    if (ci.l3 >= 0) {
      L3Info& l3 = m.l3[static_cast<std::size_t>(ci.l3)];
      l3.cores.push_back(index);
      if (ci.numa >= 0 && std::find(l3.numa.begin(), l3.numa.end(), ci.numa) == l3.numa.end()) {
        l3.numa.push_back(ci.numa);
      }
    }
    m.cores.push_back(std::move(ci));
  }
  // A node "has CPUs" when it is the NUMA node of some core; the others are memory-only.
  for (const CoreInfo& c : m.cores) {
    if (c.numa >= 0) {
      auto& pus = m.numa[static_cast<std::size_t>(c.numa)].pus;
      pus.insert(pus.end(), c.pus.begin(), c.pus.end());
    }
  }
  for (NumaInfo& n : m.numa) std::sort(n.pus.begin(), n.pus.end());
  for (std::size_t i = 0; i < m.l3.size(); ++i) {
    for (const int n : m.l3[i].numa)
      m.numa[static_cast<std::size_t>(n)].l3.push_back(static_cast<int>(i));
  }

  // Core kinds (hybrid parts such as Zen 5 + Zen 5c).
  const int nkinds = hwloc_cpukinds_get_nr(topo, 0);
  for (int k = 0; k < nkinds; ++k) {
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int efficiency = -1;
    unsigned nr_infos = 0;
    hwloc_info_s* infos = nullptr;
    if (hwloc_cpukinds_get_info(topo, static_cast<unsigned>(k), set, &efficiency, &nr_infos, &infos,
                                0) == 0) {
      CoreKind kind;
      kind.efficiency = efficiency;
      kind.pus = to_list(set);
      for (unsigned j = 0; j < nr_infos; ++j) {
        if (std::string_view(infos[j].name) == "CoreType") kind.name = infos[j].value;
      }
      if (kind.name.empty()) kind.name = "kind " + std::to_string(k);
      m.core_kinds.push_back(std::move(kind));
    }
    hwloc_bitmap_free(set);
  }
  if (m.core_kinds.size() > 1) {
    for (CoreInfo& c : m.cores) {
      for (std::size_t k = 0; k < m.core_kinds.size(); ++k) {
        const auto& pus = m.core_kinds[k].pus;
        if (!c.pus.empty() && std::binary_search(pus.begin(), pus.end(), c.pus.front())) {
          c.kind = static_cast<int>(k);
        }
      }
    }
  }

  // NUMA distances: the first matrix hwloc has over NUMA nodes (latency preferred).
  {
    unsigned nr = 4;
    hwloc_distances_s* dists[4] = {};
    if (hwloc_distances_get_by_type(topo, HWLOC_OBJ_NUMANODE, &nr, dists, 0, 0) == 0) {
      nr = std::min(nr, 4u);
      hwloc_distances_s* pick = nullptr;
      for (unsigned i = 0; i < nr; ++i) {
        if (pick == nullptr || (dists[i]->kind & HWLOC_DISTANCES_KIND_MEANS_LATENCY) != 0) {
          if (pick == nullptr || (pick->kind & HWLOC_DISTANCES_KIND_MEANS_LATENCY) == 0)
            pick = dists[i];
        }
      }
      if (pick != nullptr) {
        const char* name = hwloc_distances_get_name(topo, pick);
        m.distances_name = name != nullptr ? name : "distances";
        for (unsigned i = 0; i < pick->nbobjs; ++i)
          m.distance_nodes.push_back(pick->objs[i]->os_index);
        for (unsigned i = 0; i < pick->nbobjs; ++i) {
          std::vector<std::uint64_t> row;
          for (unsigned j = 0; j < pick->nbobjs; ++j)
            row.push_back(pick->values[i * pick->nbobjs + j]);
          m.distances.push_back(std::move(row));
        }
      }
      for (unsigned i = 0; i < nr; ++i) hwloc_distances_release(topo, dists[i]);
    }
  }

  // Allowed CPUs: what cgroups allow, narrowed to the calling thread's affinity (taskset).
  if (m.this_system) {
    hwloc_bitmap_t allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_THREAD) == 0 && !hwloc_bitmap_iszero(bound)) {
      hwloc_bitmap_and(allowed, allowed, bound);
    }
    m.allowed_pus = to_list(allowed);
    hwloc_bitmap_free(bound);
    hwloc_bitmap_free(allowed);
    m.is_vm = cpuinfo_has_hypervisor_flag();
  } else {
    m.allowed_pus = m.pus;
  }

  collect_nics(topo, m);
  for (NicInfo& nic : m.nics) {
    for (const int n : nic.numa) m.numa[static_cast<std::size_t>(n)].nics.push_back(nic.name);
    if (m.this_system) collect_irqs(nic);
  }

  // Guesses. L3-as-NUMA: several L3s per package and every CPU node is exactly one L3.
  const unsigned cpu_nodes = m.numa_nodes_with_cpus();
  if (m.l3.size() > m.packages && cpu_nodes == m.l3.size()) {
    m.l3_as_numa = std::all_of(m.numa.begin(), m.numa.end(), [&](const NumaInfo& n) {
      return n.pus.empty() || std::any_of(m.l3.begin(), m.l3.end(),
                                          [&](const L3Info& l3) { return l3.pus == n.pus; });
    });
  }
  if (!m.l3_as_numa && m.packages > 0) {
    if (cpu_nodes == 1 && m.packages > 1) {
      m.nps_guess = 0;
    } else {
      std::map<int, unsigned> per_package;
      for (const NumaInfo& n : m.numa) {
        if (!n.pus.empty()) ++per_package[n.package];
      }
      const unsigned first = per_package.empty() ? 0 : per_package.begin()->second;
      const bool uniform = per_package.size() == m.packages && per_package.count(-1) == 0 &&
                           std::all_of(per_package.begin(), per_package.end(),
                                       [&](const auto& kv) { return kv.second == first; });
      if (uniform && (first == 1 || first == 2 || first == 4))
        m.nps_guess = static_cast<int>(first);
    }
  }

  add_warnings(m);
  return m;
}

}  // namespace kvlab::topo
