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
// Shrinking. A failing key history is shrunk by deleting operations (real-time prefixes and
// suffixes at quiescent points, each thread's suffix, chunks, single operations) while the rest
// stays non-linearizable. Deleting a write can manufacture a violation (drop the set(5) between two
// increments that both return 6 and the rest looks like a lost update), so a deletion is accepted
// only if the remainder (1) is non-linearizable from ANY initial state of the key, which makes
// deleting a real-time prefix sound, and (2) is closed: every observation in it (a value, "absent",
// "present") was produced by an operation in it, except for one, the initial state, which only
// operations that no write in it precedes may observe. (From an absent key, an operation that
// observed a value nobody wrote is a witness on its own.) The witness is then a sub-history that
// no initial state explains, with no observation left dangling. Rule (2) is a guard, not a proof,
// so the report also prints every operation overlapping the witness, and a "sound core": the
// history shrunk only by deletions that provably keep it non-linearizable.
//
// Thread safety: run() and record_round() drive the map from its own threads; everything else is
// single-threaded. Progress: the search is exponential in the worst case; check() takes a
// state budget and says when it gave up.
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

// What the witness rule needs to know about the whole key history H (sorted by invoke): for each
// operation, which writes in H could have produced what it observed, judged in H, where nothing
// has been deleted yet. A producer p of the value o observed is valid unless some write of H that
// did not produce it lies strictly between them in real time (p.ret < w.invoke, w.ret < o.invoke).
class WitnessRule {
 public:
  // Longer producer lists are cut (most recent kept): a conservative rule only grows witnesses.
  static constexpr std::size_t kMaxProducers = 32;

  WitnessRule(const History& h, Value initial) : h_(h) {
    const std::size_t n = h.size();
    for (int k = 0; k < 3; ++k) {
      for (std::size_t i = 0; i < n; ++i) {
        if (auto w = written(h[i]); w && in_kind(k, *w)) {
          by_invoke_[k].push_back({h[i].invoke, h[i].ret});
          rets_[k].push_back(h[i].ret);
        }
      }
      std::sort(by_invoke_[k].begin(), by_invoke_[k].end());
      std::sort(rets_[k].begin(), rets_[k].end());
      suffix_min_ret_[k].assign(by_invoke_[k].size() + 1, ~std::uint64_t{0});
      for (std::size_t j = by_invoke_[k].size(); j-- > 0;) {
        suffix_min_ret_[k][j] = std::min(suffix_min_ret_[k][j + 1], by_invoke_[k][j].second);
      }
    }
    std::unordered_map<Value, std::vector<std::uint32_t>> producers;
    std::vector<std::uint32_t> value_writers;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (auto w = written(h[i])) {
        producers[*w].push_back(i);
        if (*w != kAbsent) value_writers.push_back(i);
      }
    }
    valid_.resize(n);
    anomalous_.assign(n, false);
    unwritten_.assign(n, false);
    const std::uint64_t t0 = n ? h.front().invoke : 0;
    for (std::uint32_t o = 0; o < n; ++o) {
      const Value v = observed(h[o]);
      const auto it = producers.find(v);
      const std::vector<std::uint32_t>* list =
          v == kPresentUnknown ? &value_writers : (it == producers.end() ? nullptr : &it->second);
      if (list) {
        for (auto r = list->rbegin(); r != list->rend() && valid_[o].size() < kMaxProducers; ++r) {
          const Op& p = h[*r];
          if (*r == o || p.invoke >= h[o].ret) continue;
          if (first_ret_invoked_after(kind_not_producing(v), p.ret) < h[o].invoke) continue;
          valid_[o].push_back(*r);
        }
      }
      unwritten_[o] = v != kPresentUnknown && v != kAbsent && !list;
      bool from_initial;
      if (initial == kUnknown) {
        from_initial = initial_may_explain(o, t0);
      } else {
        from_initial = v == initial && writes_returned_between(kind_not_producing(v), 0,
                                                               h[o].invoke) == 0;
      }
      anomalous_[o] = valid_[o].empty() && !from_initial;
    }
  }

  // True if every observation in the sub-history `s` (indices into H, ascending) is explained
  // inside it, or was already anomalous in H, or (any_initial) is the one initial state.
  bool closed(const std::vector<std::uint32_t>& s, bool any_initial) const {
    if (s.empty()) return false;
    std::vector<char> in(h_.size(), 0);
    for (std::uint32_t i : s) in[i] = 1;
    const std::uint64_t t0 = h_[s.front()].invoke;
    std::optional<Value> init;
    for (std::uint32_t o : s) {
      if (anomalous_[o]) continue;
      bool ok = false;
      for (std::uint32_t p : valid_[o]) {
        if (in[p]) {
          ok = true;
          break;
        }
      }
      if (ok) continue;
      if (!any_initial || !initial_may_explain(o, t0)) return false;
      const Value v = observed(h_[o]);
      if (!init || *init == kPresentUnknown) {
        if (init && v == kAbsent) return false;
        init = v;
      } else if (v != *init && !(v == kPresentUnknown && *init != kAbsent)) {
        return false;
      }
    }
    return true;
  }

  // An operation that observed a value no operation in H wrote: a witness on its own.
  std::optional<std::uint32_t> unwritten_read() const {
    for (std::uint32_t o = 0; o < h_.size(); ++o) {
      if (unwritten_[o]) return o;
    }
    return std::nullopt;
  }

 private:
  // Write kinds: 0 all writes, 1 writes of a value, 2 writes of "absent".
  static bool in_kind(int k, Value w) { return k == 0 || (k == 1) == (w != kAbsent); }
  static int kind_not_producing(Value v) {
    return v == kAbsent ? 1 : v == kPresentUnknown ? 2 : 0;
  }
  std::uint64_t first_ret_invoked_after(int k, std::uint64_t t) const {
    auto it = std::upper_bound(by_invoke_[k].begin(), by_invoke_[k].end(),
                               std::pair<std::uint64_t, std::uint64_t>{t, ~std::uint64_t{0}});
    return suffix_min_ret_[k][static_cast<std::size_t>(it - by_invoke_[k].begin())];
  }
  std::size_t writes_returned_between(int k, std::uint64_t from, std::uint64_t to) const {
    if (to <= from) return 0;
    return static_cast<std::size_t>(
        std::lower_bound(rets_[k].begin(), rets_[k].end(), to) -
        std::lower_bound(rets_[k].begin(), rets_[k].end(), from));
  }
  // The state at t0 (the sub-history's first invoke) may be what o observed: no write of H that
  // could not produce it returned between t0 and o's invoke.
  bool initial_may_explain(std::uint32_t o, std::uint64_t t0) const {
    return writes_returned_between(kind_not_producing(observed(h_[o])), t0, h_[o].invoke) == 0;
  }

  const History& h_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> by_invoke_[3];
  std::vector<std::uint64_t> suffix_min_ret_[3];
  std::vector<std::uint64_t> rets_[3];
  std::vector<std::vector<std::uint32_t>> valid_;
  std::vector<bool> anomalous_, unwritten_;
};

}  // namespace detail

