// Models and plans of synthetic EPYC machines (hwloc 2.9 synthetic descriptions): golden counts,
// the NPS/L3-as-NUMA guesses, memory-only nodes, and the planner invariants.
// These need no recorded files, so they always run.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "tests/topology/topology_test_util.hpp"

namespace {

using namespace kvlab::topo;
using namespace kvlab::topo::testing;

struct Golden {
  const char* name;
  const char* description;
  unsigned packages, numa, numa_with_cpus, dies, l3, cores, pus, smt;
  int nps_guess;
  bool l3_as_numa;
  bool symmetric;
};

// Genoa: 12 CCDs x 1 CCX x 8 cores per socket. Bergamo: 8 CCDs x 2 CCX x 8 Zen 4c cores.
const Golden kMachines[] = {
    {"2x Genoa NPS1", "pack:2 [numa] die:12 l3:1(size=32MiB) core:8 pu:2", 2, 2, 2, 24, 24, 192,
     384, 2, 1, false, true},
    {"2x Genoa NPS2", "pack:2 group:2 [numa] die:6 l3:1(size=32MiB) core:8 pu:2", 2, 4, 4, 24, 24,
     192, 384, 2, 2, false, true},
    {"2x Genoa NPS4", "pack:2 group:4 [numa] die:3 l3:1(size=32MiB) core:8 pu:2(indexes=2*192:1*2)",
     2, 8, 8, 24, 24, 192, 384, 2, 4, false, true},
    {"2x Genoa L3-as-NUMA", "pack:2 die:12 l3:1(size=32MiB) [numa] core:8 pu:2", 2, 24, 24, 24, 24,
     192, 384, 2, -1, true, true},
    {"Turin 96 cores without SMT", "pack:1 [numa] die:12 l3:1(size=32MiB) core:8 pu:1", 1, 1, 1, 12,
     12, 96, 96, 1, 1, false, true},
    {"Bergamo 128 cores", "pack:1 [numa] die:8 l3:2(size=16MiB) core:8 pu:2", 1, 1, 1, 8, 16, 128,
     256, 2, 1, false, true},
    {"2 sockets, one NUMA node (NPS0)", "[numa] pack:2 l3:4 core:4 pu:2", 2, 1, 1, 0, 8, 32, 64, 2,
     0, false, true},
    {"CXL memory-only node at machine level",
     "[numa(memory=1GiB)] pack:2 [numa(memory=4GiB)] l3:2 core:4 pu:1", 2, 3, 2, 0, 4, 16, 16, 1, 1,
     false, false},
};

}  // namespace

TEST_CASE("synthetic EPYC machines have the expected counts and guesses") {
  for (const Golden& g : kMachines) {
    CAPTURE(g.name);
    const Model m = load(std::string("synthetic:") + g.description);
    CHECK(m.kind == SourceKind::kSynthetic);
    CHECK_FALSE(m.this_system);
    CHECK(m.packages == g.packages);
    CHECK(m.numa.size() == g.numa);
    CHECK(m.numa_nodes_with_cpus() == g.numa_with_cpus);
    CHECK(m.dies == g.dies);
    CHECK(m.l3.size() == g.l3);
    CHECK(m.cores.size() == g.cores);
    CHECK(m.pus.size() == g.pus);
    CHECK(m.smt == g.smt);
    CHECK(m.nps_guess == g.nps_guess);
    CHECK(m.l3_as_numa == g.l3_as_numa);
    CHECK(m.allowed_pus == m.pus);
    for (const CoreInfo& c : m.cores) CHECK(c.numa >= 0);
  }
}

TEST_CASE("a core finds its NUMA node through the nodeset wherever the node attaches") {
  // NPS4: nodes hang off groups; L3-as-NUMA: off the L3. Either way core L#8 (PUs 8 and 200 in
  // the NPS4 description) is in the first node's quarter, and in the second L3's node.
  const Model nps4 =
      load("synthetic:pack:2 group:4 [numa] die:3 l3:1 core:8 pu:2(indexes=2*192:1*2)");
  CHECK(nps4.numa[static_cast<std::size_t>(nps4.cores[8].numa)].os == 0);
  CHECK(nps4.numa[static_cast<std::size_t>(nps4.cores[24].numa)].os == 1);
  CHECK(nps4.numa[static_cast<std::size_t>(nps4.cores[191].numa)].os == 7);
  const Model l3numa = load("synthetic:pack:2 die:12 l3:1 [numa] core:8 pu:2");
  CHECK(l3numa.numa[static_cast<std::size_t>(l3numa.cores[8].numa)].logical == 1);
  for (const CoreInfo& c : l3numa.cores) CHECK(c.numa == c.l3);
}

TEST_CASE("a memory-only NUMA node gets no CPUs, a warning, and no workers") {
  const Model m = load("synthetic:[numa(memory=1GiB)] pack:2 [numa(memory=4GiB)] l3:2 core:4 pu:1");
  const auto it =
      std::find_if(m.numa.begin(), m.numa.end(), [](const NumaInfo& n) { return n.pus.empty(); });
  REQUIRE(it != m.numa.end());
  CHECK(it->package == -1);
  CHECK(std::any_of(m.warnings.begin(), m.warnings.end(),
                    [](const std::string& w) { return w.find("no CPUs") != std::string::npos; }));
  const PlanResult r = plan(m, m.allowed_pus, 6, "per-numa", "auto");
  REQUIRE(r.ok);
  for (const auto& w : r.workers) CHECK(w.numa_nodes.front() != it->os);
}

