// Shared helpers for the topology suite: loading models, running hwloc-distrib for reference,
// and the planner's invariants checked on any model (used by the synthetic and the recorded-machine
// tests alike).
#pragma once

#include <doctest/doctest.h>
#include <hwloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "topology/topology.hpp"

namespace kvlab::topo::testing {

inline std::string topologies_dir() {
  const char* d = std::getenv("KVLAB_TOPOLOGIES");
  return d != nullptr ? d : "";
}

inline bool have_topologies() {
  std::error_code ec;
  return !topologies_dir().empty() && std::filesystem::is_directory(topologies_dir(), ec);
}

inline Model load(const std::string& input) {
  std::string error;
  std::optional<Model> m = load_model(input, &error);
  INFO("loading " << input << ": " << error);
  REQUIRE(m.has_value());
  return std::move(*m);
}

inline std::vector<unsigned> cpus_of(const PlanResult& r) {
  std::vector<unsigned> out;
  for (const auto& w : r.workers) out.insert(out.end(), w.cpus.begin(), w.cpus.end());
  return out;
}

// `hwloc-distrib --single n -i INPUT`, each line parsed into the single PU it names.
// Returns an empty vector when the tool is not available (HWLOC_DISTRIB unset).
inline std::vector<unsigned> hwloc_distrib_single(const std::string& input, unsigned n) {
  std::vector<unsigned> out;
  const char* tool = std::getenv("HWLOC_DISTRIB");
  if (tool == nullptr || *tool == '\0') return out;
  std::string in = input.rfind("synthetic:", 0) == 0 ? input.substr(10) : input;
  const std::string cmd =
      std::string(tool) + " --single " + std::to_string(n) + " -i '" + in + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char line[4096];
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::string s(line);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (s.empty()) continue;
    if (hwloc_bitmap_sscanf(set, s.c_str()) == 0)
      out.push_back(static_cast<unsigned>(hwloc_bitmap_first(set)));
  }
  hwloc_bitmap_free(set);
  pclose(p);
  return out;
}

// Usable cores of the model under `allowed` (cores with at least one allowed PU).
inline std::vector<int> usable_cores(const Model& m, const std::vector<unsigned>& allowed) {
  std::vector<int> out;
  for (std::size_t i = 0; i < m.cores.size(); ++i) {
    for (const unsigned pu : m.cores[i].pus) {
      if (std::binary_search(allowed.begin(), allowed.end(), pu)) {
        out.push_back(static_cast<int>(i));
        break;
      }
    }
  }
  return out;
}

// The fewest L3 domains that can hold n workers when each L3 offers `cap(l3)` places.
inline std::size_t fewest_l3(const std::vector<std::size_t>& capacities, unsigned n) {
  std::vector<std::size_t> c = capacities;
  std::sort(c.rbegin(), c.rend());
  std::size_t sum = 0;
  for (std::size_t k = 0; k < c.size(); ++k) {
    sum += c[k];
    if (sum >= n) return k + 1;
  }
  return c.size();
}

// Worker counts per object at one level must differ by at most one. Only meaningful on symmetric
// machines with the full allowed set (hwloc_distrib balances by PU weight).
inline void check_balanced(const Model& m, const PlanResult& r, const char* level,
                           int (*key)(const Model&, const CoreInfo&), std::size_t objects) {
  std::map<int, unsigned> count;
  for (std::size_t i = 0; i < objects; ++i) count[static_cast<int>(i)] = 0;
  for (const auto& w : r.workers) {
    const int core = m.core_of_pu(w.cpus.front());
    ++count[key(m, m.cores[static_cast<std::size_t>(core)])];
  }
  unsigned lo = ~0u;
  unsigned hi = 0;
  for (const auto& kv : count) {
    lo = std::min(lo, kv.second);
    hi = std::max(hi, kv.second);
  }
  INFO("level " << level << ": min " << lo << " max " << hi);
  CHECK(hi - lo <= 1);
}

