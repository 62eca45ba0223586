// The keyspace interface: the contract every map and queue backend in kvlab meets.
//
// Inside the library backends are plain class templates checked by concepts; nothing is
// virtual. The one virtual boundary is AnyKeyspace (see any_keyspace.hpp), used by the server,
// where one indirect call per command is noise next to a system call.
//
// Keys are binary-safe byte strings: a std::string_view may hold any byte, NUL included, and its
// length is the key's length. Values are a template parameter `V` (copyable).
//
// Map contract (every operation is linearizable unless stated otherwise):
//   find(key, visitor) -> bool       visitor(const V&) runs while the value is protected from
//                                    reclamation and from concurrent modification of that key.
//   insert(key, value) -> bool       inserts only if the key is absent; true if it inserted.
//   insert_or_assign(key, value) -> bool   true if the key was absent (inserted), false if assigned.
//   erase(key) -> bool               true if this call removed the key.
//   update(key, fn) -> UpdateOutcome atomic read-modify-write of one key: fn(const V* current)
//                                    (nullptr when absent) returns Update<V>::keep(), ::assign(v)
//                                    or ::erase(). No update is ever lost to a concurrent
//                                    update/insert/erase of the same key. fn may run more than once
//                                    (lock-free backends retry); only its last call takes effect, so
//                                    fn must write its results to captured variables by assignment.
//   size_approx() -> size_t          exact when quiescent; approximate under concurrency.
//   for_each(fn)                     fn(std::string_view key, const V&) for every key present for
//                                    the whole call; weakly consistent (no snapshot).
//   clear()                          removes every key; not atomic against concurrent writers.
// OrderedMap adds range(lo, hi, fn): keys in [lo, hi) in ascending byte order, fn(key, value) ->
// bool (false stops the scan); weakly consistent, sorted and duplicate-free.
//
// Queue contract: push(value) -> bool (false only when a bounded queue is full), try_pop() ->
// std::optional<T> (nullopt when empty; never blocks), size_approx().
//
// Capabilities are declared, never guessed: a backend whose erase may not run concurrently with
// other operations says `concurrent_erase = false`, and callers (tests, the server) check the flag.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

namespace kvlab {

enum class Progress : std::uint8_t { wait_free, lock_free, blocking };
enum class Reclamation : std::uint8_t {
  immediate,  // freed under a lock by the thread that removes it
  hp,         // hazard pointers (libcds cds::gc::HP)
  epoch,      // epoch-based reclamation
  qsbr,       // quiescent-state-based reclamation
  internal,   // the wrapped library manages it (TBB)
  not_needed, // a fixed array: nothing is allocated per item
  none,       // never freed before the structure is destroyed (declared baselines only)
};

constexpr std::string_view to_string(Progress p) {
  switch (p) {
    case Progress::wait_free: return "wait-free";
    case Progress::lock_free: return "lock-free";
    case Progress::blocking: return "blocking";
  }
  return "?";
}

constexpr std::string_view to_string(Reclamation r) {
  switch (r) {
    case Reclamation::immediate: return "immediate";
    case Reclamation::hp: return "hazard-pointers";
    case Reclamation::epoch: return "epoch";
    case Reclamation::qsbr: return "qsbr";
    case Reclamation::internal: return "library";
    case Reclamation::not_needed: return "n/a (fixed array)";
    case Reclamation::none: return "none";
  }
  return "?";
}

// What a backend declares about itself. Every backend has `static constexpr BackendTraits kTraits`.
struct BackendTraits {
  std::string_view name;       // registry name, "family/algorithm"
  std::string_view family;     // "hash", "skiplist" or "queue"
  Progress progress;           // of the operations as a whole (the weakest one counts)
  Reclamation reclamation;
  std::string_view reference;  // the paper or library it implements
  std::string_view summary;    // one line for tables
  bool concurrent_erase = true;  // maps: erase may run concurrently with every other operation
  bool ordered = false;          // maps: keys iterate in order and range() exists
  bool resizable = true;         // grows without a fixed capacity
  bool fifo = false;             // queues: per-producer FIFO order holds
  bool bounded = false;          // queues: push may report full
  bool single_consumer = false;  // queues: REQUIRES at most one thread in try_pop at a time
  bool concurrent_for_each = true;    // maps: for_each may run concurrently with writers
  bool atomic_update_native = false;  // update needs no extra per-value cell lock
  // maps: update runs fn exactly once per call, under a lock that excludes every other write of
  // the key, and stores what it returns; fn may then change state outside the map exactly once
  // (the server appends to a string in place).
  bool update_runs_once = false;
};

// The result of an update function: keep the current state, store a value, or remove the key.
template <class V>
class Update {
 public:
  enum class Kind : std::uint8_t { keep, assign, erase };

  static Update keep() { return Update(Kind::keep); }
  static Update erase() { return Update(Kind::erase); }
  static Update assign(V value) { return Update(std::move(value)); }

  Kind kind() const { return kind_; }
  V& value() & { return *value_; }
  V&& value() && { return std::move(*value_); }

 private:
  explicit Update(Kind k) : kind_(k) {}
  explicit Update(V v) : kind_(Kind::assign), value_(std::move(v)) {}
  Kind kind_;
  std::optional<V> value_;
};

// What an update did.
enum class UpdateOutcome : std::uint8_t { unchanged, inserted, assigned, erased };

namespace detail {
template <class V>
struct ValueSink {
  void operator()(const V&) const {}
};
template <class V>
struct KeyValueSink {
  void operator()(std::string_view, const V&) const {}
};
template <class V>
struct KeyValueStop {
  bool operator()(std::string_view, const V&) const { return true; }
};
template <class V>
struct UpdateKeep {
  Update<V> operator()(const V*) const { return Update<V>::keep(); }
};
}  // namespace detail

template <class T>
concept HasTraits = requires {
  { T::kTraits } -> std::convertible_to<const BackendTraits&>;
};

template <class M>
concept KeyValueMap =
    HasTraits<M> && requires(M& m, std::string_view k, const typename M::mapped_type& v) {
      typename M::mapped_type;
      { m.find(k, detail::ValueSink<typename M::mapped_type>{}) } -> std::same_as<bool>;
      { m.insert(k, v) } -> std::same_as<bool>;
      { m.insert_or_assign(k, v) } -> std::same_as<bool>;
      { m.erase(k) } -> std::same_as<bool>;
      {
        m.update(k, detail::UpdateKeep<typename M::mapped_type>{})
      } -> std::same_as<UpdateOutcome>;
      { m.size_approx() } -> std::convertible_to<std::size_t>;
      m.for_each(detail::KeyValueSink<typename M::mapped_type>{});
      m.clear();
    };

template <class M>
concept OrderedMap = KeyValueMap<M> && requires(M& m, std::string_view k) {
  m.range(k, k, detail::KeyValueStop<typename M::mapped_type>{});
} && M::kTraits.ordered;

template <class Q>
concept ConcurrentQueue =
    HasTraits<Q> && requires(Q& q, const typename Q::value_type& v) {
      typename Q::value_type;
      { q.push(v) } -> std::same_as<bool>;
      { q.try_pop() } -> std::same_as<std::optional<typename Q::value_type>>;
      { q.size_approx() } -> std::convertible_to<std::size_t>;
    };

// Options a factory passes to a backend's constructor. Backends ignore what does not apply.
struct MapOptions {
  std::size_t expected_keys = std::size_t{1} << 20;  // capacity hint (fixed-size tables use it)
};

struct QueueOptions {
  std::size_t capacity = 1 << 16;  // bounded queues only; rounded up to a power of two
};

}  // namespace kvlab
