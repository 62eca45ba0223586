// The memory floor rows of a map run (see floor.cpp).
#pragma once

#include <cstddef>
#include <vector>

#include "tools/bench/bench.hpp"
#include "tools/bench/harness.hpp"

namespace kvlab::bench::detail {

// Floor rows for every configured thread count over an array of max(bytes, 1 MiB).
std::vector<FloorRow> run_floor(RunEnv& env, std::size_t bytes);

}  // namespace kvlab::bench::detail