TEST_CASE("planner invariants hold on every synthetic machine") {
  for (const Golden& g : kMachines) {
    const std::string input = std::string("synthetic:") + g.description;
    const Model m = load(input);
    check_plan_invariants(m, m.allowed_pus, g.symmetric, input);
  }
}

TEST_CASE("planner invariants hold on restricted allowed sets") {
  for (const Golden& g : kMachines) {
    const std::string input = std::string("synthetic:") + g.description;
    const Model m = load(input);
    check_plan_invariants(m, restricted_allowed(m), false, input);
  }
}

TEST_CASE("compact fills one L3 before the next and puts SMT siblings last") {
  const Model m = load("synthetic:pack:2 group:4 [numa] die:3 l3:1 core:8 pu:2(indexes=2*192:1*2)");
  const PlanResult r = plan(m, m.pus, 8, "compact", "auto");
  REQUIRE(r.ok);
  CHECK(cpus_of(r) == std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7});
  const PlanResult on = plan(m, m.pus, 4, "compact", "on");
  CHECK(cpus_of(on) == std::vector<unsigned>{0, 192, 1, 193});
  // A restricted set with 3 cores left in L3 #0 and all 8 in L3 #1: 8 workers fit in L3 #1 alone.
  std::vector<unsigned> allowed{5, 6, 7};
  for (unsigned c = 8; c < 16; ++c) allowed.push_back(c);
  const PlanResult fewest = plan(m, allowed, 8, "compact", "off");
  REQUIRE(fewest.ok);
  CHECK(cpus_of(fewest) == std::vector<unsigned>{8, 9, 10, 11, 12, 13, 14, 15});
}

TEST_CASE("explicit placements use the listed CPUs in order and reject foreign ones") {
  const Model m = load("synthetic:pack:1 [numa] die:2 l3:1 core:4 pu:2");
  const PlanResult r = plan(m, m.pus, 5, "explicit:3,1-2", "auto");
  REQUIRE(r.ok);
  CHECK(cpus_of(r) == std::vector<unsigned>{1, 2, 3, 1, 2});
  CHECK(!r.warnings.empty());  // 5 workers on 3 CPUs
  const PlanResult foreign = plan(m, m.pus, 1, "explicit:99", "auto");
  CHECK_FALSE(foreign.ok);
  CHECK(foreign.error.find("99") != std::string::npos);
  const PlanResult outside = plan(m, {0, 1}, 1, "explicit:2", "auto");
  CHECK_FALSE(outside.ok);
  CHECK(outside.error.find("allowed") != std::string::npos);
}

TEST_CASE("bad policies, SMT modes and empty allowed sets are errors, not crashes") {
  const Model m = load("synthetic:pack:1 [numa] l3:1 core:2 pu:1");
  CHECK_FALSE(plan(m, m.pus, 2, "fastest", "auto").ok);
  CHECK(plan(m, m.pus, 2, "fastest", "auto").error.find("unknown placement policy") !=
        std::string::npos);
  CHECK_FALSE(plan(m, m.pus, 2, "compact", "maybe").ok);
  CHECK_FALSE(plan(m, m.pus, 0, "compact", "auto").ok);
  CHECK_FALSE(plan(m, {}, 2, "compact", "auto").ok);
  CHECK_FALSE(plan(m, {17}, 2, "scatter", "auto").ok);
  CHECK_FALSE(plan(m, m.pus, 2, "explicit:", "auto").ok);
  const PlanResult none = plan(m, m.pus, 3, "none", "auto");
  REQUIRE(none.ok);
  for (const auto& w : none.workers) CHECK(w.cpus.empty());
  CHECK(plan(m, m.pus, 2, "ccx", "auto").ok);
  CHECK(plan(m, m.pus, 2, "ccx:pin", "auto").ok);
}

TEST_CASE("apply refuses to bind on a synthetic machine and says why") {
  const Model m = load("synthetic:pack:1 [numa] l3:1 core:2 pu:1");
  const PlanResult r = plan(m, m.pus, 1, "compact", "auto");
  REQUIRE(r.ok);
  std::string error;
  CHECK_FALSE(apply(m, r.workers.front(), &error));
  CHECK(error.find("not from this machine") != std::string::npos);
}

TEST_CASE("the JSON report carries schema topology-report/1 and list-string CPU sets") {
  const Model m =
      load("synthetic:pack:2 group:4 [numa] die:3 l3:1(size=32MiB) core:8 pu:2(indexes=2*192:1*2)");
  const std::string json = report_json(m);
  for (const char* needle :
       {"\"schema\": \"topology-report/1\"", "\"kind\": \"synthetic\"", "\"this_system\": false",
        "\"packages\": 2", "\"numa_nodes\": 8", "\"numa_nodes_with_cpus\": 8", "\"l3\": 24",
        "\"cores\": 192", "\"pus\": 384", "\"smt\": 2", "\"nps_guess\": 4", "\"l3_as_numa\": false",
        "\"cpus\": \"0-23,192-215\"", "\"zen_generation\": null", "\"distances\": null",
        "\"nics\": [", "\"warnings\": ["}) {
    CAPTURE(needle);
    CHECK(json.find(needle) != std::string::npos);
  }
}
