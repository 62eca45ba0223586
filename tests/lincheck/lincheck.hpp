// A linearizability checker for kvlab maps: record histories of concurrent operations on a few hot
// keys, check them per key with a memoized Wing & Gong search, and shrink a failing history to a
// small witness that a person can read.
//
// Recording. T threads each run N operations (get, set = insert_or_assign, insert-if-absent,
// erase, update-increment returning the new value, update-take = erase-if-present returning the
// old value) on K keys, with V = std::uint64_t. Each operation gets two stamps from one shared
// atomic counter: invoke = fetch_add before the call, return = fetch_add after it. Operation A
// precedes B in real time iff A.ret < B.invoke. See Clock below for why acq_rel makes that order
// the happens-before order the map is judged by.
//
// Checking. Operations on different keys commute, and the map's sequential specification is a
// product of independent per-key registers, so the history is linearizable iff every key's
// sub-history is (locality: Herlihy & Wing 1990; P-compositionality: Horn & Kroening 2015). Each
// key is checked against a register whose state is "absent" or a value. The search is Wing &
// Gong's (1993) depth-first search over minimal operations (those invoked before any remaining
// operation returned), organised as in Lowe (2017) and porcupine: entries in a doubly linked list
// of call/return events, lifted when linearized and put back on backtrack, and a cache of
// (linearized set as a bitset, register state) so that no configuration is explored twice.
//
// Shrinking. A failing key history is shrunk to a small witness by deleting operations while the
// rest stays non-linearizable, from any initial state of the key when possible. Deleting a write
// can manufacture a violation (drop the set(5) between two increments that both return 6 and the
// rest looks like a lost update), so only deletions that provably keep a violation are made: a
// set of operations may go if no write in it is a possible producer of what a kept operation
// observed (see shrink() and detail::Observers for the argument). The witness failing therefore
// proves that the recorded history fails; the report also prints every operation that overlaps
// the witness in time, for context.
//
// Thread safety: run() and record_round() drive the map from threads of their own; everything
// else is single-threaded. Progress: the search is exponential in the worst case; check_key()
// takes a state budget and says when it gave up.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <new>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "structures/keyspace.hpp"

namespace kvlab::lincheck {

using Value = std::uint64_t;

// Register states. Values written by the recorder stay far below these.
inline constexpr Value kAbsent = ~Value{0};
inline constexpr Value kUnknown = ~Value{0} - 1;         // any state: "whatever the key held"
inline constexpr Value kPresentUnknown = ~Value{0} - 2;  // present, value not yet observed

enum class OpKind : std::uint8_t {
  get,        // result: the value, or kAbsent
  set,        // insert_or_assign(arg); result: 1 if the key was absent (inserted), else 0
  insert,     // insert(arg) if absent; result: 1 if inserted, else 0
  erase,      // result: 1 if this call removed the key, else 0
  increment,  // update: cur ? cur + arg : arg; result: the new value
  take,       // update: erase if present; result: the old value, or kAbsent
};

constexpr std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::get: return "get";
    case OpKind::set: return "set";
    case OpKind::insert: return "insert";
    case OpKind::erase: return "erase";
    case OpKind::increment: return "increment";
    case OpKind::take: return "take";
  }
  return "?";
}

struct Op {
  std::uint32_t thread = 0;
  OpKind kind = OpKind::get;
  std::uint32_t key = 0;
  Value arg = 0;
  Value result = 0;
  std::uint64_t invoke = 0;  // stamps from one clock; invoke < ret
  std::uint64_t ret = 0;
};

using History = std::vector<Op>;

// ---------------------------------------------------------------------------------------------
// The sequential model: one register per key.

