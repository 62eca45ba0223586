// CellMap: the keyspace contract (atomic update, linearizable erase) on top of a concurrent map
// that only guarantees stable, protected references to its values — libcds maps, TBB's
// concurrent_unordered_map and concurrent_map. Their own update/assign functions do not make value
// changes atomic against concurrent readers, so each value lives in a Cell with a tiny lock and a
// state, and every operation on a key goes through that cell.
//
// Cell states:  live ──erase, update→erase──▶ unlinking ──raw_erase by the owner──▶ (gone)
//   live       the key is present with value_.
//   unlinking  the key is absent; exactly one thread (the one that set this state) will unlink
//              the node. Nobody revives it; inserters and updaters wait for the unlink and retry.
//
// Invariants:
//  1. At most one node per key is linked (the underlying map guarantees it).
//  2. state_ and value_ are read and written only under the cell's lock.
//  3. Every physical unlink goes through the unlinking state, and only its owner calls
//     raw_erase(key). While a node in state unlinking is linked, no other node with that key can be
//     linked (1), so the owner's raw_erase(key) removes exactly that node.
// Linearization points: the moment an operation holds the cell's lock (found), or the raw map's
// own insert/lookup (absent).
//
// Thread safety: all operations may run concurrently when Raw::kTraits.concurrent_erase; otherwise
// erase and clear REQUIRE no concurrent operation (the wrapped map's unsafe_erase).
// Progress: blocking (the cell lock), whatever the wrapped map's own progress is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "structures/common/spin_lock.hpp"
#include "structures/keyspace.hpp"

namespace kvlab {

template <class V>
class Cell {
 public:
  enum class State : std::uint8_t { live, unlinking };

  Cell() = default;  // libcds SkipListMap default-constructs before assigning
  explicit Cell(const V& value) : value_(value) {}
  // The wrapped maps copy the cell into their node on insert; a fresh cell gets a fresh lock.
  // REQUIRES: other is not shared yet (it is the argument of an insert).
  Cell(const Cell& other) : state_(other.state_), value_(other.value_) {}
  Cell& operator=(const Cell& other) {
    state_ = other.state_;
    value_ = other.value_;
    return *this;
  }

  SpinLock& lock() const { return lock_; }
  // REQUIRES: lock() held, for all of the following.
  State state() const { return state_; }
  void set_state(State s) { state_ = s; }
  const V& value() const { return value_; }
  void set_value(V v) {
    value_ = std::move(v);
    state_ = State::live;
  }

 private:
  mutable SpinLock lock_;
  State state_ = State::live;
  V value_{};
};

// Raw must provide (K = std::string_view):
//   using mapped_type = V; static constexpr BackendTraits kTraits;
//   template <F> bool raw_find(K, F f)         f(Cell<V>&) while the node is protected
//   bool raw_insert(K, const Cell<V>&)          insert if absent
//   bool raw_erase(K)                           unlink the key's node
//   template <F> void raw_for_each(F f)         f(std::string_view key, Cell<V>&)
//   std::size_t raw_size()
//   void raw_enter()                            per-operation thread set-up (libcds attach)
template <class Raw>
class CellMap : private Raw {
 public:
  using mapped_type = typename Raw::mapped_type;
  using V = mapped_type;
  using CellT = Cell<V>;
  using State = typename CellT::State;
  static constexpr BackendTraits kTraits = Raw::kTraits;

  CellMap() : CellMap(MapOptions{}) {}
  explicit CellMap(const MapOptions& options) : Raw(options) {}

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    Raw::raw_enter();
    bool present = false;
    Raw::raw_find(key, [&](CellT& c) {
      std::lock_guard g(c.lock());
      if (c.state() == State::live) {
        present = true;
        visitor(c.value());
      }
    });
    return present;
  }

  bool insert(std::string_view key, const V& value) {
    return put(key, value, /*assign=*/false);
  }

  bool insert_or_assign(std::string_view key, const V& value) {
    return put(key, value, /*assign=*/true);
  }

