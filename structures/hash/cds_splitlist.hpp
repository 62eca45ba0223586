// hash/cds-splitlist — libcds SplitListMap: split-ordered lists, one lock-free list in bit-reversed
// hash order with a growing table of bucket shortcuts; resizes without moving items.
// Reference: O. Shalev and N. Shavit, "Split-Ordered Lists: Lock-Free Extensible Hash Tables",
// JACM 53(3), 2006.
//
// Thread safety: all operations concurrent; values in Cells (common/cell_map.hpp).
// Progress: lock-free lists and resize; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (libcds cds::gc::HP).
// Invariants: CellMap's.
#pragma once

#include <cds/container/michael_list_hp.h>
#include <cds/container/split_list_map.h>

#include <string>
#include <string_view>

#include "structures/common/cds_runtime.hpp"
#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::hash {

template <class V>
class CdsSplitListRaw {
 public:
  using mapped_type = V;
  static constexpr BackendTraits kTraits{
      .name = "hash/cds-splitlist",
      .family = "hash",
      .progress = Progress::blocking,
      .reclamation = Reclamation::hp,
      .reference = "Shalev & Shavit, JACM 2006 (libcds SplitListMap)",
      .summary = "split-ordered lock-free list, grows without rehash; per-value cell lock",
  };

 protected:
  explicit CdsSplitListRaw(const MapOptions& o)
      : attach_(), map_(o.expected_keys < 16 ? 16 : o.expected_keys, 1) {}
  ~CdsSplitListRaw() { cds_runtime::ensure_attached(); }

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
  std::size_t raw_size() { return map_.size(); }

 private:
  struct Attach {
    Attach() { cds_runtime::ensure_attached(); }
  };
  struct Traits : public cds::container::split_list::traits {
    using ordered_list = cds::container::michael_list_tag;
    using hash = StringHash;
    using item_counter = cds::atomicity::item_counter;
    struct ordered_list_traits : public cds::container::michael_list::traits {
      using less = StringLess;
    };
  };
  Attach attach_;
  cds::container::SplitListMap<cds::gc::HP, std::string, Cell<V>, Traits> map_;
};

template <class V>
using CdsSplitList = CellMap<CdsSplitListRaw<V>>;

static_assert(KeyValueMap<CdsSplitList<std::string>>);

}  // namespace kvlab::hash
