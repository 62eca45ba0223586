// skiplist/tbb — oneTBB concurrent_map: a skip list with lock-free lookup and fine-grained locked
// insertion, whose erase is only `unsafe_erase`.
// Reference: oneTBB tbb::concurrent_map; Pugh, "Skip Lists", CACM 1990.
//
// Thread safety: find, insert, insert_or_assign, update, for_each and range run concurrently.
// erase and clear REQUIRE that no other operation runs (unsafe_erase): concurrent_erase = false.
// Values in Cells (common/cell_map.hpp) so that update is atomic; the TBB calls are
// common/tbb_std_map.hpp's.
// Progress: blocking. Reclamation: immediate, under the REQUIRES above.
#pragma once

#include <oneapi/tbb/concurrent_map.h>

#include <string>
#include <tuple>
#include <utility>

#include "structures/common/tbb_allocator.hpp"
#include "structures/common/tbb_std_map.hpp"

namespace kvlab::skiplist {

template <class V>
struct TbbSpec {
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "skiplist/tbb",
      .family = "skiplist",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "oneTBB tbb::concurrent_map (skip list)",
      .summary = "skip list, lock-free find; erase is unsafe_erase (no concurrent erase)",
      .concurrent_erase = false,
      .ordered = true,
  };
  using Container = tbb::concurrent_map<std::string, Cell<V>, StringLess,
                                        TbbAllocator<std::pair<const std::string, Cell<V>>>>;
  static auto args(const MapOptions&) { return std::tuple<>(); }
};

template <class V>
using Tbb = CellMap<TbbStdMapRaw<TbbSpec<V>>>;

static_assert(OrderedMap<Tbb<std::string>>);

}  // namespace kvlab::skiplist
