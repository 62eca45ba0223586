// Unit tests of the linearizability checker (tests/lincheck/lincheck.hpp): hand-built histories
// with known answers, the shrinker's witness rule, speed on a few hundred operations per key, a
// planted non-atomic update that the checker must catch, and a correct backend that must pass.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "structures/hash/locked.hpp"
#include "tests/lincheck/lincheck.hpp"

namespace {

namespace lc = kvlab::lincheck;
using lc::kAbsent;
using lc::Op;
using lc::OpKind;

Op op(std::uint32_t thread, OpKind kind, lc::Value arg, lc::Value result, std::uint64_t invoke,
      std::uint64_t ret, std::uint32_t key = 0) {
  Op o;
  o.thread = thread;
  o.kind = kind;
  o.key = key;
  o.arg = arg;
  o.result = result;
  o.invoke = invoke;
  o.ret = ret;
  return o;
}

bool linearizable(const lc::History& h, lc::Value initial = kAbsent) {
  lc::CheckOptions o;
  o.initial = initial;
  return lc::check_key(h, o) == lc::Verdict::linearizable;
}

// A planted bug: hash/locked whose update reads, yields, then writes back without holding the
// lock across the three steps, so two concurrent updates can both apply fn to the same value.
template <class V>
class NonAtomicUpdate {
 public:
  using mapped_type = V;
  static constexpr kvlab::BackendTraits kTraits{
      .name = "test/non-atomic-update",
      .family = "hash",
      .progress = kvlab::Progress::blocking,
      .reclamation = kvlab::Reclamation::immediate,
      .reference = "planted bug (tests/lincheck/lincheck_test.cpp)",
      .summary = "hash/locked with a read-yield-write update",
  };

  explicit NonAtomicUpdate(const kvlab::MapOptions& o) : inner_(o) {}

  template <class F>
  bool find(std::string_view key, F&& visitor) {
    return inner_.find(key, std::forward<F>(visitor));
  }
  bool insert(std::string_view key, const V& v) { return inner_.insert(key, v); }
  bool insert_or_assign(std::string_view key, const V& v) { return inner_.insert_or_assign(key, v); }
  bool erase(std::string_view key) { return inner_.erase(key); }
  template <class F>
  kvlab::UpdateOutcome update(std::string_view key, F&& fn) {
    std::optional<V> cur;
    inner_.find(key, [&](const V& v) { cur = v; });
    std::this_thread::yield();  // THE BUG: nothing holds the key between the read and the write
    kvlab::Update<V> u = fn(cur ? &*cur : nullptr);
    switch (u.kind()) {
      case kvlab::Update<V>::Kind::keep:
        return kvlab::UpdateOutcome::unchanged;
      case kvlab::Update<V>::Kind::erase:
        return inner_.erase(key) ? kvlab::UpdateOutcome::erased : kvlab::UpdateOutcome::unchanged;
      case kvlab::Update<V>::Kind::assign:
        return inner_.insert_or_assign(key, std::move(u).value()) ? kvlab::UpdateOutcome::inserted
                                                                  : kvlab::UpdateOutcome::assigned;
    }
    return kvlab::UpdateOutcome::unchanged;
  }
  std::size_t size_approx() { return inner_.size_approx(); }
  template <class F>
  void for_each(F&& fn) {
    inner_.for_each(std::forward<F>(fn));
  }
  void clear() { inner_.clear(); }

