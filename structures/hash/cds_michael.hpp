// hash/cds-michael — libcds MichaelHashMap: a fixed array of buckets, each a lock-free ordered
// linked list (Michael's list), hazard-pointer reclamation.
// Reference: M. M. Michael, "High Performance Dynamic Lock-Free Hash Tables and List-Based Sets",
// SPAA 2002.
//
// Thread safety: all operations concurrent. Values live in Cells (common/cell_map.hpp), which
// makes update atomic and erase linearizable on top of libcds's lock-free lookups.
// Progress: the list operations are lock-free; the per-value cell lock makes the whole blocking.
// Reclamation: hazard pointers (libcds cds::gc::HP; common/cds_runtime.hpp attaches threads).
// Invariants: CellMap's; the bucket count is fixed at construction (expected_keys, load factor 1):
// not resizable, chains grow past it.
#pragma once

#include <cds/container/michael_kvlist_hp.h>
#include <cds/container/michael_map.h>

#include <string>
#include <string_view>

#include "structures/common/cds_runtime.hpp"
#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab::hash {

template <class V>
class CdsMichaelRaw {
 public:
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

 protected:
  explicit CdsMichaelRaw(const MapOptions& o)
      : attach_(), map_(o.expected_keys < 16 ? 16 : o.expected_keys, 1) {}
  ~CdsMichaelRaw() { cds_runtime::ensure_attached(); }

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
  using List = cds::container::MichaelKVList<
      cds::gc::HP, std::string, Cell<V>,
      typename cds::container::michael_list::make_traits<cds::opt::less<StringLess>>::type>;
  struct MapTraits : public cds::container::michael_map::traits {
    using hash = StringHash;
    using item_counter = cds::atomicity::item_counter;
  };
  Attach attach_;
  cds::container::MichaelHashMap<cds::gc::HP, List, MapTraits> map_;
};

template <class V>
using CdsMichael = CellMap<CdsMichaelRaw<V>>;

static_assert(KeyValueMap<CdsMichael<std::string>>);

}  // namespace kvlab::hash