  bool erase(std::string_view key) {
    Raw::raw_enter();
    bool owner = false;
    Raw::raw_find(key, [&](CellT& c) {
      std::lock_guard g(c.lock());
      if (c.state() == State::unlinking) return;  // already absent; another thread unlinks it
      c.set_state(State::unlinking);
      owner = true;
    });
    if (owner) Raw::raw_erase(key);  // invariant 3: removes exactly the node we marked
    return owner;
  }

  template <class F>
  UpdateOutcome update(std::string_view key, F&& fn) {
    Raw::raw_enter();
    for (unsigned attempt = 0;; ++attempt) {
      enum class Step { retry, done, absent } step = Step::absent;
      UpdateOutcome outcome = UpdateOutcome::unchanged;
      bool cleanup = false;
      Raw::raw_find(key, [&](CellT& c) {
        std::lock_guard g(c.lock());
        if (c.state() == State::unlinking) {
          step = Step::retry;
          return;
        }
        Update<V> u = fn(&c.value());
        step = Step::done;
        switch (u.kind()) {
          case Update<V>::Kind::keep:
            break;
          case Update<V>::Kind::assign:
            outcome = UpdateOutcome::assigned;
            c.set_value(std::move(u).value());
            break;
          case Update<V>::Kind::erase:
            // This thread owns the unlink: mark it now, unlink after releasing the lock.
            c.set_state(State::unlinking);
            outcome = UpdateOutcome::erased;
            cleanup = true;
            break;
        }
      });
      if (step == Step::done) {
        if (cleanup) Raw::raw_erase(key);
        return outcome;
      }
      if (step == Step::absent) {
        Update<V> u = fn(nullptr);
        if (u.kind() != Update<V>::Kind::assign) return UpdateOutcome::unchanged;
        if (Raw::raw_insert(key, CellT(std::move(u).value()))) return UpdateOutcome::inserted;
      }
      backoff(attempt);  // a concurrent insert or unlink won the race; go through the map again
    }
  }

  std::size_t size_approx() { return Raw::raw_size(); }

  template <class F>
  void for_each(F&& fn) {
    Raw::raw_enter();
    Raw::raw_for_each([&](std::string_view k, CellT& c) {
      std::lock_guard g(c.lock());
      if (c.state() == State::live) fn(k, c.value());
    });
  }

  template <class F>
    requires(Raw::kTraits.ordered)
  void range(std::string_view lo, std::string_view hi, F&& fn) {
    Raw::raw_enter();
    Raw::raw_range(lo, hi, [&](std::string_view k, CellT& c) {
      std::lock_guard g(c.lock());
      if (c.state() != State::live) return true;
      return static_cast<bool>(fn(k, c.value()));
    });
  }

  // Not atomic: erases the keys one by one through the protocol (libcds), or REQUIRES quiescence
  // (maps without concurrent erase).
  void clear() {
    Raw::raw_enter();
    if constexpr (Raw::kTraits.concurrent_erase) {
      std::vector<std::string> keys;
      Raw::raw_for_each([&](std::string_view k, CellT&) { keys.emplace_back(k); });
      for (const auto& k : keys) erase(k);
    } else {
      Raw::raw_clear();
    }
  }

 private:
  bool put(std::string_view key, const V& value, bool assign) {
    Raw::raw_enter();
    for (unsigned attempt = 0;; ++attempt) {
      enum class Step { retry, present, absent } step = Step::absent;
      Raw::raw_find(key, [&](CellT& c) {
        std::lock_guard g(c.lock());
        if (c.state() == State::unlinking) {
          step = Step::retry;
          return;
        }
        if (assign) c.set_value(value);
        step = Step::present;
      });
      if (step == Step::present) return false;
      if (step == Step::absent && Raw::raw_insert(key, CellT(value))) return true;
      backoff(attempt);
    }
  }

  static void backoff(unsigned attempt) {
    if (attempt < 16) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
};

}  // namespace kvlab