// True if `op` may take effect in `state`; then *next is the state after it. States kUnknown and
// kPresentUnknown are resolved by the first operation that observes them (used when shrinking).
inline bool step(Value state, const Op& op, Value* next) {
  const bool unknown = state == kUnknown;
  const bool present_unknown = state == kPresentUnknown;
  const bool known = !unknown && !present_unknown;
  const bool absent = state == kAbsent;
  switch (op.kind) {
    case OpKind::get:
      if (known && op.result != state) return false;
      if (present_unknown && op.result == kAbsent) return false;
      *next = op.result;
      return true;
    case OpKind::set:
      if (known && op.result != (absent ? 1u : 0u)) return false;
      if (present_unknown && op.result != 0) return false;
      *next = op.arg;
      return true;
    case OpKind::insert:
      if (known) {
        if (op.result != (absent ? 1u : 0u)) return false;
        *next = absent ? op.arg : state;
        return true;
      }
      if (present_unknown && op.result != 0) return false;
      *next = op.result != 0 ? op.arg : kPresentUnknown;
      return true;
    case OpKind::erase:
      if (known && op.result != (absent ? 0u : 1u)) return false;
      if (present_unknown && op.result != 1) return false;
      *next = kAbsent;
      return true;
    case OpKind::increment:
      if (known && op.result != (absent ? op.arg : state + op.arg)) return false;
      *next = op.result;
      return true;
    case OpKind::take:
      if (known && op.result != state) return false;
      if (present_unknown && op.result == kAbsent) return false;
      *next = kAbsent;
      return true;
  }
  return false;
}

// What `op` observed of the state before it, for the witness rule: a value, kAbsent, or
// kPresentUnknown ("some value"). Every operation observes something.
inline Value observed(const Op& op) {
  switch (op.kind) {
    case OpKind::get:
    case OpKind::take: return op.result;
    case OpKind::set:
    case OpKind::insert: return op.result != 0 ? kAbsent : kPresentUnknown;
    case OpKind::erase: return op.result != 0 ? kPresentUnknown : kAbsent;
    case OpKind::increment:  // values are never 0, so a result equal to arg means "was absent"
      return op.result != op.arg ? op.result - op.arg : kAbsent;
  }
  return kUnknown;
}

// What `op` left in the register when it changed it; nullopt when it is read-only.
inline std::optional<Value> written(const Op& op) {
  switch (op.kind) {
    case OpKind::set: return op.arg;
    case OpKind::insert: return op.result != 0 ? std::optional<Value>(op.arg) : std::nullopt;
    case OpKind::increment: return op.result;
    case OpKind::erase: return op.result != 0 ? std::optional<Value>(kAbsent) : std::nullopt;
    case OpKind::take: return op.result != kAbsent ? std::optional<Value>(kAbsent) : std::nullopt;
    default: return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------
// The checker.

enum class Verdict : std::uint8_t { linearizable, not_linearizable, gave_up };

struct CheckOptions {
  Value initial = kAbsent;
  std::size_t max_states = std::size_t{1} << 22;  // distinct (bitset, state) configurations
};

struct CheckStats {
  std::size_t states = 0;  // configurations cached
  std::size_t ops = 0;
};

namespace detail {

struct CacheKey {
  std::vector<std::uint64_t> bits;
  Value state;
  bool operator==(const CacheKey&) const = default;
};

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& k) const {
    std::uint64_t h = k.state * 0x9e3779b97f4a7c15ull;
    for (std::uint64_t w : k.bits) {
      h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdull;
    }
    return static_cast<std::size_t>(h ^ (h >> 33));
  }
};

}  // namespace detail

