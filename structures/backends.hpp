// Compile-time lists of every backend, for code that calls the templates directly (benchmarks,
// typed tests) and for the factories behind the registry. Including this header pulls in libcds
// and TBB: include it in as few translation units as possible.
//
// To add a backend: include its header here, add it to MapBackends/QueueBackends; registry.cpp
// takes the table from these lists, so the registry, `kvlab backends` and the README follow.
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "structures/any_keyspace.hpp"
#include "structures/hash/cds_feldman.hpp"
#include "structures/hash/cds_michael.hpp"
#include "structures/hash/cds_splitlist.hpp"
#include "structures/hash/global_lock.hpp"
#include "structures/hash/kvlab.hpp"
#include "structures/hash/locked.hpp"
#include "structures/hash/tbb.hpp"
#include "structures/hash/tbb_unordered.hpp"
#include "structures/keyspace.hpp"
#include "structures/queue/cds_basket.hpp"
#include "structures/queue/cds_ms.hpp"
#include "structures/queue/cds_segmented.hpp"
#include "structures/queue/cds_vyukov.hpp"
#include "structures/queue/kvlab.hpp"
#include "structures/queue/kvlab_mpsc.hpp"
#include "structures/queue/mutex.hpp"
#include "structures/queue/tbb.hpp"
#include "structures/skiplist/cds.hpp"
#include "structures/skiplist/kvlab.hpp"
#include "structures/skiplist/tbb.hpp"

namespace kvlab {

template <class... Ts>
struct TypeList {};

template <class V>
using MapBackends =
    TypeList<hash::Locked<V>, hash::GlobalLock<V>, hash::Tbb<V>, hash::TbbUnordered<V>,
             hash::CdsMichael<V>, hash::CdsSplitList<V>, hash::CdsFeldman<V>, hash::Kvlab<V>,
             skiplist::Tbb<V>, skiplist::Cds<V>, skiplist::Kvlab<V>>;

template <class T>
using QueueBackends = TypeList<queue::Mutex<T>, queue::Tbb<T>, queue::CdsMs<T>, queue::CdsBasket<T>,
                               queue::CdsSegmented<T>, queue::CdsVyukov<T>, queue::Kvlab<T>,
                               queue::KvlabMpsc<T>>;

namespace detail {
template <class F, class... Ts>
void for_each_type(TypeList<Ts...>, F&& f) {
  (f.template operator()<Ts>(), ...);
}
template <class F, class... Ts>
bool visit_type(TypeList<Ts...>, std::string_view name, F&& f) {
  return ((Ts::kTraits.name == name ? (f.template operator()<Ts>(), true) : false) || ...);
}
}  // namespace detail

// Calls f.template operator()<M>() for every map backend M with value type V, in table order.
template <class V, class F>
void for_each_map_backend(F&& f) {
  detail::for_each_type(MapBackends<V>{}, std::forward<F>(f));
}
template <class T, class F>
void for_each_queue_backend(F&& f) {
  detail::for_each_type(QueueBackends<T>{}, std::forward<F>(f));
}
// Calls f.template operator()<M>() for the backend named `name`; false when there is none.
template <class V, class F>
bool visit_map_backend(std::string_view name, F&& f) {
  return detail::visit_type(MapBackends<V>{}, name, std::forward<F>(f));
}
template <class T, class F>
bool visit_queue_backend(std::string_view name, F&& f) {
  return detail::visit_type(QueueBackends<T>{}, name, std::forward<F>(f));
}

// The map named `name` behind the virtual boundary; nullptr for an unknown or non-map name.
template <class V>
std::unique_ptr<AnyKeyspace<V>> make_keyspace(std::string_view name,
                                              const MapOptions& options = {}) {
  std::unique_ptr<AnyKeyspace<V>> out;
  visit_map_backend<V>(name, [&]<class M>() { out = std::make_unique<KeyspaceAdapter<M>>(options); });
  return out;
}

}  // namespace kvlab
