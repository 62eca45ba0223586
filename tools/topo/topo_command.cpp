// `kvlab topo report|plan|profile`: the command-line face of topology.
// Compiled into the kvlab executable (tools/cli); registered by add_topo().
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "tools/cli/subcommands.hpp"
#include "topology/profile.hpp"
#include "topology/topology.hpp"

namespace kvlab::cli {

namespace {

struct TopoOptions {
  std::string input = "live";
  std::string format = "text";
  // plan
  unsigned threads = 0;
  std::string placement;
  std::string smt = "auto";
  std::string avoid;
  std::string allowed;
  // profile
  bool matrix = false;
  bool classes = false;
  unsigned iters = 20000;
  unsigned batches = 100;
  double max_seconds = 5.0;
  std::string export_xml;
};

[[noreturn]] void fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "kvlab topo: %s\n", message.c_str());
  throw CLI::RuntimeError(code);
}

topo::Model load_or_fail(const std::string& input) {
  std::string error;
  std::optional<topo::Model> m = topo::load_model(input, &error, topo::IoObjects::kImportant);
  if (!m) fail(error);
  return std::move(*m);
}

void run_report(const TopoOptions& o) {
  const topo::Model m = load_or_fail(o.input);
  std::fputs((o.format == "json" ? topo::report_json(m) : topo::report_text(m)).c_str(), stdout);
}

void run_plan(const TopoOptions& o) {
  const topo::Model m = load_or_fail(o.input);
  std::vector<unsigned> allowed = m.allowed_pus;
  std::string error;
  if (!o.allowed.empty()) {
    std::vector<unsigned> narrowed;
    if (!topo::parse_cpu_list(o.allowed, &narrowed, &error)) fail("--allowed: " + error);
    std::erase_if(allowed, [&](unsigned c) {
      return !std::binary_search(narrowed.begin(), narrowed.end(), c);
    });
  }
  if (!o.avoid.empty()) {
    std::vector<unsigned> avoid;
    if (!topo::parse_cpu_list(o.avoid, &avoid, &error)) fail("--avoid: " + error);
    std::erase_if(allowed,
                  [&](unsigned c) { return std::binary_search(avoid.begin(), avoid.end(), c); });
  }
  topo::PlanResult r = topo::plan(m, allowed, o.threads, o.placement, o.smt);
  if (!r.ok) fail(r.error);
  r.warnings.insert(r.warnings.begin(), m.warnings.begin(), m.warnings.end());
  std::fputs((o.format == "json" ? topo::plan_json(m, r, o.placement, o.smt)
                                 : topo::plan_text(m, r, o.placement, o.smt))
                 .c_str(),
             stdout);
}

void run_profile(const TopoOptions& o) {
  const topo::Model m = load_or_fail(o.input);
  topo::ProfileOptions po;
  po.matrix = o.matrix;
  po.iters = o.iters;
  po.batches = o.batches;
  po.max_seconds = o.max_seconds;
  const topo::ProfileResult r = topo::profile(m, po);
  if (!r.ok) fail(r.error);
  std::fputs((o.format == "json" ? topo::profile_json(m, r, po) : topo::profile_text(m, r)).c_str(),
             stdout);
  if (!o.export_xml.empty()) {
    std::string error;
    if (!topo::export_profile_xml(m, r, o.export_xml, &error)) fail("--export-xml: " + error);
    std::fprintf(stderr, "kvlab topo: wrote %s with the latency matrix\n", o.export_xml.c_str());
  }
}

void add_input_format(CLI::App* cmd, TopoOptions& o) {
  cmd->add_option("--input", o.input, "live, an hwloc XML file, or synthetic:DESCRIPTION")
      ->capture_default_str();
  cmd->add_option("--format", o.format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
}

}  // namespace

void add_topo(CLI::App& app) {
  auto o = std::make_shared<TopoOptions>();
  CLI::App* topo_cmd = app.add_subcommand("topo", "Machine topology (hwloc) and worker placement");
  topo_cmd->require_subcommand(1);

  CLI::App* report = topo_cmd->add_subcommand(
      "report", "Packages, NUMA nodes, L3/CCX domains, distances, NICs and warnings");
  add_input_format(report, *o);
  report->callback([o] { run_report(*o); });

  CLI::App* plan =
      topo_cmd->add_subcommand("plan", "Where N workers would run under a placement policy");
  add_input_format(plan, *o);
  plan->add_option("--threads,-n", o->threads, "number of workers")
      ->required()
      ->check(CLI::Range(1u, 1u << 20));
  plan->add_option("--placement,-p", o->placement, std::string(topo::kPolicyHelp))->required();
  plan->add_option("--smt", o->smt, "auto (cores first), on (siblings adjacent) or off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  plan->add_option("--avoid", o->avoid, "CPU list the workers must keep off (e.g. the server's)");
  plan->add_option("--allowed", o->allowed, "CPU list to plan within (simulates taskset/cgroups)");
  plan->callback([o] { run_plan(*o); });

  CLI::App* profile = topo_cmd->add_subcommand(
      "profile",
      "Core-to-core latency by two pinned threads bouncing a cache line (this machine only)");
  add_input_format(profile, *o);
  auto* classes =
      profile->add_flag("--classes", o->classes, "one pair per relationship class (default)");
  profile->add_flag("--matrix", o->matrix, "every pair of allowed CPUs")->excludes(classes);
  profile->add_option("--iters", o->iters, "round trips per pair")
      ->check(CLI::Range(10u, 100000000u))
      ->capture_default_str();
  profile->add_option("--batches", o->batches, "batches per pair (median over them)")
      ->check(CLI::Range(1u, 1000u))
      ->capture_default_str();
  profile->add_option("--max-seconds", o->max_seconds, "wall-clock bound for the whole profile")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  profile->add_option("--export-xml", o->export_xml,
                      "write the live topology XML with the latencies as a PU distance matrix");
  profile->callback([o] { run_profile(*o); });
}

}  // namespace kvlab::cli