// Wing & Gong search over one key's operations (all complete). Returns whether some total order
// that respects real time (A before B whenever A.ret < B.invoke) is a valid register run from
// options.initial. Work: O(configurations × n); with T threads at most T operations are pending at
// once, so configurations stay near n × 2^T for recorder histories.
inline Verdict check_key(std::span<const Op> ops, const CheckOptions& options = {},
                         CheckStats* stats = nullptr) {
  const int n = static_cast<int>(ops.size());
  if (stats) stats->ops += ops.size();
  if (n == 0) return Verdict::linearizable;

  // Entries: 2n events in time order; on equal stamps calls come first (treated as overlapping).
  struct Entry {
    int op;
    bool call;
    std::uint64_t time;
    int match = -1;  // a call's return entry
    int prev = -1, next = -1;
  };
  std::vector<Entry> e;
  e.reserve(2 * n + 1);
  for (int i = 0; i < n; ++i) {
    e.push_back({i, true, ops[i].invoke});
    e.push_back({i, false, ops[i].ret});
  }
  std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) {
    if (a.time != b.time) return a.time < b.time;
    return a.call && !b.call;
  });
  std::vector<int> ret_of(n, -1);
  for (int i = 0; i < 2 * n; ++i) {
    if (!e[i].call) ret_of[e[i].op] = i;
  }
  for (int i = 0; i < 2 * n; ++i) {
    if (e[i].call) e[i].match = ret_of[e[i].op];
  }
  const int head = 2 * n;  // sentinel
  e.push_back({-1, false, 0});
  for (int i = 0; i <= 2 * n; ++i) {
    e[i].prev = i == head ? -1 : (i == 0 ? head : i - 1);
    e[i].next = i == head ? (n > 0 ? 0 : -1) : (i + 1 < 2 * n ? i + 1 : -1);
  }
  auto unlink = [&](int i) {
    e[e[i].prev].next = e[i].next;
    if (e[i].next >= 0) e[e[i].next].prev = e[i].prev;
  };
  auto relink = [&](int i) {
    e[e[i].prev].next = i;
    if (e[i].next >= 0) e[e[i].next].prev = i;
  };
  auto lift = [&](int c) {
    unlink(c);
    unlink(e[c].match);
  };
  auto unlift = [&](int c) {  // exact reverse of lift
    relink(e[c].match);
    relink(c);
  };

  detail::CacheKey key{std::vector<std::uint64_t>((n + 63) / 64, 0), options.initial};
  std::unordered_set<detail::CacheKey, detail::CacheKeyHash> cache;
  struct Frame {
    int call;
    Value before;
  };
  std::vector<Frame> stack;
  Value state = options.initial;
  int cur = e[head].next;
  while (e[head].next >= 0) {
    const Entry& en = e[cur];
    if (en.call) {
      Value next = 0;
      if (step(state, ops[en.op], &next)) {
        key.bits[en.op / 64] ^= std::uint64_t{1} << (en.op % 64);
        key.state = next;
        if (cache.insert(key).second) {
          if (cache.size() > options.max_states) {
            if (stats) stats->states += cache.size();
            return Verdict::gave_up;
          }
          stack.push_back({cur, state});
          state = next;
          lift(cur);
          cur = e[head].next;
          continue;
        }
        key.bits[en.op / 64] ^= std::uint64_t{1} << (en.op % 64);
      }
      cur = en.next;
    } else {
      // A return: every minimal operation was tried; undo the last choice.
      if (stack.empty()) {
        if (stats) stats->states += cache.size();
        return Verdict::not_linearizable;
      }
      const Frame f = stack.back();
      stack.pop_back();
      const int op = e[f.call].op;
      key.bits[op / 64] ^= std::uint64_t{1} << (op % 64);
      state = f.before;
      unlift(f.call);
      cur = e[f.call].next;
    }
  }
  if (stats) stats->states += cache.size();
  return Verdict::linearizable;
}

// ---------------------------------------------------------------------------------------------
// Shrinking and reports.

namespace detail {

// Who may have observed whom in a sub-history H (the operations `within` of a key's history). Write w is a possible producer of what o
// observed (o is an observer of w) iff w's output matches o's observation, w was invoked before
// o returned, and no write of H that could not produce it lies strictly between them in real time
// (w.ret < x.invoke and x.ret < o.invoke). In any linearization of H, the last write before o is
// a possible producer of o's observation: it produced the state o saw, it precedes o, and
// nothing lies between them.
class Observers {
 public:
  Observers(const History& h, const std::vector<std::uint32_t>& within) : h_(h) {
    const std::size_t n = h.size();
    for (int k = 0; k < 3; ++k) {
      for (std::uint32_t i : within) {
        if (auto w = written(h[i]); w && in_kind(k, *w)) by_invoke_[k].push_back({h[i].invoke, h[i].ret});
      }
      std::sort(by_invoke_[k].begin(), by_invoke_[k].end());
      suffix_min_ret_[k].assign(by_invoke_[k].size() + 1, ~std::uint64_t{0});
      for (std::size_t j = by_invoke_[k].size(); j-- > 0;) {
        suffix_min_ret_[k][j] = std::min(suffix_min_ret_[k][j + 1], by_invoke_[k][j].second);
      }
    }
    std::unordered_set<Value> made;
    observers_.resize(n);
    for (std::uint32_t w : within) {
      const auto out = written(h[w]);
      if (!out) continue;
      made.insert(*out);
      for (std::uint32_t o : within) {
        const Value v = observed(h[o]);
        const bool produces = v == kPresentUnknown ? *out != kAbsent : *out == v;
        if (o == w || !produces || h[w].invoke >= h[o].ret) continue;
        if (first_ret_invoked_after(kind_not_producing(v), h[w].ret) < h[o].invoke) continue;
        observers_[w].push_back(o);
      }
    }
    for (std::uint32_t o : within) {
      if (unwritten_read_) break;
      const Value v = observed(h[o]);
      if (v != kAbsent && v != kPresentUnknown && !made.count(v)) unwritten_read_ = o;
    }
  }

