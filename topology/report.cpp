// Rendering a Model and a plan as text tables or JSON (schemas topology-report/1 and
// topology-plan/1). CPU sets are Linux list strings ("0-7,192-199") of OS indexes; objects are
// named by logical index (L#) except NUMA nodes and PUs, which users meet by OS index (P#) in
// numactl, taskset and /sys.
#include <algorithm>
#include <cstdio>

#include "topology/json_writer.hpp"
#include "topology/topology.hpp"

namespace kvlab::topo {

namespace {

// Left-aligned columns, two spaces apart, indented by two.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<std::size_t> width;
    for (const auto& row : rows_) {
      if (width.size() < row.size()) width.resize(row.size(), 0);
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line = " ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        line += ' ';
        line += row[i];
        if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 1, ' ');
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string size_text(std::uint64_t bytes) {
  char buf[32];
  if (bytes == 0) return "-";
  if (bytes >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu KiB", static_cast<unsigned long long>(bytes >> 10));
  }
  return buf;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::vector<unsigned> numa_os(const Model& m, const std::vector<int>& nodes) {
  std::vector<unsigned> out;
  for (const int n : nodes) out.push_back(m.numa[static_cast<std::size_t>(n)].os);
  return out;
}

// "P#0-3" for display tables; "-" for none.
std::string node_text(const Model& m, const std::vector<int>& nodes) {
  const std::vector<unsigned> os = numa_os(m, nodes);
  return os.empty() ? "-" : "P#" + format_cpu_list(os);
}

std::string source_line(const Model& m) {
  std::string s = source_kind_name(m.kind);
  if (m.kind != SourceKind::kLive) s += " " + m.source;
  s += m.this_system ? " (this machine)"
                     : " (not this machine: plans are for display, binding is refused)";
  return s;
}

std::string or_dash(const std::string& s) {
  return s.empty() ? "-" : s;
}

std::string nps_text(const Model& m) {
  if (m.nps_guess < 0) return "unknown";
  return "NPS" + std::to_string(m.nps_guess);
}

void write_source(JsonWriter& j, const Model& m) {
  j.key("source").begin_object();
  j.field("kind", source_kind_name(m.kind));
  j.field("this_system", m.this_system);
  j.field("description", m.source);
  j.end_object();
}

}  // namespace

std::string report_text(const Model& m) {
  std::string out;
  out += "Source      " + source_line(m) + "\n";
  std::string cpu = or_dash(m.cpu_model);
  std::vector<std::string> detail;
  if (!m.vendor.empty()) detail.push_back(m.vendor);
  if (m.family >= 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "family %xh model %xh", m.family, m.model_number);
    detail.push_back(buf);
  }
  if (!m.zen_generation.empty()) detail.push_back(m.zen_generation);
  if (!detail.empty()) cpu += " (" + join(detail, ", ") + ")";
  out += "CPU         " + cpu + "\n";
  out += "Summary     " + m.summary() + "\n";
  out += "Counts      packages " + std::to_string(m.packages) + ", NUMA nodes " +
         std::to_string(m.numa.size()) + " (" + std::to_string(m.numa_nodes_with_cpus()) +
         " with CPUs), dies " +
         (m.dies > 0 ? std::to_string(m.dies) : std::string("not reported")) + ", L3 " +
         std::to_string(m.l3.size()) + ", cores " + std::to_string(m.cores.size()) + ", PUs " +
         std::to_string(m.pus.size()) + ", SMT " + std::to_string(m.smt) + "-way\n";
  out += "Guesses     " + nps_text(m) + ", L3-as-NUMA " + (m.l3_as_numa ? "yes" : "no") + "\n";
  out += "Allowed     " + or_dash(format_cpu_list(m.allowed_pus)) + "\n";
  if (m.core_kinds.size() > 1) {
    std::vector<std::string> kinds;
    for (const CoreKind& k : m.core_kinds) {
      kinds.push_back(k.name + " " + format_cpu_list(k.pus) + " (efficiency " +
                      std::to_string(k.efficiency) + ")");
    }
    out += "Core kinds  " + join(kinds, "; ") + "\n";
  }

