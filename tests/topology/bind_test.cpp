// Binding on the live machine: plan_live() + bind_current_thread() really move threads, checked
// with the kernel's sched_getaffinity. Also run by meson under `taskset -c 1` with
// KVLAB_EXPECT_ALLOWED=1, where the plan must stay inside CPU 1.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "topology/placement.hpp"
#include "topology/topology.hpp"

namespace {

using namespace kvlab::topo;

std::vector<unsigned> affinity() {
  std::vector<unsigned> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

// Binds in a fresh thread (so the test's own thread keeps its affinity) and returns what the
// kernel reports afterwards, or the binding error.
struct BindOutcome {
  bool ok = false;
  std::string error;
  std::vector<unsigned> cpus;
};

BindOutcome bind_in_thread(const WorkerPlacement& p) {
  BindOutcome out;
  std::thread t([&] {
    out.ok = bind_current_thread(p, &out.error);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
      for (unsigned c = 0; c < CPU_SETSIZE; ++c) {
        if (CPU_ISSET(c, &set)) out.cpus.push_back(c);
      }
    }
  });
  t.join();
  return out;
}

}  // namespace

TEST_CASE("the live model is this machine and its allowed CPUs are the process affinity") {
  std::string error;
  const auto m = load_model("live", &error);
  REQUIRE_MESSAGE(m.has_value(), error);
  CHECK(m->this_system);
  CHECK(m->kind == SourceKind::kLive);
  CHECK(m->allowed_pus == affinity());
  CHECK(!m->cores.empty());
  CHECK(m->summary() == live_topology_summary());
}

TEST_CASE("a compact worker is pinned to one allowed CPU and the kernel agrees") {
  const PlanResult r = plan_live(1, "compact");
  REQUIRE_MESSAGE(r.ok, r.error);
  REQUIRE(r.workers.size() == 1);
  REQUIRE(r.workers[0].cpus.size() == 1);
  const BindOutcome b = bind_in_thread(r.workers[0]);
  REQUIRE_MESSAGE(b.ok, b.error);
  CHECK(b.cpus == r.workers[0].cpus);
}

TEST_CASE("every scatter worker binds in its own thread to its own CPU") {
  const unsigned n = static_cast<unsigned>(affinity().size());
  const PlanResult r = plan_live(n, "scatter", "auto");
  REQUIRE_MESSAGE(r.ok, r.error);
  std::vector<unsigned> seen;
  for (const WorkerPlacement& w : r.workers) {
    const BindOutcome b = bind_in_thread(w);
    REQUIRE_MESSAGE(b.ok, b.error);
    CHECK(b.cpus == w.cpus);
    seen.push_back(w.cpus.front());
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == affinity());  // n workers on n allowed CPUs: each CPU once
}

TEST_CASE("a per-numa worker binds its CPUs and its memory to its node") {
  const PlanResult r = plan_live(1, "per-numa");
  REQUIRE_MESSAGE(r.ok, r.error);
  REQUIRE(r.workers[0].numa_nodes.size() == 1);
  const BindOutcome b = bind_in_thread(r.workers[0]);
  REQUIRE_MESSAGE(b.ok, b.error);
  CHECK(b.cpus == r.workers[0].cpus);
}

TEST_CASE("a per-l3 worker may run anywhere in its L3") {
  const PlanResult r = plan_live(1, "per-l3");
  REQUIRE_MESSAGE(r.ok, r.error);
  const BindOutcome b = bind_in_thread(r.workers[0]);
  REQUIRE_MESSAGE(b.ok, b.error);
  CHECK(b.cpus == r.workers[0].cpus);
}

TEST_CASE("placement none leaves the thread where it was") {
  const PlanResult r = plan_live(2, "none");
  REQUIRE(r.ok);
  const BindOutcome b = bind_in_thread(r.workers[0]);
  CHECK(b.ok);
  CHECK(b.cpus == affinity());
}

TEST_CASE("avoid_cpus keeps the workers off the given CPUs") {
  const std::vector<unsigned> mine = affinity();
  if (mine.size() < 2) return;  // nothing to avoid without emptying the set
  const std::string avoid = std::to_string(mine.front());
  const PlanResult r = plan_live(3, "compact", "auto", avoid);
  REQUIRE_MESSAGE(r.ok, r.error);
  for (const WorkerPlacement& w : r.workers) {
    for (const unsigned c : w.cpus) CHECK(c != mine.front());
  }
  const PlanResult none_left = plan_live(1, "compact", "auto", format_cpu_list(mine));
  CHECK_FALSE(none_left.ok);
  CHECK(none_left.error.find("no CPUs left") != std::string::npos);
  CHECK_FALSE(plan_live(1, "compact", "auto", "x-y").ok);
}

TEST_CASE("bad policies and impossible CPUs fail with a message") {
  const PlanResult bad = plan_live(1, "bogus");
  CHECK_FALSE(bad.ok);
  CHECK(!bad.error.empty());
  CHECK(!bad.topology_summary.empty());
  std::string error;
  const BindOutcome b = bind_in_thread({0, {4000}, {}, "no such CPU"});
  CHECK_FALSE(b.ok);
  CHECK(!b.error.empty());
}

TEST_CASE("plan_live refuses when HWLOC_XMLFILE points hwloc at another machine") {
  const char* dir = std::getenv("KVLAB_TOPOLOGIES");
  if (dir == nullptr) return;
  const std::string file = std::string(dir) + "/AMD-19h-Zen3-2xEpyc-7763.xml";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) return;
  setenv("HWLOC_XMLFILE", file.c_str(), 1);
  const PlanResult r = plan_live(2, "compact");
  const PlanResult unbound = plan_live(2, "none");  // binds nothing, so it stays allowed
  unsetenv("HWLOC_XMLFILE");
  CHECK(unbound.ok);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("HWLOC_XMLFILE") != std::string::npos);
}

TEST_CASE("under taskset the plan stays inside the allowed CPUs") {
  const char* expect = std::getenv("KVLAB_EXPECT_ALLOWED");
  if (expect == nullptr) return;  // only meaningful in the `taskset -c 1` run
  std::vector<unsigned> want;
  std::string error;
  REQUIRE(parse_cpu_list(expect, &want, &error));
  REQUIRE(affinity() == want);
  for (const char* policy : {"compact", "scatter", "per-l3", "per-l3:pin", "per-numa"}) {
    CAPTURE(policy);
    const PlanResult r = plan_live(2, policy);
    REQUIRE_MESSAGE(r.ok, r.error);
    for (const WorkerPlacement& w : r.workers) {
      CHECK(w.cpus == want);
      const BindOutcome b = bind_in_thread(w);
      REQUIRE_MESSAGE(b.ok, b.error);
      CHECK(b.cpus == want);
    }
    const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
      return w.find("may use only CPUs") != std::string::npos;
    });
    CHECK(warned);
  }
  if (want != std::vector<unsigned>{0}) {
    const PlanResult outside = plan_live(1, "explicit:0");
    CHECK_FALSE(outside.ok);
  }
}

int main(int argc, char** argv) {
  // A recorded topology exported in the developer's shell would make hwloc bind nothing.
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_SYNTHETIC");
  doctest::Context context(argc, argv);
  return context.run();
}