struct Shrunk {
  History witness;         // invoke order
  History sound_core;      // after provably sound deletions only; witness ⊆ sound_core
  Value initial = kAbsent;  // kUnknown: both fail whatever the key held before them
};

// Shrinks `ops` (one key's sub-history, not linearizable from `initial`) in two stages.
//  1. Sound deletions only: real-time suffixes and (from any initial state) prefixes at quiescent
//     points, and read-only operations (get, failed insert/erase, take of absent): whenever the
//     remainder fails, so did the original. Result: sound_core.
//  2. Then any operation, thread suffix or chunk, under the witness rule. Result: the witness, from
//     which no single operation can be deleted under these conditions.
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
  const detail::WitnessRule rule(h, initial);

  using Indices = std::vector<std::uint32_t>;
  auto to_history = [&](const Indices& s) {
    History sub;
    for (std::uint32_t i : s) sub.push_back(h[i]);
    return sub;
  };
  auto fails_sound = [&](const Indices& s) {
    return !s.empty() && check_key(to_history(s), co) == Verdict::not_linearizable;
  };
  auto fails_guarded = [&](const Indices& s) {
    return rule.closed(s, any_initial) && fails_sound(s);
  };
  auto without = [](const Indices& s, auto&& drop) {
    Indices kept;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!drop(i)) kept.push_back(s[i]);
    }
    return kept;
  };
  // Deletes chunks of the positions `eligible` selects, halving down to single operations.
  auto chunks = [&](Indices& cur, auto&& eligible, auto&& fails) {
    bool changed = false;
    Indices cand;
    for (std::size_t i = 0; i < cur.size(); ++i) {
      if (eligible(cur[i])) cand.push_back(cur[i]);
    }
    for (std::size_t chunk = std::max<std::size_t>(cand.size() / 2, 1); !cand.empty(); chunk /= 2) {
      for (std::size_t start = 0; start < cand.size();) {
        const std::size_t end = std::min(cand.size(), start + chunk);
        std::vector<char> drop(h.size(), 0);
        for (std::size_t j = start; j < end; ++j) drop[cand[j]] = 1;
        Indices s = without(cur, [&](std::size_t i) { return drop[cur[i]] != 0; });
        if (fails(s)) {
          cur = std::move(s);
          cand.erase(cand.begin() + static_cast<std::ptrdiff_t>(start),
                     cand.begin() + static_cast<std::ptrdiff_t>(end));
          changed = true;
        } else {
          start = end;
        }
      }
      if (chunk == 1) break;
    }
    return changed;
  };
  // Real-time cuts at quiescent points: every op before position c returns before op c starts.
  auto cuts = [&](Indices& cur, auto&& fails) {
    std::vector<std::size_t> at;
    std::uint64_t max_ret = 0;
    for (std::size_t c = 1; c < cur.size(); ++c) {
      max_ret = std::max(max_ret, h[cur[c - 1]].ret);
      if (max_ret < h[cur[c]].invoke) at.push_back(c);
    }
    for (std::size_t c : at) {  // the shortest failing prefix [0, c)
      Indices s(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(c));
      if (fails(s)) {
        cur = std::move(s);
        return true;
      }
    }
    if (!any_initial) return false;
    for (auto it = at.rbegin(); it != at.rend(); ++it) {  // the shortest failing suffix
      Indices s(cur.begin() + static_cast<std::ptrdiff_t>(*it), cur.end());
      if (fails(s)) {
        cur = std::move(s);
        return true;
      }
    }
    return false;
  };

  Indices cur(h.size());
  for (std::uint32_t i = 0; i < h.size(); ++i) cur[i] = i;
  const auto read_only = [&](std::uint32_t i) { return !written(h[i]).has_value(); };
  for (bool changed = true; changed;) {
    changed = cuts(cur, fails_sound);
    changed = chunks(cur, read_only, fails_sound) || changed;
  }
  out.sound_core = to_history(cur);

  // From an absent key, a read of a value that nobody wrote is its own witness.
  if (initial == kAbsent) {
    if (auto o = rule.unwritten_read()) {
      out.witness = {h[*o]};
      out.initial = kAbsent;
      return out;
    }
  }
  for (bool changed = true; changed;) {
    changed = cuts(cur, fails_guarded);
    std::vector<std::uint32_t> threads;
    for (std::uint32_t i : cur) threads.push_back(h[i].thread);
    std::sort(threads.begin(), threads.end());
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    for (std::uint32_t t : threads) {  // each thread's suffix, longest first
      Indices mine;
      for (std::uint32_t i : cur) {
        if (h[i].thread == t) mine.push_back(i);
      }
      for (std::uint32_t from : mine) {
        Indices s = without(cur, [&](std::size_t i) {
          return h[cur[i]].thread == t && h[cur[i]].invoke >= h[from].invoke;
        });
        if (fails_guarded(s)) {
          cur = std::move(s);
          changed = true;
          break;
        }
      }
    }
    changed = chunks(cur, [](std::uint32_t) { return true; }, fails_guarded) || changed;
  }
  out.witness = to_history(cur);
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
  History sound_core;         // shrunk by provably sound deletions only (see shrink())
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
    f.sound_core = std::move(sh.sound_core);
    f.witness_initial = sh.initial;
    const std::string name = key_name ? key_name(k) : "key " + std::to_string(k);
    std::uint64_t base = ~std::uint64_t{0};
    for (const Op& o : by_key[k]) base = std::min(base, o.invoke);
    std::ostringstream out;
    out << "NOT LINEARIZABLE: " << name << " (" << f.ops << " operations on it); a minimal "
        << "witness of " << f.witness.size() << " operations that no order respecting real time "
        << "explains"
        << (f.witness_initial == kUnknown ? ", whatever the key held before it"
                                          : ", starting from an absent key")
        << " (thread, call -> result, [invoke, return] in clock ticks from the key's first "
        << "invoke):\n"
        << format(f.witness, base);
    // Context: every operation on the key that overlaps the witness's time span.
    const std::uint64_t lo = f.witness.empty() ? 0 : f.witness.front().invoke;
    std::uint64_t hi = 0;
    for (const Op& o : f.witness) hi = std::max(hi, o.ret);
    History context;
    for (const Op& o : by_key[k]) {
      if (o.ret >= lo && o.invoke <= hi) context.push_back(o);
    }
    if (context.size() > 60) context.resize(60);
    out << "all " << context.size() << " operations on " << name
        << " overlapping the witness (the witness rule guards, but does not prove, that deleting "
        << "writes kept the violation real; this is the evidence):\n"
        << format(context, base);
    if (f.sound_core.size() <= 60) {
      out << "a sound core of " << f.sound_core.size()
          << " operations (only deletions that provably keep it non-linearizable):\n"
          << format(f.sound_core, base);
    } else {
      out << "the sound core (only deletions that provably keep it non-linearizable) has "
          << f.sound_core.size() << " operations\n";
    }
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
  bool linearizable = true;
  bool gave_up = false;
  std::string report;
  std::optional<KeyFailure> failure;
  History history;  // the failing round's history (empty when linearizable)
};

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
