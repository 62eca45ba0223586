// skiplist/cds — libcds SkipListMap (hazard pointers): a lock-free skip list with marked
// references, up to 32 levels.
// Reference: K. Fraser, "Practical lock-freedom", PhD thesis, Cambridge 2004; Herlihy & Shavit,
// TAoMP ch. 14.
//
// Thread safety: all operations concurrent; values in Cells (common/cell_map.hpp); the libcds
// calls are common/cds_string_map.hpp's.
// Progress: lock-free list; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (67 per thread: common/cds_runtime.hpp sizes the HP singleton).
// range(lo, hi) walks from the smallest key (libcds exposes no lower_bound iterator), so a scan
// costs O(keys below hi), not O(log n + result); stated here because it shows in benchmarks.
// Invariants: CellMap's; keys in byte order.
#pragma once

#include <cds/container/skip_list_map_hp.h>

#include <string>
#include <tuple>

#include "structures/common/cds_string_map.hpp"

namespace kvlab::skiplist {

template <class V>
struct CdsSpec {
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "skiplist/cds",
      .family = "skiplist",
      .progress = Progress::blocking,
      .reclamation = Reclamation::hp,
      .reference = "Fraser 2004; Herlihy & Shavit TAoMP ch. 14 (libcds SkipListMap)",
      .summary = "lock-free skip list; per-value cell lock; range walks from the start",
      .ordered = true,
  };
  struct Traits : public cds::container::skip_list::traits {
    using less = StringLess;
    using item_counter = cds::atomicity::item_counter;
  };
  using Container = cds::container::SkipListMap<cds::gc::HP, std::string, Cell<V>, Traits>;
  static auto args(const MapOptions&) { return std::tuple<>(); }
};

template <class V>
using Cds = CellMap<CdsStringMapRaw<CdsSpec<V>>>;

static_assert(OrderedMap<Cds<std::string>>);

}  // namespace kvlab::skiplist