  // x and, transitively, every operation in `within` that may have observed a write among them.
  std::vector<std::uint32_t> cone(std::uint32_t x, const std::vector<std::uint32_t>& within) const {
    std::vector<char> in(h_.size(), 0), seen(h_.size(), 0);
    for (std::uint32_t i : within) in[i] = 1;
    std::vector<std::uint32_t> out{x}, todo{x};
    seen[x] = 1;
    while (!todo.empty()) {
      const std::uint32_t w = todo.back();
      todo.pop_back();
      for (std::uint32_t o : observers_[w]) {
        if (in[o] && !seen[o]) {
          seen[o] = 1;
          out.push_back(o);
          todo.push_back(o);
        }
      }
    }
    return out;
  }

  // True if no operation deleted from `from` (the set this object was built on) to get `to` is a
  // write that an operation of `to` may have observed. Then deleting them keeps a violation: in
  // any linearization of `from`, the last write before each op of `to` is in `to` (or there is
  // none), so the linearization restricted to `to` is valid. Contrapositive: `to` not
  // linearizable => `from` not linearizable. (The relation must be rebuilt after each deletion:
  // a deleted write no longer shadows anything.)
  bool deletion_sound(const std::vector<std::uint32_t>& from,
                      const std::vector<std::uint32_t>& to) const {
    std::vector<char> in(h_.size(), 0);
    for (std::uint32_t i : to) in[i] = 1;
    for (std::uint32_t w : from) {
      if (in[w]) continue;
      for (std::uint32_t o : observers_[w]) {
        if (in[o]) return false;
      }
    }
    return true;
  }

  // An operation that observed a value no operation in H wrote, if any.
  std::optional<std::uint32_t> unwritten_read() const { return unwritten_read_; }

 private:
  // Write kinds: 0 all writes, 1 writes of a value, 2 writes of "absent".
  static bool in_kind(int k, Value w) { return k == 0 || (k == 1) == (w != kAbsent); }
  // The writes that cannot have produced observation v.
  static int kind_not_producing(Value v) {
    return v == kAbsent ? 1 : v == kPresentUnknown ? 2 : 0;
  }
  std::uint64_t first_ret_invoked_after(int k, std::uint64_t t) const {
    auto it = std::upper_bound(by_invoke_[k].begin(), by_invoke_[k].end(),
                               std::pair<std::uint64_t, std::uint64_t>{t, ~std::uint64_t{0}});
    return suffix_min_ret_[k][static_cast<std::size_t>(it - by_invoke_[k].begin())];
  }

  const History& h_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> by_invoke_[3];
  std::vector<std::uint64_t> suffix_min_ret_[3];
  std::vector<std::vector<std::uint32_t>> observers_;
  std::optional<std::uint32_t> unwritten_read_;
};

}  // namespace detail

struct Shrunk {
  History witness;          // invoke order
  Value initial = kAbsent;  // kUnknown: it fails whatever the key held before it
};

