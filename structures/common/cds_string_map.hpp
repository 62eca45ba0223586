// The Raw layer of CellMap (common/cell_map.hpp) for the libcds maps keyed by std::string with
// Cell<V> values: MichaelHashMap, SplitListMap and SkipListMap answer the same find_with /
// emplace / erase_with / iterator calls, so one adapter serves all three. A backend header
// supplies a Spec (below); this adapter supplies the thread attachment libcds needs, the Raw
// calls, and range() for the ordered containers.
//
//   template <class V> struct Spec {
//     using mapped_type = V;
//     static constexpr BackendTraits kTraits{...};      // name, progress, reference, ordered…
//     using Container = cds::container::…<cds::gc::HP, std::string, Cell<V>, …>;
//     static auto args(const MapOptions&);               // a tuple of Container's constructor args
//   };
//
// Thread safety: the container's (all operations concurrent, hazard pointers), with CellMap's
// value cells on top. libcds REQUIRES every thread to be attached before it touches a container
// and the container to be destroyed by an attached thread: raw_enter() and the destructor attach
// (common/cds_runtime.hpp).
// range() on an ordered container walks from the smallest key: libcds exposes no lower_bound
// iterator, so a scan costs O(keys below hi), not O(log n + result).
#pragma once

#include <string>
#include <string_view>
#include <tuple>

#include "structures/common/cds_runtime.hpp"
#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab {

template <class Spec>
class CdsStringMapRaw {
 public:
  using mapped_type = typename Spec::mapped_type;
  static constexpr BackendTraits kTraits = Spec::kTraits;

 protected:
  explicit CdsStringMapRaw(const MapOptions& o)
      : attach_(), map_(std::make_from_tuple<typename Spec::Container>(Spec::args(o))) {}
  ~CdsStringMapRaw() { cds_runtime::ensure_attached(); }

  static void raw_enter() { cds_runtime::ensure_attached(); }
  template <class F>
  bool raw_find(std::string_view key, F&& f) {
    return map_.find_with(key, StringLess{}, [&](auto& item) { f(item.second); });
  }
  bool raw_insert(std::string_view key, const Cell<mapped_type>& cell) {
    return map_.emplace(std::string(key), cell);
  }
  bool raw_erase(std::string_view key) { return map_.erase_with(key, StringLess{}); }
  template <class F>
  void raw_for_each(F&& f) {
    for (auto it = map_.begin(); it != map_.end(); ++it) f(std::string_view(it->first), it->second);
  }
  template <class F>
  requires(Spec::kTraits.ordered) void raw_range(std::string_view lo, std::string_view hi, F&& f) {
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
  Attach attach_;  // before map_: the constructing thread is attached when map_ is built
  typename Spec::Container map_;
};

}  // namespace kvlab