 private:
  kvlab::hash::Locked<V> inner_;
};
static_assert(kvlab::KeyValueMap<NonAtomicUpdate<std::uint64_t>>);

kvlab::MapOptions small_options() {
  kvlab::MapOptions o;
  o.expected_keys = 1 << 10;
  return o;
}

// A linearizable history by construction: every operation takes effect at a random point inside
// its interval, results computed by a register applied in that order.
lc::History generated_history(int threads, int ops_per_thread, int keys, unsigned seed) {
  std::mt19937_64 rng(seed);
  struct Pending {
    Op op;
    std::uint64_t point;
  };
  std::vector<Pending> all;
  for (int t = 0; t < threads; ++t) {
    std::uint64_t now = rng() % 5;
    for (int i = 0; i < ops_per_thread; ++i) {
      Op o;
      o.thread = static_cast<std::uint32_t>(t);
      o.key = static_cast<std::uint32_t>(rng() % keys);
      o.kind = static_cast<OpKind>(rng() % 6);
      o.arg = o.kind == OpKind::increment ? 1 : (static_cast<std::uint64_t>(t + 1) << 40) + i * 7;
      o.invoke = now * 4 + static_cast<std::uint64_t>(t);  // distinct stamps across threads
      now += 1 + rng() % 6;
      o.ret = now * 4 + static_cast<std::uint64_t>(t);
      now += rng() % 3;
      all.push_back({o, o.invoke + 1 + rng() % (o.ret - o.invoke - 1)});
    }
  }
  std::sort(all.begin(), all.end(),
            [](const Pending& a, const Pending& b) { return a.point < b.point; });
  std::vector<lc::Value> state(keys, kAbsent);
  lc::History h;
  for (auto& p : all) {
    lc::Value& s = state[p.op.key];
    Op& o = p.op;
    switch (o.kind) {
      case OpKind::get: o.result = s; break;
      case OpKind::set: o.result = s == kAbsent; s = o.arg; break;
      case OpKind::insert:
        o.result = s == kAbsent;
        if (s == kAbsent) s = o.arg;
        break;
      case OpKind::erase: o.result = s != kAbsent; s = kAbsent; break;
      case OpKind::increment: s = o.result = s == kAbsent ? o.arg : s + o.arg; break;
      case OpKind::take: o.result = s; s = kAbsent; break;
    }
    h.push_back(o);
  }
  return h;
}

}  // namespace

TEST_CASE("a sequential history that follows the register is linearizable") {
  const lc::History h = {
      op(0, OpKind::get, 0, kAbsent, 0, 1),       op(0, OpKind::set, 5, 1, 2, 3),
      op(1, OpKind::insert, 9, 0, 4, 5),          op(1, OpKind::increment, 1, 6, 6, 7),
      op(0, OpKind::take, 0, 6, 8, 9),            op(1, OpKind::erase, 0, 0, 10, 11),
      op(0, OpKind::insert, 9, 1, 12, 13),        op(1, OpKind::get, 0, 9, 14, 15),
  };
  CHECK(linearizable(h));
  CHECK(lc::check(h).verdict == lc::Verdict::linearizable);
}

TEST_CASE("a read that returns a value written only after the read returned is not linearizable") {
  const lc::History h = {
      op(0, OpKind::get, 0, 5, 0, 1),
      op(1, OpKind::set, 5, 1, 2, 3),
  };
  CHECK_FALSE(linearizable(h));
  // The same read overlapping the write is fine.
  const lc::History overlapping = {
      op(0, OpKind::get, 0, 5, 0, 3),
      op(1, OpKind::set, 5, 1, 1, 2),
  };
  CHECK(linearizable(overlapping));
}

TEST_CASE("overlapping writes may take effect in either order, but later reads must agree") {
  // set(1) and set(2) overlap; a read after both may see either, and a read overlapping them may
  // see the old state too.
  for (lc::Value seen : {lc::Value{1}, lc::Value{2}}) {
    // The first to take effect inserted, the other assigned.
    const lc::History h = {
        op(0, OpKind::set, 1, seen == 2 ? 1 : 0, 0, 10),
        op(1, OpKind::set, 2, seen == 2 ? 0 : 1, 1, 11),
        op(2, OpKind::get, 0, kAbsent, 2, 3),
        op(2, OpKind::get, 0, seen, 12, 13),
    };
    CHECK(linearizable(h));
  }
  // The first write to take effect inserted: both claiming "inserted" is impossible.
  CHECK_FALSE(linearizable({op(0, OpKind::set, 1, 1, 0, 10), op(1, OpKind::set, 2, 1, 1, 11)}));
  // Two reads after both writes, in sequence, see 2 then 1: the order flipped.
  const lc::History flipped = {
      op(0, OpKind::set, 1, 1, 0, 10), op(1, OpKind::set, 2, 0, 1, 11),
      op(2, OpKind::get, 0, 2, 12, 13), op(2, OpKind::get, 0, 1, 14, 15),
  };
  CHECK_FALSE(linearizable(flipped));
}