// Shrinks `ops` (one key's history, not linearizable from `initial`) to a witness: a sub-history
// that is itself not linearizable, from any initial state when possible, and that was reached
// only by deletions that provably keep a violation (so the witness failing proves that `ops`
// fails):
//  - real-time suffixes at quiescent points (every kept op returned before any deleted op began);
//  - from an arbitrary initial state, real-time prefixes at quiescent points (the deleted ops
//    come first in every linearization; the state they leave is one of the "any" initial states);
//  - any set of operations that contains no write a kept operation may have observed
//    (Observers::deletion_sound), tried as cones (an op and its observers, transitively), thread
//    suffixes, chunks and single operations.
// From an absent key, an operation that observed a value nobody wrote is a witness on its own.
// Work: O(n^2) to build Observers, then O(n) checks of O(n) each in practice.
inline Shrunk shrink(History ops, Value initial = kAbsent) {
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.invoke < b.invoke; });
  const History& h = ops;
  Shrunk out;
  CheckOptions co;
  co.max_states = std::size_t{1} << 20;
  co.initial = kUnknown;
  if (check_key(h, co) != Verdict::not_linearizable) co.initial = initial;
  out.initial = co.initial;
  const bool any_initial = co.initial == kUnknown;
  using Indices = std::vector<std::uint32_t>;
  Indices cur(h.size());
  for (std::uint32_t i = 0; i < h.size(); ++i) cur[i] = i;
  std::optional<detail::Observers> observers;
  observers.emplace(h, cur);

  if (initial == kAbsent) {
    if (auto o = observers->unwritten_read()) {
      out.witness = {h[*o]};
      out.initial = kAbsent;
      return out;
    }
  }

  auto commit = [&](Indices s) {
    cur = std::move(s);
    observers.emplace(h, cur);
  };
  auto fails = [&](const Indices& s) {
    if (s.empty()) return false;
    History sub;
    for (std::uint32_t i : s) sub.push_back(h[i]);
    return check_key(sub, co) == Verdict::not_linearizable;
  };
  auto fails_sound = [&](const Indices& s) {
    return observers->deletion_sound(cur, s) && fails(s);
  };
  auto without = [&](const std::vector<char>& drop) {
    Indices kept;
    for (std::uint32_t i : cur) {
      if (!drop[i]) kept.push_back(i);
    }
    return kept;
  };

  // Real-time cuts at quiescent points: every op before position c returns before op c starts.
  auto cuts = [&] {
    std::vector<std::size_t> at;
    std::uint64_t max_ret = 0;
    for (std::size_t c = 1; c < cur.size(); ++c) {
      max_ret = std::max(max_ret, h[cur[c - 1]].ret);
      if (max_ret < h[cur[c]].invoke) at.push_back(c);
    }
    for (std::size_t c : at) {  // the shortest failing prefix [0, c)
      Indices s(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(c));
      if (fails(s)) {
        commit(std::move(s));
        return true;
      }
    }
    if (!any_initial) return false;
    for (auto it = at.rbegin(); it != at.rend(); ++it) {  // the shortest failing suffix
      Indices s(cur.begin() + static_cast<std::ptrdiff_t>(*it), cur.end());
      if (fails(s)) {
        commit(std::move(s));
        return true;
      }
    }
    return false;
  };
  // An operation with its cone of possible observers, latest first: sound by construction.
  auto cones = [&] {
    bool changed = false;
    for (std::size_t k = cur.size(); k-- > 0;) {
      if (k >= cur.size()) continue;
      std::vector<char> drop(h.size(), 0);
      for (std::uint32_t i : observers->cone(cur[k], cur)) drop[i] = 1;
      Indices s = without(drop);
      if (fails(s)) {
        commit(std::move(s));
        changed = true;
      }
    }
    return changed;
  };
  // Each thread's suffix, longest first.
  auto thread_suffixes = [&] {
    bool changed = false;
    std::vector<std::uint32_t> threads;
    for (std::uint32_t i : cur) threads.push_back(h[i].thread);
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (std::uint32_t t : threads) {
      Indices mine;
      for (std::uint32_t i : cur) {
        if (h[i].thread == t) mine.push_back(i);
      }
      for (std::uint32_t from : mine) {
        std::vector<char> drop(h.size(), 0);
        for (std::uint32_t i : cur) drop[i] = h[i].thread == t && h[i].invoke >= h[from].invoke;
        Indices s = without(drop);
        if (fails_sound(s)) {
          commit(std::move(s));
          changed = true;
          break;
        }
      }
    }
    return changed;
  };
  // Chunks of consecutive operations, halving down to single ones.
  auto chunks = [&] {
    bool changed = false;
    for (std::size_t chunk = std::max<std::size_t>(cur.size() / 2, 1);; chunk /= 2) {
      for (std::size_t start = 0; start < cur.size();) {
        const std::size_t end = std::min(cur.size(), start + chunk);
        std::vector<char> drop(h.size(), 0);
        for (std::size_t j = start; j < end; ++j) drop[cur[j]] = 1;
        Indices s = without(drop);
        if (fails_sound(s)) {
          commit(std::move(s));
          changed = true;
        } else {
          start = end;
        }
      }
      if (chunk == 1) break;
    }
    return changed;
  };
  for (bool changed = true; changed;) {
    changed = cuts();
    changed = cones() || changed;
    changed = thread_suffixes() || changed;
    changed = chunks() || changed;
  }
  for (std::uint32_t i : cur) out.witness.push_back(h[i]);
  return out;
}

