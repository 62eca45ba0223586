// `kvlab experiment`: the published benchmark methods of Redis-protocol servers.
// The orchestration (starting servers, repeats, CSV, matplotlib figures, report.md) is a Python 3
// driver installed with the tree (tools/experiment/driver.py); this subcommand finds it and the
// kvlab-server next to this kvlab, and execs Debian's python3 on it with every argument unchanged.
// The driver runs `kvlab load` and `kvlab bench` for all measuring.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "tools/cli/subcommands.hpp"

namespace kvlab::cli {
namespace {

namespace fs = std::filesystem;

struct Located {
  fs::path driver, server, results, kvlab_exe;
};

// Installed tree: <prefix>/bin/kvlab, <prefix>/bin/kvlab-server, <prefix>/share/kvlab/experiment.
// Build tree: <build>/tools/cli/kvlab, <build>/server/kvlab-server, the driver in the sources.
Located locate() {
  Located l;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const fs::path bin = exe.parent_path();
  const fs::path installed = bin.parent_path() / "share" / "kvlab" / "experiment" / "driver.py";
  if (!ec && fs::exists(installed, ec)) {
    l.driver = installed;
    l.server = bin / "kvlab-server";
    l.results = fs::current_path(ec) / "experiments" / "results";
  } else {
    l.driver = fs::path(KVLAB_SOURCE_ROOT) / "tools" / "experiment" / "driver.py";
    l.server = bin.parent_path().parent_path() / "server" / "kvlab-server";
    l.results = fs::path(KVLAB_SOURCE_ROOT) / "experiments" / "results";
  }
  if (const char* d = std::getenv("KVLAB_EXPERIMENT_DRIVER"); d && *d) l.driver = d;
  if (const char* s = std::getenv("KVLAB_SERVER"); s && *s) l.server = s;
  l.kvlab_exe = exe;
  return l;
}

}  // namespace

void add_experiment(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  CLI::App* sub = app.add_subcommand(
      "experiment",
      "Run a published benchmark method (latency-sweep, commands, threads, backends, placement) "
      "against kvlab-server and other servers; writes manifest.json, results.csv, figures and "
      "report.md. `kvlab experiment list` describes them; `kvlab experiment NAME --help`");
  // Everything after `experiment` goes to the driver, --help included.
  sub->prefix_command();
  sub->set_help_flag();
  sub->allow_extras();
  sub->callback([sub] {
    const Located l = locate();
    std::vector<std::string> argv = {"/usr/bin/python3",   l.driver.string(), "--kvlab-bin",
                                     l.kvlab_exe.string(), "--server-bin",    l.server.string(),
                                     "--results-root",     l.results.string()};
    for (const auto& a : sub->remaining()) argv.push_back(a);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    ::execv(cargv[0], cargv.data());
    std::fprintf(stderr,
                 "kvlab experiment: cannot run %s %s: %s (install Debian's python3 and "
                 "python3-matplotlib: ./kvlab does)\n",
                 cargv[0], cargv[1], std::strerror(errno));
    throw CLI::RuntimeError(1);
  });
}

}  // namespace kvlab::cli
