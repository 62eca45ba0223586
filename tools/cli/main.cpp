// kvlab: the command-line front end. Subcommands live with their areas (see subcommands.hpp).
#include <cstdio>
#include <exception>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "tools/cli/subcommands.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "kvlab: concurrent data structures, a RESP server on them, and the tools to measure both"};
  app.set_version_flag("--version",
                       std::string("kvlab ") + KVLAB_VERSION + " (" + KVLAB_GIT_SHA + ")");
  app.require_subcommand(0, 1);
  kvlab::cli::add_backends(app);
#ifdef KVLAB_HAVE_TOPO
  kvlab::cli::add_topo(app);
#endif
#ifdef KVLAB_HAVE_LOAD
  kvlab::cli::add_load(app);
#endif
#ifdef KVLAB_HAVE_BENCH
  kvlab::cli::add_bench(app);
#endif
#ifdef KVLAB_HAVE_CLUSTER
  kvlab::cli::add_cluster(app);
#endif
#ifdef KVLAB_HAVE_EXPERIMENT
  kvlab::cli::add_experiment(app);
#endif
  try {
    app.parse(argc, argv);
    if (app.get_subcommands().empty()) {
      std::fputs(app.help().c_str(), stderr);
      return 2;
    }
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every other parse error is a usage error, exit 2 (as
    // getopt-based tools do), so that a script tells a bad command line from a failed run.
    // A subcommand's RuntimeError carries its own status.
    const int code = app.exit(e);
    if (dynamic_cast<const CLI::RuntimeError*>(&e) != nullptr || code == 0) return code;
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvlab: %s\n", e.what());
    return 1;
  }
  return 0;
}