TEST_CASE("two overlapping increments that return the same value are a lost update") {
  const lc::History h = {
      op(0, OpKind::set, 5, 1, 0, 1),
      op(1, OpKind::increment, 1, 6, 2, 5),
      op(2, OpKind::increment, 1, 6, 3, 6),
      op(0, OpKind::get, 0, 6, 7, 8),
  };
  CHECK_FALSE(linearizable(h));
  const lc::Result r = lc::check(h);
  REQUIRE(r.verdict == lc::Verdict::not_linearizable);
  REQUIRE(r.failure);
  // The witness: the two increments, whatever the key held before them.
  CHECK(r.failure->witness.size() == 2);
  CHECK(r.failure->witness_initial == lc::kUnknown);
  for (const Op& o : r.failure->witness) CHECK(o.kind == OpKind::increment);
  CHECK(r.report.find("NOT LINEARIZABLE") != std::string::npos);
  MESSAGE(r.report);
}

TEST_CASE("an unknown initial state explains one observation but not two that disagree") {
  CHECK(linearizable({op(0, OpKind::increment, 1, 6, 0, 1)}, lc::kUnknown));
  CHECK(linearizable({op(0, OpKind::insert, 7, 0, 0, 1), op(0, OpKind::get, 0, 3, 2, 3)},
                     lc::kUnknown));
  CHECK_FALSE(linearizable({op(0, OpKind::insert, 7, 0, 0, 1), op(0, OpKind::get, 0, kAbsent, 2, 3)},
                           lc::kUnknown));
  CHECK_FALSE(linearizable({op(0, OpKind::get, 0, 3, 0, 1), op(0, OpKind::get, 0, 4, 2, 3)},
                           lc::kUnknown));
}

// Deleting the second set(5) below would leave set(5), increment -> 6, increment -> 6: a "lost
// update" that never happened. The witness must blame what is wrong: the read of the
// overwritten 6 after set(9).
TEST_CASE("the shrinker keeps the write that explains a value") {
  const lc::History h = {
      op(0, OpKind::set, 5, 1, 0, 1),       op(0, OpKind::increment, 1, 6, 2, 3),
      op(1, OpKind::set, 5, 0, 4, 5),       op(1, OpKind::increment, 1, 6, 6, 7),
      op(0, OpKind::set, 9, 0, 8, 9),       op(0, OpKind::get, 0, 6, 10, 11),
  };
  const lc::Result r = lc::check(h);
  REQUIRE(r.failure);
  const lc::History& w = r.failure->witness;
  MESSAGE(r.report);
  REQUIRE(w.size() == 2);
  CHECK(w[0].kind == OpKind::set);
  CHECK(w[0].arg == 9);
  CHECK(w[1].kind == OpKind::get);
  CHECK(w[1].result == 6);
}

TEST_CASE("a read of a value nobody wrote is a witness on its own") {
  const lc::History h = {
      op(0, OpKind::set, 5, 1, 0, 1),
      op(1, OpKind::get, 0, 5, 2, 3),
      op(1, OpKind::get, 0, 77, 4, 5),
  };
  const lc::Result r = lc::check(h);
  REQUIRE(r.failure);
  REQUIRE(r.failure->witness.size() == 1);
  CHECK(r.failure->witness[0].result == 77);
  CHECK(r.failure->witness_initial == kAbsent);
}

