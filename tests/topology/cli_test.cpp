// The `kvlab topo` subcommand end to end: runs the real kvlab binary (KVLAB_CLI) and checks its
// output and exit status, including a run under `taskset -c 1` (TASKSET) and a time-bounded
// profile.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

struct Run {
  int status = -1;
  std::string output;  // stdout and stderr
};

Run run(const std::string& args, const std::string& prefix = "") {
  const std::string cmd = prefix + std::string(std::getenv("KVLAB_CLI")) + " " + args + " 2>&1";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, got);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string topologies() {
  const char* d = std::getenv("KVLAB_TOPOLOGIES");
  std::error_code ec;
  return d != nullptr && std::filesystem::is_directory(d, ec) ? d : "";
}

}  // namespace

TEST_CASE("kvlab topo report describes this machine as JSON") {
  const Run r = run("topo report --format json");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "\"schema\": \"topology-report/1\""));
  CHECK(contains(r.output, "\"kind\": \"live\""));
  CHECK(contains(r.output, "\"this_system\": true"));
}

TEST_CASE("kvlab topo report prints the text tables") {
  const Run r = run("topo report");
  INFO(r.output);
  CHECK(r.status == 0);
  for (const char* section :
       {"Summary", "NUMA nodes", "L3 domains (CCX)", "NUMA distances", "NICs", "Warnings"}) {
    CHECK(contains(r.output, section));
  }
}

TEST_CASE("kvlab topo report reads the recorded 2x EPYC 9654") {
  REQUIRE_FALSE(topologies().empty());  // tests/topology/data is in the repository
  const Run r = run("topo report --input " + topologies() + "/AMD-19h-Zen4-2xEpyc-9654.xml");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output,
                 "2 packages, 2 NUMA nodes, 24 L3, 192 cores, 384 PUs (AMD EPYC 9654, Zen 4)"));
  CHECK(contains(r.output, "not this machine"));
}

TEST_CASE("kvlab topo plan spreads 16 workers over the 8 nodes of a Genoa in NPS4") {
  REQUIRE_FALSE(topologies().empty());  // tests/topology/data is in the repository
  const Run r = run("topo plan --input " + topologies() +
                    "/synthetic-2xGenoa-NPS4.xml --threads 16 --placement per-numa --format json");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "\"schema\": \"topology-plan/1\""));
  CHECK(contains(r.output, "\"cpus\": \"168-191,360-383\""));
  CHECK(contains(r.output, "\"numa_nodes\": \"7\""));
}

TEST_CASE("kvlab topo plan accepts synthetic input") {
  const Run r = run(
      "topo plan --input 'synthetic:pack:1 [numa] die:12 l3:1 core:8 pu:1' -n 12 -p per-l3:pin");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "L3 L#11"));
}

TEST_CASE("under taskset -c 1 kvlab topo plan stays on CPU 1") {
  const char* taskset = std::getenv("TASKSET");
  if (taskset == nullptr) return;
  const Run probe = run("topo report --format json", std::string(taskset) + " -c 1 ");
  if (!contains(probe.output, "\"allowed_cpus\": \"1\"")) {
    MESSAGE("CPU 1 is not available to this test; skipped");
    return;
  }
  const Run r = run("topo plan --threads 2 --placement scatter --format json",
                    std::string(taskset) + " -c 1 ");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(contains(r.output, "\"allowed_cpus\": \"1\""));
  CHECK(contains(r.output, "\"worker\": 1,\n      \"cpus\": \"1\""));
  CHECK_FALSE(contains(r.output, "\"cpus\": \"0\""));
}

TEST_CASE("kvlab topo profile finishes within its time bound and says what it cannot measure") {
  const auto t0 = std::chrono::steady_clock::now();
  const Run r = run("topo profile --iters 2000 --batches 2 --max-seconds 2 --format json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  CHECK(seconds < 15.0);
  if (r.status != 0) {
    // A process with one allowed CPU cannot bounce a line between two; that must be said.
    CHECK(contains(r.output, "need at least two allowed CPUs"));
    return;
  }
  CHECK(contains(r.output, "\"schema\": \"topology-profile/1\""));
  CHECK(contains(r.output, "\"class\": \"other_package\""));
  CHECK(contains(r.output, "cannot measure"));
}

TEST_CASE("kvlab topo profile refuses a recorded machine") {
  const Run r = run("topo profile --input 'synthetic:pack:1 [numa] core:2 pu:1'");
  CHECK(r.status != 0);
  CHECK(contains(r.output, "measures this machine only"));
}

TEST_CASE("a bad placement exits non-zero with a clear message") {
  const Run r = run("topo plan --threads 2 --placement fastest");
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(contains(r.output, "kvlab topo: unknown placement policy 'fastest'"));
  const Run missing = run("topo report --input /nonexistent.xml");
  CHECK(missing.status != 0);
  CHECK(contains(missing.output, "cannot read topology file"));
}

int main(int argc, char** argv) {
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_SYNTHETIC");
  if (std::getenv("KVLAB_CLI") == nullptr) {
    std::fprintf(stderr, "skipping: KVLAB_CLI not set\n");
    return 77;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