inline std::string value_text(Value v) {
  if (v == kAbsent) return "absent";
  return std::to_string(v);
}

// One line per operation, in invoke order, stamps relative to `t0` (default: the first invoke).
inline std::string format(std::span<const Op> ops, std::optional<std::uint64_t> base = {}) {
  std::vector<Op> sorted(ops.begin(), ops.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const Op& a, const Op& b) { return a.invoke < b.invoke; });
  const std::uint64_t t0 = base ? *base : sorted.empty() ? 0 : sorted.front().invoke;
  std::ostringstream out;
  for (const Op& o : sorted) {
    std::string call, result;
    switch (o.kind) {
      case OpKind::get:
        call = "get()";
        result = value_text(o.result);
        break;
      case OpKind::set:
        call = "set(" + std::to_string(o.arg) + ")";
        result = o.result ? "inserted" : "assigned";
        break;
      case OpKind::insert:
        call = "insert(" + std::to_string(o.arg) + ")";
        result = o.result ? "inserted" : "present";
        break;
      case OpKind::erase:
        call = "erase()";
        result = o.result ? "erased" : "absent";
        break;
      case OpKind::increment:
        call = "increment(+" + std::to_string(o.arg) + ")";
        result = value_text(o.result);
        break;
      case OpKind::take:
        call = "take()";
        result = value_text(o.result);
        break;
    }
    std::string line = "  T" + std::to_string(o.thread) + "  ";
    line += call;
    line.resize(std::max<std::size_t>(line.size(), 40), ' ');
    line += " -> " + result;
    line.resize(std::max<std::size_t>(line.size(), 64), ' ');
    line += " [" + std::to_string(o.invoke - t0) + ", " + std::to_string(o.ret - t0) + "]\n";
    out << line;
  }
  return out.str();
}

struct KeyFailure {
  std::uint32_t key = 0;
  std::size_t ops = 0;        // operations on that key in the history
  History witness;            // shrunk, invoke order
  Value witness_initial = kAbsent;  // kUnknown: fails whatever the key held before
};

struct Result {
  Verdict verdict = Verdict::linearizable;
  CheckStats stats;
  std::optional<KeyFailure> failure;  // the first failing key, shrunk
  std::string report;                 // empty when linearizable
};

// Splits `history` by key, checks each key from `initial`, and shrinks the first failing one.
inline Result check(const History& history, Value initial = kAbsent,
                    const std::function<std::string(std::uint32_t)>& key_name = {}) {
  Result r;
  std::vector<History> by_key;
  for (const Op& o : history) {
    if (o.key >= by_key.size()) by_key.resize(o.key + 1);
    by_key[o.key].push_back(o);
  }
  CheckOptions co;
  co.initial = initial;
  for (std::uint32_t k = 0; k < by_key.size(); ++k) {
    const Verdict v = check_key(by_key[k], co, &r.stats);
    if (v == Verdict::linearizable) continue;
    if (v == Verdict::gave_up) {
      if (r.verdict == Verdict::linearizable) r.verdict = Verdict::gave_up;
      continue;
    }
    r.verdict = Verdict::not_linearizable;
    KeyFailure f;
    f.key = k;
    f.ops = by_key[k].size();
    Shrunk sh = shrink(by_key[k], initial);
    f.witness = std::move(sh.witness);
    f.witness_initial = sh.initial;
    const std::string name = key_name ? key_name(k) : "key " + std::to_string(k);
    std::uint64_t base = ~std::uint64_t{0};
    for (const Op& o : by_key[k]) base = std::min(base, o.invoke);
    std::ostringstream out;
    out << "NOT LINEARIZABLE: " << name << " (" << f.ops << " operations on it). A minimal "
        << "witness of " << f.witness.size() << " operations that no order respecting real time "
        << "explains"
        << (f.witness_initial == kUnknown ? ", whatever the key held before it"
                                          : ", starting from an absent key")
        << " (thread, call -> result, [invoke, return] in clock ticks from the key's first "
        << "invoke):\n"
        << format(f.witness, base);
    const std::uint64_t lo = f.witness.empty() ? 0 : f.witness.front().invoke;
    std::uint64_t hi = 0;
    for (const Op& o : f.witness) hi = std::max(hi, o.ret);
    History context;
    for (const Op& o : by_key[k]) {
      if (o.ret >= lo && o.invoke <= hi) context.push_back(o);
    }
    const std::size_t shown = std::min<std::size_t>(context.size(), 40);
    out << "Context: " << context.size() << " operations on " << name
        << " overlap the witness in time" << (shown < context.size() ? "; the first 40" : "")
        << ":\n"
        << format(std::span<const Op>(context.data(), shown), base);
    r.report = out.str();
    r.failure = std::move(f);
    break;
  }
  if (r.verdict == Verdict::gave_up) r.report = "search budget exhausted on some key";
  return r;
}