// The planner invariants on one model and allowed set. `symmetric`: every L3 has the
// same number of cores and the allowed set is the whole machine (enables the ±1 balance check
// and the comparison with hwloc-distrib).
inline void check_plan_invariants(const Model& m, const std::vector<unsigned>& allowed,
                                  bool symmetric, const std::string& input) {
  const std::vector<int> cores = usable_cores(m, allowed);
  std::size_t usable_pus = 0;
  for (const int c : cores) {
    for (const unsigned pu : m.cores[static_cast<std::size_t>(c)].pus) {
      usable_pus += std::binary_search(allowed.begin(), allowed.end(), pu) ? 1 : 0;
    }
  }
  const auto nc = static_cast<unsigned>(cores.size());
  const auto np = static_cast<unsigned>(usable_pus);
  std::set<unsigned> ns = {1, 2, 3, std::max(1u, nc / 2 + 1), nc, nc + 1, np, np + 3};

  for (const char* policy : {"compact", "scatter", "per-l3:pin"}) {
    if (std::string_view(policy) == "per-l3:pin" && m.l3.empty()) continue;
    for (const char* smt : {"auto", "on", "off"}) {
      for (const unsigned n : ns) {
        CAPTURE(input);
        CAPTURE(policy);
        CAPTURE(smt);
        CAPTURE(n);
        const PlanResult r = plan(m, allowed, n, policy, smt);
        REQUIRE_MESSAGE(r.ok, r.error);
        REQUIRE(r.workers.size() == n);
        std::vector<unsigned> pus;
        std::set<int> used_cores;
        for (const auto& w : r.workers) {
          REQUIRE(w.cpus.size() == 1);
          CHECK(std::binary_search(allowed.begin(), allowed.end(), w.cpus.front()));
          CHECK(!w.reason.empty());
          pus.push_back(w.cpus.front());
          used_cores.insert(m.core_of_pu(w.cpus.front()));
        }
        const unsigned places = std::string_view(smt) == "off" ? nc : np;
        const std::set<unsigned> distinct(pus.begin(), pus.end());
        // No CPU is reused until n exceeds the places.
        if (std::string_view(policy) != "per-l3:pin") {
          CHECK(distinct.size() == std::min(n, places));
        }
        // SMT off, and SMT auto while cores remain: no core gets two workers.
        if (std::string_view(smt) != "on" && n <= nc && std::string_view(policy) != "per-l3:pin") {
          CHECK(used_cores.size() == n);
        }
        if (std::string_view(smt) == "off") {
          for (const unsigned pu : pus) {
            const auto& c = m.cores[static_cast<std::size_t>(m.core_of_pu(pu))];
            // The first allowed PU of its core.
            unsigned first = pu;
            for (const unsigned p : c.pus) {
              if (std::binary_search(allowed.begin(), allowed.end(), p)) {
                first = p;
                break;
              }
            }
            CHECK(pu == first);
          }
        }
        if (std::string_view(policy) == "compact" && !m.l3.empty() && n <= places) {
          std::map<int, std::size_t> cap;
          for (const int c : cores) {
            const auto& core = m.cores[static_cast<std::size_t>(c)];
            std::size_t k = 0;
            for (const unsigned p : core.pus)
              k += std::binary_search(allowed.begin(), allowed.end(), p) ? 1 : 0;
            const bool per_pu =
                std::string_view(smt) == "on" || (std::string_view(smt) == "auto" && n > nc);
            cap[core.l3] += per_pu ? k : 1;
          }
          std::vector<std::size_t> capacities;
          for (const auto& kv : cap) capacities.push_back(kv.second);
          std::set<int> l3s;
          for (const unsigned pu : pus)
            l3s.insert(m.cores[static_cast<std::size_t>(m.core_of_pu(pu))].l3);
          CHECK(l3s.size() == fewest_l3(capacities, n));
        }
        if (std::string_view(policy) == "scatter" && symmetric && n <= np) {
          check_balanced(
              m, r, "package", [](const Model&, const CoreInfo& c) { return c.package; },
              m.packages);
          check_balanced(
              m, r, "NUMA", [](const Model&, const CoreInfo& c) { return c.numa; },
              m.numa_nodes_with_cpus());
          if (!m.l3.empty()) {
            check_balanced(
                m, r, "L3", [](const Model&, const CoreInfo& c) { return c.l3; }, m.l3.size());
          }
          if (m.dies > 0)
            check_balanced(
                m, r, "die", [](const Model&, const CoreInfo& c) { return c.die; }, m.dies);
          check_balanced(
              m, r, "core",
              [](const Model& mm, const CoreInfo& c) {
                return static_cast<int>(&c - mm.cores.data());
              },
              m.cores.size());
        }
        if (std::string_view(policy) == "per-l3:pin") {
          // Worker i sits in L3 number (i mod count) and a PU is reused only once its L3 is full.
          std::map<int, std::set<unsigned>> per_l3;
          for (const unsigned pu : pus)
            per_l3[m.cores[static_cast<std::size_t>(m.core_of_pu(pu))].l3].insert(pu);
          std::set<int> l3_with_cpus;
          for (const int c : cores) l3_with_cpus.insert(m.cores[static_cast<std::size_t>(c)].l3);
          CHECK(per_l3.size() == std::min<std::size_t>(n, l3_with_cpus.size()));
        }
      }
    }
  }

  // scatter == hwloc-distrib --single n (SMT on; and SMT auto while n <= cores, equal SMT widths).
  if (symmetric) {
    for (const unsigned n : {1u, 5u, nc / 3 + 1, nc}) {
      if (std::getenv("HWLOC_DISTRIB") == nullptr) break;  // tool not installed
      const std::vector<unsigned> want = hwloc_distrib_single(input, n);
      REQUIRE(want.size() == n);
      CAPTURE(input);
      CAPTURE(n);
      const PlanResult on = plan(m, allowed, n, "scatter", "on");
      REQUIRE(on.ok);
      CHECK(cpus_of(on) == want);
      const PlanResult autosmt = plan(m, allowed, n, "scatter", "auto");
      REQUIRE(autosmt.ok);
      CHECK(cpus_of(autosmt) == want);
    }
  }

  for (const unsigned n : {1u, 2u, 7u, 100u}) {
    CAPTURE(input);
    CAPTURE(n);
    // per-l3: each worker stays inside one L3, and L3s are not doubled up before all have one.
    if (!m.l3.empty()) {
      for (const char* smt : {"auto", "off"}) {
        const PlanResult r = plan(m, allowed, n, "per-l3", smt);
        REQUIRE_MESSAGE(r.ok, r.error);
        std::set<int> l3s;
        for (const auto& w : r.workers) {
          REQUIRE(!w.cpus.empty());
          const int l3 = m.cores[static_cast<std::size_t>(m.core_of_pu(w.cpus.front()))].l3;
          const auto& l3pus = m.l3[static_cast<std::size_t>(l3)].pus;
          for (const unsigned pu : w.cpus) {
            CHECK(std::binary_search(l3pus.begin(), l3pus.end(), pu));
            CHECK(std::binary_search(allowed.begin(), allowed.end(), pu));
          }
          l3s.insert(l3);
        }
        std::set<int> l3_with_cpus;
        for (const int c : cores) l3_with_cpus.insert(m.cores[static_cast<std::size_t>(c)].l3);
        CHECK(l3s.size() == std::min<std::size_t>(n, l3_with_cpus.size()));
      }
    }
    // per-numa: nodes with CPUs only, memory bound to the worker's node, spread before reuse.
    const PlanResult r = plan(m, allowed, n, "per-numa", "auto");
    REQUIRE_MESSAGE(r.ok, r.error);
    std::set<unsigned> nodes;
    for (const auto& w : r.workers) {
      REQUIRE(w.numa_nodes.size() == 1);
      const unsigned node = w.numa_nodes.front();
      nodes.insert(node);
      const auto it = std::find_if(m.numa.begin(), m.numa.end(),
                                   [&](const NumaInfo& x) { return x.os == node; });
      REQUIRE(it != m.numa.end());
      CHECK(!it->pus.empty());
      for (const unsigned pu : w.cpus) {
        CHECK(std::binary_search(it->pus.begin(), it->pus.end(), pu));
        CHECK(std::binary_search(allowed.begin(), allowed.end(), pu));
      }
    }
    std::set<int> nodes_with_cpus;
    for (const int c : cores) nodes_with_cpus.insert(m.cores[static_cast<std::size_t>(c)].numa);
    CHECK(nodes.size() == std::min<std::size_t>(n, nodes_with_cpus.size()));
  }
}

// A restricted allowed set: the second half of the PUs plus the first PU (an uneven set that
// cuts through L3s and cores), for the "restricted allowed sets are respected" invariant.
inline std::vector<unsigned> restricted_allowed(const Model& m) {
  std::vector<unsigned> out;
  out.push_back(m.pus.front());
  for (std::size_t i = m.pus.size() / 2 + 1; i < m.pus.size(); ++i) out.push_back(m.pus[i]);
  if (m.pus.size() > 4) out.push_back(m.pus[m.pus.size() / 4]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kvlab::topo::testing
