// The kvlab CLI's subcommands. Each area registers its own subcommand on the app; the callback
// runs the command and reports failure by throwing CLI::RuntimeError(exit_code) after printing a
// clear message on stderr.
#pragma once

#include <CLI/CLI.hpp>

namespace kvlab::cli {

void add_backends(CLI::App& app);    // tools/cli/backends_command.cpp
void add_topo(CLI::App& app);        // tools/topo/topo_command.cpp
void add_load(CLI::App& app);        // tools/load/load_command.cpp
void add_bench(CLI::App& app);       // tools/bench/bench_command.cpp
void add_cluster(CLI::App& app);     // tools/cluster/cluster_command.cpp
void add_experiment(CLI::App& app);  // tools/experiment/experiment_command.cpp

}  // namespace kvlab::cli
