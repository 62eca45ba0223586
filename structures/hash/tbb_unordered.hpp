// hash/tbb-unordered — oneTBB concurrent_unordered_map: a split-ordered list (lock-free insert and
// lookup) whose erase is only `unsafe_erase`.
// Reference: oneTBB tbb::concurrent_unordered_map; Shalev & Shavit, JACM 2006.
//
// Thread safety: find, insert, insert_or_assign, update and for_each run concurrently with each
// other. erase and clear REQUIRE that no other operation runs (TBB's unsafe_erase): declared
// concurrent_erase = false, and the tests and the server check that flag.
// Values in Cells (common/cell_map.hpp) so that update is atomic; the TBB calls are
// common/tbb_std_map.hpp's.
// Progress: blocking (cell lock). Reclamation: immediate, under the REQUIRES above.
#pragma once

#include <oneapi/tbb/concurrent_unordered_map.h>

#include <string>
#include <tuple>
#include <utility>

#include "structures/common/tbb_allocator.hpp"
#include "structures/common/tbb_std_map.hpp"

namespace kvlab::hash {

template <class V>
struct TbbUnorderedSpec {
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/tbb-unordered",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::immediate,
      .reference = "oneTBB tbb::concurrent_unordered_map (split-ordered list)",
      .summary = "lock-free insert/find; erase is unsafe_erase (no concurrent erase)",
      .concurrent_erase = false,
  };
  using Container =
      tbb::concurrent_unordered_map<std::string, Cell<V>, StringHash, StringEqual,
                                    TbbAllocator<std::pair<const std::string, Cell<V>>>>;
  static auto args(const MapOptions& o) { return std::make_tuple(o.expected_keys); }
};

template <class V>
using TbbUnordered = CellMap<TbbStdMapRaw<TbbUnorderedSpec<V>>>;

static_assert(KeyValueMap<TbbUnordered<std::string>>);

}  // namespace kvlab::hash