TEST_CASE("a failure on one key is reported on that key alone") {
  lc::History h = generated_history(3, 60, 3, 42);
  // Key 7 gets a stale read; keys 0-2 stay linearizable.
  h.push_back(op(0, OpKind::set, 11, 1, 100000, 100001, 7));
  h.push_back(op(1, OpKind::set, 12, 0, 100002, 100003, 7));
  h.push_back(op(2, OpKind::get, 0, 11, 100004, 100005, 7));
  const lc::Result r = lc::check(h);
  REQUIRE(r.failure);
  CHECK(r.failure->key == 7);
  CHECK(r.failure->ops == 3);
  CHECK(r.failure->witness.size() == 2);  // set(12) then get -> 11
}

TEST_CASE("a few hundred operations per key check quickly") {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const lc::History h = generated_history(4, 300, 3, seed);  // ~400 ops per key
    const auto t0 = std::chrono::steady_clock::now();
    const lc::Result r = lc::check(h);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    CAPTURE(seed);
    CHECK(r.verdict == lc::Verdict::linearizable);
    CHECK(ms < 2000);
  }
  // One corrupted result in a long history is found, and shrunk to a small witness.
  lc::History h = generated_history(4, 300, 1, 9);
  for (Op& o : h) {
    if (o.kind == OpKind::increment && o.invoke > 2000) {
      o.result += 1;
      break;
    }
  }
  const lc::Result r = lc::check(h);
  REQUIRE(r.verdict == lc::Verdict::not_linearizable);
  CHECK(r.failure->witness.size() <= 16);  // 4 threads with long, random overlaps
  CHECK_FALSE(linearizable(r.failure->witness, r.failure->witness_initial));
  MESSAGE(r.report);
}

// Property: a read-yield-write update loses increments under contention; the recorder and checker
// catch it within a bounded number of short rounds, and some failing round yields a small witness
// (witnesses are sound, so one whose violation needs many operations to show stays long; those
// rounds are counted and the search goes on).
TEST_CASE("a planted non-atomic update is caught with a small witness") {
  NonAtomicUpdate<std::uint64_t> map(small_options());
  lc::RunOptions o;
  o.threads = 3;
  o.keys = 1;
  o.ops_per_thread = 40;
  o.budget = std::chrono::seconds(10);
  o.max_rounds = 200;
  std::optional<lc::RunSummary> small;
  int failing_rounds = 0, rounds = 0;
  std::vector<std::size_t> sizes;
  for (int attempt = 0; attempt < 20 && !small; ++attempt) {
    o.seed = 1 + static_cast<std::uint64_t>(attempt) * 1000;
    lc::RunSummary s = lc::run(map, o);
    rounds += s.rounds;
    map.clear();
    if (s.linearizable) continue;
    ++failing_rounds;
    REQUIRE(s.failure);
    const lc::History& w = s.failure->witness;
    sizes.push_back(w.size());
    CHECK_FALSE(linearizable(w, s.failure->witness_initial));  // every witness fails on its own
    CHECK_FALSE(linearizable(w, kAbsent));
    if (w.size() <= 8) small = std::move(s);
  }
  std::string size_list;
  for (std::size_t n : sizes) size_list += std::to_string(n) + " ";
  MESSAGE("rounds: " << rounds << ", failing: " << failing_rounds << ", witness sizes: " << size_list);
  REQUIRE(failing_rounds > 0);
  REQUIRE(small);
  MESSAGE(small->report);
  CHECK(small->failure->witness.size() <= 8);
}

// Property: hash/locked runs update under the shard lock, so every recorded history linearizes.
TEST_CASE("hash/locked histories on hot keys are linearizable") {
  kvlab::hash::Locked<std::uint64_t> map(small_options());
  lc::RunOptions o;
  o.threads = 3;
  o.keys = 3;
  o.ops_per_thread = 300;
  o.budget = std::chrono::milliseconds(300);
  const lc::RunSummary s = lc::run(map, o);
  INFO(s.report);
  CHECK(s.linearizable);
  CHECK_FALSE(s.gave_up);
  MESSAGE(s.rounds << " rounds, " << s.ops << " operations (" << s.overlapping
                   << " overlapping another), " << s.states << " search states");
  CHECK(s.overlapping > 0);  // the run produced real concurrency
}
