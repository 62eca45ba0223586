// Models and plans of the recorded EPYC machines in tests/topology/data/ (hwloc XML; meson passes
// the folder as KVLAB_TOPOLOGIES): golden counts for every file, and the planner's
// invariants on each. The data is part of the repository, so a missing folder is an error, not a
// skip.
#define DOCTEST_CONFIG_IMPLEMENT
#include "tests/topology/topology_test_util.hpp"

namespace {

using namespace kvlab::topo;
using namespace kvlab::topo::testing;

struct Golden {
  const char* file;
  const char* cpu_model;
  const char* zen;
  unsigned packages, numa, dies, l3, cores, pus, smt;
  int nps_guess;
  std::uint64_t l3_bytes;  // size of L3 L#0
  unsigned core_kinds;     // hwloc cpukinds (only hybrid parts report them from XML)
  bool has_distances;
  bool symmetric;
};

const Golden kFiles[] = {
    {"AMD-17h-Zen-2xEpyc-7451.xml", "AMD EPYC 7451", "Zen", 2, 8, 0, 16, 48, 96, 2, 4, 8ull << 20,
     0, false, true},
    {"AMD-19h-Zen3-2xEpyc-7763.xml", "AMD EPYC 7763", "Zen 3", 2, 2, 0, 16, 128, 128, 1, 1,
     32ull << 20, 0, false, true},
    {"AMD-19h-Zen4-2xEpyc-9654.xml", "AMD EPYC 9654", "Zen 4", 2, 2, 24, 24, 192, 384, 2, 1,
     32ull << 20, 0, false, true},
    {"AMD-1Ah-Zen5StrixPoint-RyzenAI9HX370.xml", "AMD Ryzen AI 9 HX 370", "Zen 5", 1, 1, 0, 2, 12,
     24, 2, 1, 16ull << 20, 2, false, false},
    {"synthetic-2xGenoa-NPS4.xml", "", "", 2, 8, 24, 24, 192, 384, 2, 4, 32ull << 20, 0, true,
     true},
};

std::string path_of(const char* file) {
  return topologies_dir() + "/" + file;
}

}  // namespace

TEST_CASE("every recorded topology file has golden counts") {
  for (const auto& e : std::filesystem::directory_iterator(topologies_dir())) {
    if (e.path().extension() != ".xml") continue;
    const std::string name = e.path().filename().string();
    CAPTURE(name);
    CHECK(std::any_of(std::begin(kFiles), std::end(kFiles),
                      [&](const Golden& g) { return name == g.file; }));
  }
}

TEST_CASE("recorded EPYC machines have the expected counts") {
  for (const Golden& g : kFiles) {
    CAPTURE(g.file);
    const Model m = load(path_of(g.file));
    CHECK(m.kind == SourceKind::kXml);
    CHECK_FALSE(m.this_system);
    CHECK(m.cpu_model == g.cpu_model);
    CHECK(m.zen_generation == g.zen);
    CHECK(m.packages == g.packages);
    CHECK(m.numa.size() == g.numa);
    CHECK(m.numa_nodes_with_cpus() == g.numa);
    CHECK(m.dies == g.dies);
    CHECK(m.l3.size() == g.l3);
    CHECK(m.cores.size() == g.cores);
    CHECK(m.pus.size() == g.pus);
    CHECK(m.smt == g.smt);
    CHECK(m.nps_guess == g.nps_guess);
    CHECK_FALSE(m.l3_as_numa);
    CHECK(m.l3.front().size_bytes == g.l3_bytes);
    CHECK((g.core_kinds == 0 ? m.core_kinds.size() <= 1 : m.core_kinds.size() == g.core_kinds));
    CHECK(m.distances.empty() != g.has_distances);
    for (const CoreInfo& c : m.cores) {
      CHECK(c.numa >= 0);
      CHECK(c.l3 >= 0);
    }
  }
}

TEST_CASE("the 2x EPYC 9654 has 12 CCX of 8 cores per socket, SMT siblings 192 apart") {
  const Model m = load(path_of("AMD-19h-Zen4-2xEpyc-9654.xml"));
  for (const L3Info& l3 : m.l3) CHECK(l3.cores.size() == 8);
  CHECK(format_cpu_list(m.l3[0].pus) == "0-7,192-199");
  CHECK(format_cpu_list(m.l3[12].pus) == "96-103,288-295");
  CHECK(format_cpu_list(m.numa[1].pus) == "96-191,288-383");
  CHECK(m.cores[0].pus == std::vector<unsigned>{0, 192});
  CHECK(m.summary() ==
        "2 packages, 2 NUMA nodes, 24 L3, 192 cores, 384 PUs (AMD EPYC 9654, Zen 4)");
}

TEST_CASE("the Ryzen AI 9 HX 370 has two L3s of different sizes and two core kinds") {
  const Model m = load(path_of("AMD-1Ah-Zen5StrixPoint-RyzenAI9HX370.xml"));
  REQUIRE(m.l3.size() == 2);
  CHECK(m.l3[0].size_bytes == 16ull << 20);
  CHECK(m.l3[1].size_bytes == 8ull << 20);
  CHECK(m.l3[0].cores.size() == 4);
  CHECK(m.l3[1].cores.size() == 8);
  CHECK(m.core_kinds.size() == 2);
}

TEST_CASE("the synthetic 2x Genoa NPS4 file carries its NUMA latency matrix") {
  const Model m = load(path_of("synthetic-2xGenoa-NPS4.xml"));
  REQUIRE(m.distances.size() == 8);
  CHECK(m.distances_name == "NUMALatency");
  CHECK(m.distances[0][0] == 10);
  CHECK(m.distances[0][3] == 12);
  CHECK(m.distances[0][4] == 32);
  CHECK(m.distances[7][4] == 12);
  const PlanResult r = plan(m, m.allowed_pus, 16, "per-numa", "auto");
  REQUIRE(r.ok);
  CHECK(format_cpu_list(r.workers[0].cpus) == "0-23,192-215");
  CHECK(r.workers[7].numa_nodes == std::vector<unsigned>{7});
  CHECK(r.workers[8].numa_nodes == std::vector<unsigned>{0});
}

TEST_CASE("planner invariants hold on every recorded machine") {
  for (const Golden& g : kFiles) {
    const Model m = load(path_of(g.file));
    check_plan_invariants(m, m.allowed_pus, g.symmetric, path_of(g.file));
  }
}

TEST_CASE("planner invariants hold on recorded machines with restricted allowed sets") {
  for (const Golden& g : kFiles) {
    const Model m = load(path_of(g.file));
    check_plan_invariants(m, restricted_allowed(m), false, path_of(g.file));
  }
}

TEST_CASE("apply refuses to bind on a recorded machine and names the file") {
  const Model m = load(path_of("AMD-19h-Zen3-2xEpyc-7763.xml"));
  const PlanResult r = plan(m, m.allowed_pus, 2, "scatter", "auto");
  REQUIRE(r.ok);
  std::string error;
  CHECK_FALSE(apply(m, r.workers[0], &error));
  CHECK(error.find("AMD-19h-Zen3-2xEpyc-7763.xml") != std::string::npos);
}

int main(int argc, char** argv) {
  if (!have_topologies()) {
    std::fprintf(stderr, "recorded topologies not found at '%s' (KVLAB_TOPOLOGIES)\n",
                 topologies_dir().c_str());
    return 1;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