// ---------------------------------------------------------------------------------------------
// Recording.

// The shared clock. Both stamps are acq_rel read-modify-writes of one counter:
//  - the return stamp is a release: the finished operation is sequenced before it;
//  - the invoke stamp is an acquire: it is sequenced before the operation it stamps.
// A RMW reading a later value in the counter's modification order reads from a release sequence
// headed by every earlier RMW (all writes to it are RMWs), so A.ret < B.invoke means A's return
// stamp synchronizes with B's invoke stamp, and A's operation happens before B's. That is the
// real-time order linearizability is defined by. Relaxed stamps would still be totally ordered,
// but the map operation could be reordered across them and the checker would report false
// violations. The counter has its own cache line; the contention it adds is part of the test.
class Clock {
 public:
  std::uint64_t invoke() { return now_.fetch_add(1, std::memory_order_acq_rel); }
  std::uint64_t ret() { return now_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  alignas(64) std::atomic<std::uint64_t> now_{1};
  char pad_[64 - sizeof(std::atomic<std::uint64_t>)] = {};
};

struct RunOptions {
  int threads = 3;                 // 2-4
  int keys = 3;                    // hot keys per round
  int ops_per_thread = 400;        // per round
  bool erase = true;               // erase and take (update-erase); false when !concurrent_erase
  std::chrono::milliseconds budget{500};  // stop starting rounds after this
  int max_rounds = 1 << 20;
  std::uint64_t seed = 1;
};

struct RunSummary {
  int rounds = 0;
  std::size_t ops = 0;
  std::size_t states = 0;
  std::size_t overlapping = 0;  // ops whose interval overlaps another op's: real concurrency
  bool linearizable = true;
  bool gave_up = false;
  std::string report;
  std::optional<KeyFailure> failure;
  History history;  // the failing round's history (empty when linearizable)
};

// How many operations overlap at least one other operation in time. Without overlap a history is
// sequential and trivially checked; this says how much concurrency the machine produced.
inline std::size_t overlapping(History h) {
  std::sort(h.begin(), h.end(), [](const Op& a, const Op& b) { return a.invoke < b.invoke; });
  std::vector<char> hit(h.size(), 0);
  std::uint64_t max_ret = 0;
  std::size_t max_at = 0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (i > 0 && max_ret > h[i].invoke) hit[i] = hit[max_at] = 1;
    if (h[i].ret > max_ret) {
      max_ret = h[i].ret;
      max_at = i;
    }
  }
  std::size_t n = 0;
  for (char c : hit) n += c != 0;
  return n;
}

// Records one round: `threads` threads, each `ops_per_thread` operations on keys
// key_prefix + "0" .. key_prefix + (keys-1), which must be absent beforehand.
template <KeyValueMap M>
  requires std::same_as<typename M::mapped_type, Value>