  out += "\nNUMA nodes\n";
  Table numa({"node", "package", "memory", "CPUs", "L3s", "NICs"});
  for (const NumaInfo& n : m.numa) {
    std::vector<unsigned> l3s;
    for (const int l : n.l3) l3s.push_back(static_cast<unsigned>(l));
    numa.add({"P#" + std::to_string(n.os), n.package >= 0 ? "L#" + std::to_string(n.package) : "-",
              size_text(n.memory_bytes),
              n.pus.empty() ? "none (memory only)" : format_cpu_list(n.pus),
              or_dash(format_cpu_list(l3s)), or_dash(join(n.nics, ","))});
  }
  out += numa.str();

  out += "\nL3 domains (CCX)\n";
  if (m.l3.empty()) {
    out += "  none reported\n";
  } else {
    Table l3({"L3", "size", "package", "NUMA", "cores", "CPUs"});
    for (const L3Info& l : m.l3) {
      l3.add({"L#" + std::to_string(l.logical), size_text(l.size_bytes),
              l.package >= 0 ? "L#" + std::to_string(l.package) : "-", node_text(m, l.numa),
              std::to_string(l.cores.size()), format_cpu_list(l.pus)});
    }
    out += l3.str();
  }

  out += "\nNUMA distances";
  if (m.distances.empty()) {
    out += "\n  none reported (";
    out += m.numa.size() > 1 ? "no ACPI SLIT / distance matrix in this topology" : "single node";
    out += ")\n";
  } else {
    out += " (" + m.distances_name + ")\n";
    std::vector<std::string> header{""};
    for (const unsigned n : m.distance_nodes) header.push_back("P#" + std::to_string(n));
    Table d(header);
    for (std::size_t i = 0; i < m.distances.size(); ++i) {
      std::vector<std::string> row{"P#" + std::to_string(m.distance_nodes[i])};
      for (const auto v : m.distances[i]) row.push_back(std::to_string(v));
      d.add(row);
    }
    out += d.str();
  }

  out += "\nNICs\n";
  if (m.nics.empty()) {
    out += m.kind == SourceKind::kLive ? "  none found\n"
                                       : "  none in this topology (recorded without I/O devices)\n";
  } else {
    Table t({"NIC", "PCI", "NUMA", "local CPUs", "IRQs (irq->CPUs)"});
    for (const NicInfo& nic : m.nics) {
      std::vector<std::string> irqs;
      for (const IrqInfo& irq : nic.irqs) {
        irqs.push_back(std::to_string(irq.irq) + "->" + or_dash(format_cpu_list(irq.affinity)));
      }
      std::string irq_text =
          irqs.empty() ? (m.this_system ? "none visible" : "live machine only") : join(irqs, " ");
      t.add({nic.name, or_dash(nic.pci), node_text(m, nic.numa),
             or_dash(format_cpu_list(nic.local_cpus)), irq_text});
    }
    out += t.str();
  }

