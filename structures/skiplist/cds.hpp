// skiplist/cds — libcds SkipListMap (hazard pointers): a lock-free skip list with marked
// references, up to 32 levels.
// Reference: K. Fraser, "Practical lock-freedom", PhD thesis, Cambridge 2004; Herlihy & Shavit,
// TAoMP ch. 14.
//
// Thread safety: all operations concurrent; values in Cells (common/cell_map.hpp).
// Progress: lock-free list; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (67 per thread: common/cds_runtime.hpp sizes the HP singleton).
// range(lo, hi) walks from the smallest key (libcds exposes no lower_bound iterator), so a scan
// costs O(keys below hi), not O(log n + result); stated here because it shows in benchmarks.
// Invariants: CellMap's; keys in byte order.
#pragma once

#include <cds/container/skip_list_map_hp.h>

#include <string>
#include <string_view>

#include "structures/common/cds_runtime.hpp"
#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::skiplist {

template <class V>
class CdsRaw {
 public:
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

 protected:
  explicit CdsRaw(const MapOptions&) : attach_() {}
  ~CdsRaw() { cds_runtime::ensure_attached(); }

  static void raw_enter() { cds_runtime::ensure_attached(); }
  template <class F>
  bool raw_find(std::string_view key, F&& f) {
    return map_.find_with(key, StringLess{}, [&](auto& item) { f(item.second); });
  }
  bool raw_insert(std::string_view key, const Cell<V>& cell) {
    return map_.emplace(std::string(key), cell);
  }
  bool raw_erase(std::string_view key) { return map_.erase_with(key, StringLess{}); }
  template <class F>
  void raw_for_each(F&& f) {
    for (auto it = map_.begin(); it != map_.end(); ++it) f(std::string_view(it->first), it->second);
  }
  template <class F>
  void raw_range(std::string_view lo, std::string_view hi, F&& f) {
    for (auto it = map_.begin(); it != map_.end(); ++it) {
      const std::string_view k(it->first);
      if (k < lo) continue;
      if (k >= hi) break;
      if (!f(k, it->second)) break;
    }
  }
  std::size_t raw_size() { return map_.size(); }

 private:
  struct Attach {
    Attach() { cds_runtime::ensure_attached(); }
  };
  struct Traits : public cds::container::skip_list::traits {
    using less = StringLess;
    using item_counter = cds::atomicity::item_counter;
  };
  Attach attach_;
  cds::container::SkipListMap<cds::gc::HP, std::string, Cell<V>, Traits> map_;
};

template <class V>
using Cds = CellMap<CdsRaw<V>>;

static_assert(OrderedMap<Cds<std::string>>);

}  // namespace kvlab::skiplist