History record_round(M& map, const RunOptions& o, const std::string& key_prefix,
                     std::uint64_t seed) {
  Clock clock;
  std::vector<std::string> keys;
  for (int k = 0; k < o.keys; ++k) keys.push_back(key_prefix + std::to_string(k));
  std::vector<History> per(o.threads);
  std::atomic<int> ready{0};
  auto body = [&](int t) {
    std::mt19937_64 rng(seed * 1000003u + static_cast<std::uint64_t>(t));
    History& h = per[t];
    h.reserve(o.ops_per_thread);
    // Set values: distinct per operation and far apart, so increment chains never meet another
    // write's value (the witness rule relies on values naming their writer).
    std::uint64_t next_value = (static_cast<std::uint64_t>(t) + 1) << 40;
    // relaxed: a start line for the threads; the clock orders everything that matters.
    ready.fetch_add(1, std::memory_order_relaxed);
    while (ready.load(std::memory_order_relaxed) < o.threads) std::this_thread::yield();
    for (int i = 0; i < o.ops_per_thread; ++i) {
      Op op;
      op.thread = static_cast<std::uint32_t>(t);
      op.key = static_cast<std::uint32_t>(rng() % keys.size());
      const std::string& key = keys[op.key];
      const unsigned r = static_cast<unsigned>(rng() % 100);
      if (r < 25) {
        op.kind = OpKind::get;
      } else if (r < 40) {
        op.kind = OpKind::set;
      } else if (r < 50) {
        op.kind = OpKind::insert;
      } else if (r < 80) {
        op.kind = OpKind::increment;
      } else if (o.erase && r < 90) {
        op.kind = OpKind::erase;
      } else if (o.erase) {
        op.kind = OpKind::take;
      } else {
        op.kind = r < 90 ? OpKind::increment : OpKind::get;
      }
      if (op.kind == OpKind::set || op.kind == OpKind::insert) op.arg = (next_value += 1 << 16);
      if (op.kind == OpKind::increment) op.arg = 1;
      op.invoke = clock.invoke();
      switch (op.kind) {
        case OpKind::get: {
          Value got = kAbsent;
          map.find(key, [&](const Value& v) { got = v; });
          op.result = got;
          break;
        }
        case OpKind::set:
          op.result = map.insert_or_assign(key, op.arg) ? 1 : 0;
          break;
        case OpKind::insert:
          op.result = map.insert(key, op.arg) ? 1 : 0;
          break;
        case OpKind::erase:
          op.result = map.erase(key) ? 1 : 0;
          break;
        case OpKind::increment: {
          Value out = 0;
          const Value d = op.arg;
          map.update(key, [&](const Value* cur) {
            out = cur ? *cur + d : d;  // assigned, not accumulated: fn may run more than once
            return Update<Value>::assign(out);
          });
          op.result = out;
          break;
        }
        case OpKind::take: {
          Value old = kAbsent;
          map.update(key, [&](const Value* cur) {
            old = cur ? *cur : kAbsent;
            return cur ? Update<Value>::erase() : Update<Value>::keep();
          });
          op.result = old;
          break;
        }
      }
      op.ret = clock.ret();
      h.push_back(op);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) threads.emplace_back(body, t);
  for (auto& th : threads) th.join();
  History all;
  for (auto& h : per) all.insert(all.end(), h.begin(), h.end());
  return all;
}

// Records and checks rounds on fresh keys until the time budget or max_rounds runs out, or a
// round is not linearizable. Each round starts from absent keys ("lc<round>/<k>").
template <KeyValueMap M>
  requires std::same_as<typename M::mapped_type, Value>
RunSummary run(M& map, const RunOptions& o) {
  RunSummary s;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < o.max_rounds; ++round) {
    if (round > 0 && std::chrono::steady_clock::now() - start >= o.budget) break;
    const std::string prefix = "lc" + std::to_string(round) + "/";
    History h = record_round(map, o, prefix, o.seed + static_cast<std::uint64_t>(round));
    ++s.rounds;
    s.ops += h.size();
    s.overlapping += overlapping(h);
    Result r = check(h, kAbsent, [&](std::uint32_t k) {
      return "key \"" + prefix + std::to_string(k) + "\" (round " + std::to_string(round) + ")";
    });
    s.states += r.stats.states;
    if (r.verdict == Verdict::gave_up) s.gave_up = true;
    if (r.verdict == Verdict::not_linearizable) {
      s.linearizable = false;
      s.report = std::move(r.report);
      s.failure = std::move(r.failure);
      s.history = std::move(h);
      break;
    }
  }
  return s;
}

}  // namespace kvlab::lincheck