  out += "\nWarnings\n";
  if (m.warnings.empty()) out += "  none\n";
  for (const std::string& w : m.warnings) out += "  - " + w + "\n";
  return out;
}

std::string report_json(const Model& m) {
  JsonWriter j;
  j.begin_object();
  j.field("schema", "topology-report/1");
  write_source(j, m);
  j.key("cpu").begin_object();
  j.field("vendor", m.vendor);
  j.field("model", m.cpu_model);
  j.field("model_raw", m.cpu_model_raw);
  if (m.zen_generation.empty()) {
    j.key("zen_generation").null();
  } else {
    j.field("zen_generation", m.zen_generation);
  }
  j.field("family", m.family);
  j.field("model_number", m.model_number);
  j.end_object();
  j.key("counts").begin_object();
  j.field("packages", m.packages);
  j.field("numa_nodes", static_cast<unsigned>(m.numa.size()));
  j.field("numa_nodes_with_cpus", m.numa_nodes_with_cpus());
  j.field("dies", m.dies);
  j.field("l3", static_cast<unsigned>(m.l3.size()));
  j.field("cores", static_cast<unsigned>(m.cores.size()));
  j.field("pus", static_cast<unsigned>(m.pus.size()));
  j.field("smt", m.smt);
  j.end_object();
  if (m.nps_guess < 0) {
    j.key("nps_guess").null();
  } else {
    j.field("nps_guess", m.nps_guess);
  }
  j.field("l3_as_numa", m.l3_as_numa);
  j.field("summary", m.summary());
  j.field("allowed_cpus", format_cpu_list(m.allowed_pus));
  j.field("offline_cpus", format_cpu_list(m.offline_pus));
  j.key("numa").begin_array();
  for (const NumaInfo& n : m.numa) {
    j.begin_object();
    j.field("os_index", n.os);
    j.field("logical_index", n.logical);
    j.field("package", n.package);
    j.field("memory_bytes", n.memory_bytes);
    j.field("cpus", format_cpu_list(n.pus));
    j.key("l3").begin_array(true);
    for (const int l : n.l3) j.value(l);
    j.end_array();
    j.key("nics").begin_array(true);
    for (const auto& nic : n.nics) j.value(nic);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("l3").begin_array();
  for (const L3Info& l : m.l3) {
    j.begin_object();
    j.field("logical_index", l.logical);
    j.field("size_bytes", l.size_bytes);
    j.field("package", l.package);
    j.field("numa", format_cpu_list(numa_os(m, l.numa)));
    j.field("cores", static_cast<unsigned>(l.cores.size()));
    j.field("cpus", format_cpu_list(l.pus));
    j.end_object();
  }
  j.end_array();
  if (m.distances.empty()) {
    j.key("distances").null();
  } else {
    j.key("distances").begin_object();
    j.field("name", m.distances_name);
    j.key("nodes").begin_array(true);
    for (const unsigned n : m.distance_nodes) j.value(n);
    j.end_array();
    j.key("matrix").begin_array();
    for (const auto& row : m.distances) {
      j.begin_array(true);
      for (const auto v : row) j.value(v);
      j.end_array();
    }
    j.end_array();
    j.end_object();
  }
  j.key("nics").begin_array();
  for (const NicInfo& nic : m.nics) {
    j.begin_object();
    j.field("name", nic.name);
    j.field("pci", nic.pci);
    j.field("numa", format_cpu_list(numa_os(m, nic.numa)));
    j.field("local_cpus", format_cpu_list(nic.local_cpus));
    j.key("irqs").begin_array();
    for (const IrqInfo& irq : nic.irqs) {
      j.begin_object()
          .field("irq", irq.irq)
          .field("cpus", format_cpu_list(irq.affinity))
          .end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("core_kinds").begin_array();
  for (const CoreKind& k : m.core_kinds) {
    j.begin_object()
        .field("name", k.name)
        .field("efficiency", k.efficiency)
        .field("cpus", format_cpu_list(k.pus))
        .end_object();
  }
  j.end_array();
  j.key("warnings").begin_array();
  for (const std::string& w : m.warnings) j.value(w);
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

std::string plan_text(const Model& m, const PlanResult& r, std::string_view policy,
                      std::string_view smt) {
  std::string out;
  out += "Plan        " + std::to_string(r.workers.size()) + " workers, placement " +
         std::string(policy) + ", smt " + std::string(smt) + "\n";
  out += "Source      " + source_line(m) + "\n";
  out += "Topology    " + r.topology_summary + "\n";
  out += "Allowed     " + or_dash(format_cpu_list(m.allowed_pus)) + "\n\n";
  Table t({"worker", "CPUs", "NUMA mem", "reason"});
  for (const WorkerPlacement& w : r.workers) {
    t.add({std::to_string(w.worker), w.cpus.empty() ? "any" : format_cpu_list(w.cpus),
           w.numa_nodes.empty() ? "-" : "P#" + format_cpu_list(w.numa_nodes), w.reason});
  }
  out += t.str();
  if (!r.warnings.empty()) {
    out += "\nWarnings\n";
    for (const std::string& w : r.warnings) out += "  - " + w + "\n";
  }
  return out;
}

std::string plan_json(const Model& m, const PlanResult& r, std::string_view policy,
                      std::string_view smt) {
  JsonWriter j;
  j.begin_object();
  j.field("schema", "topology-plan/1");
  write_source(j, m);
  j.field("policy", policy);
  j.field("smt", smt);
  j.field("ok", r.ok);
  if (!r.ok) j.field("error", r.error);
  j.field("topology_summary", r.topology_summary);
  j.field("allowed_cpus", format_cpu_list(m.allowed_pus));
  j.key("workers").begin_array();
  for (const WorkerPlacement& w : r.workers) {
    j.begin_object();
    j.field("worker", w.worker);
    j.field("cpus", format_cpu_list(w.cpus));
    j.field("numa_nodes", format_cpu_list(w.numa_nodes));
    j.field("reason", w.reason);
    j.end_object();
  }
  j.end_array();
  j.key("warnings").begin_array();
  for (const std::string& w : r.warnings) j.value(w);
  j.end_array();
  j.end_object();
  return j.str() + "\n";
}

}  // namespace kvlab::topo
