// hash/cds-michael — libcds MichaelHashMap: a fixed array of buckets, each a lock-free ordered
// linked list (Michael's list), hazard-pointer reclamation.
// Reference: M. M. Michael, "High Performance Dynamic Lock-Free Hash Tables and List-Based Sets",
// SPAA 2002.
//
// Thread safety: all operations concurrent. Values live in Cells (common/cell_map.hpp), which
// makes update atomic and erase linearizable on top of libcds's lock-free lookups; the libcds
// calls are common/cds_string_map.hpp's.
// Progress: the list operations are lock-free; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (libcds cds::gc::HP; common/cds_runtime.hpp attaches threads).
// Invariants: CellMap's; the bucket count is fixed at construction (expected_keys, load factor 1):
// not resizable, chains grow past it.
#pragma once

#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>

#include <string>
#include <tuple>

#include "structures/common/cds_string_map.hpp"

namespace kvlab::hash {

template <class V>
struct CdsMichaelSpec {
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/cds-michael",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::hp,
      .reference = "Michael, SPAA 2002 (libcds MichaelHashMap)",
      .summary = "lock-free bucket lists, fixed bucket array; per-value cell lock",
      .resizable = false,
  };
  using List = cds::container::MichaelKVList<
      cds::gc::HP, std::string, Cell<V>,
      typename cds::container::michael_list::make_traits<cds::opt::less<StringLess>>::type>;
  struct Traits : public cds::container::michael_map::traits {
    using hash = StringHash;
    using item_counter = cds::atomicity::item_counter;
  };
  using Container = cds::container::MichaelHashMap<cds::gc::HP, List, Traits>;
  // (expected items, load factor): at least 16 buckets.
  static auto args(const MapOptions& o) {
    return std::make_tuple(o.expected_keys < 16 ? std::size_t{16} : o.expected_keys, 1);
  }
};

template <class V>
using CdsMichael = CellMap<CdsStringMapRaw<CdsMichaelSpec<V>>>;

static_assert(KeyValueMap<CdsMichael<std::string>>);

}  // namespace kvlab::hash
