// hash/cds-splitlist — libcds SplitListMap: split-ordered lists, one lock-free list in bit-reversed
// hash order with a growing table of bucket shortcuts; resizes without moving items.
// Reference: O. Shalev and N. Shavit, "Split-Ordered Lists: Lock-Free Extensible Hash Tables",
// JACM 53(3), 2006.
//
// Thread safety: all operations concurrent; values in Cells (common/cell_map.hpp); the libcds
// calls are common/cds_string_map.hpp's.
// Progress: lock-free lists and resize; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (libcds cds::gc::HP).
// Invariants: CellMap's.
#pragma once

#include <cds/container/michael_list_hp.h>
#include <cds/container/split_list_map.h>

#include <string>
#include <tuple>

#include "structures/common/cds_string_map.hpp"

namespace kvlab::hash {

template <class V>
struct CdsSplitListSpec {
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/cds-splitlist",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::hp,
      .reference = "Shalev & Shavit, JACM 2006 (libcds SplitListMap)",
      .summary = "split-ordered lock-free list, grows without rehash; per-value cell lock",
  };
  struct Traits : public cds::container::split_list::traits {
    using ordered_list = cds::container::michael_list_tag;
    using hash = StringHash;
    using item_counter = cds::atomicity::item_counter;
    struct ordered_list_traits : public cds::container::michael_list::traits {
      using less = StringLess;
    };
  };
  using Container = cds::container::SplitListMap<cds::gc::HP, std::string, Cell<V>, Traits>;
  // (expected items, load factor): at least 16.
  static auto args(const MapOptions& o) {
    return std::make_tuple(o.expected_keys < 16 ? std::size_t{16} : o.expected_keys, 1);
  }
};

template <class V>
using CdsSplitList = CellMap<CdsStringMapRaw<CdsSplitListSpec<V>>>;

static_assert(KeyValueMap<CdsSplitList<std::string>>);

}  // namespace kvlab::hash
