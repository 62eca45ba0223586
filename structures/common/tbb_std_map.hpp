// The Raw layer of CellMap (common/cell_map.hpp) for oneTBB's std-like concurrent maps with
// Cell<V> values: concurrent_unordered_map and concurrent_map answer the same find / emplace /
// unsafe_erase / iterator calls, so one adapter serves both. A backend header supplies a Spec:
//
//   template <class V> struct Spec {
//     using mapped_type = V;
//     static constexpr BackendTraits kTraits{...};  // concurrent_erase = false: unsafe_erase
//     using Container = tbb::concurrent_…<std::string, Cell<V>, …>;
//     static auto args(const MapOptions&);           // a tuple of Container's constructor args
//   };
//
// Thread safety: find, insert, insert_or_assign, update, for_each and range run concurrently.
// erase and clear REQUIRE that no other operation runs (TBB offers only unsafe_erase): the
// traits must say concurrent_erase = false, and CellMap, the tests and the server check it.
// range() (ordered containers) starts at lower_bound(lo).
#pragma once

#include <string>
#include <string_view>
#include <tuple>

#include "structures/common/cell_map.hpp"
#include "structures/common/hash.hpp"

namespace kvlab {

template <class Spec>
class TbbStdMapRaw {
 public:
  using mapped_type = typename Spec::mapped_type;
  static constexpr BackendTraits kTraits = Spec::kTraits;
  static_assert(!kTraits.concurrent_erase, "TBB's std-like maps erase only with unsafe_erase");

 protected:
  explicit TbbStdMapRaw(const MapOptions& o)
      : map_(std::make_from_tuple<typename Spec::Container>(Spec::args(o))) {}

  static void raw_enter() {}
  template <class F>
  bool raw_find(std::string_view key, F&& f) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    f(it->second);
    return true;
  }
  bool raw_insert(std::string_view key, const Cell<mapped_type>& cell) {
    return map_.emplace(std::string(key), cell).second;
  }
  bool raw_erase(std::string_view key) {
    auto it = map_.find(key);
    if (it == map_.end()) return false;
    map_.unsafe_erase(it);
    return true;
  }
  template <class F>
  void raw_for_each(F&& f) {
    for (auto& [k, c] : map_) f(std::string_view(k), c);
  }
  template <class F>
  requires(Spec::kTraits.ordered) void raw_range(std::string_view lo, std::string_view hi, F&& f) {
    for (auto it = map_.lower_bound(lo); it != map_.end(); ++it) {
      const std::string_view k(it->first);
      if (k >= hi) break;
      if (!f(k, it->second)) break;
    }
  }
  std::size_t raw_size() { return map_.size(); }
  void raw_clear() { map_.clear(); }

 private:
  typename Spec::Container map_;
};

}  // namespace kvlab
