// skiplist/kvlab specifics beyond the conformance suite: contention on a handful of keys (so that
// tombstones, helping and the retire handshake run constantly), range bounds on binary keys, and
// an exact count of what goes back to the reclaimer.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "structures/reclaim/epoch.hpp"
#include "structures/skiplist/kvlab.hpp"

namespace {
using Map = kvlab::skiplist::Kvlab<std::uint64_t>;
using U = kvlab::Update<std::uint64_t>;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kScale = 8;
#else
constexpr int kScale = 1;
#endif

// 8 bytes big-endian: sorts like i, holds NUL bytes.
std::string key_of(std::uint64_t i) {
  std::string k(8, '\0');
  for (int b = 7; b >= 0; --b, i >>= 8) k[b] = static_cast<char>(i & 0xff);
  return k;
}
std::uint64_t index_of(std::string_view k) {
  std::uint64_t i = 0;
  for (unsigned char c : k) i = (i << 8) | c;
  return i;
}

// Workers leave through here: once every worker is out of the map (nobody is inside an
// operation), each frees its own retired list before it exits. This keeps these tests about the
// skip list: a thread that exits with retirements pending hands them to the reclaimer's orphan
// list, a path that belongs to (and is tested with) structures/reclaim.
void drain_before_exit(std::barrier<>& all_out) {
  all_out.arrive_and_wait();
  kvlab::reclaim::flush();
}

template <class F>
void run_threads(int n, F&& f) {
  std::barrier<> all_out(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back([&f, &all_out, t] {
      f(t);
      drain_before_exit(all_out);
    });
  }
  for (auto& th : threads) th.join();
}
}  // namespace

TEST_CASE("range bounds are half-open and compare keys as bytes") {
  kvlab::skiplist::Kvlab<std::string> map;
  const std::string keys[] = {
      "", std::string(1, '\0'), "a", std::string("a\0", 2), "ab", "b", "\xff", "\xff\xff"};
  for (const auto& k : keys) REQUIRE(map.insert(k, k));
  auto collect = [&](std::string_view lo, std::string_view hi) {
    std::vector<std::string> got;
    map.range(lo, hi, [&](std::string_view k, const std::string& v) {
      CHECK(k == v);
      got.emplace_back(k);
      return true;
    });
    return got;
  };
  CHECK(collect("a", "ab") == std::vector<std::string>{"a", std::string("a\0", 2)});
  CHECK(collect("", std::string(1, '\0')) == std::vector<std::string>{""});
  CHECK(collect("b", "b").empty());
  CHECK(collect("b", "a").empty());
  CHECK(collect("\x80", "\xff\xff\xff") == std::vector<std::string>{"\xff", "\xff\xff"});
  CHECK(collect("", "\xff\xff\xff").size() == std::size(keys));
  std::vector<std::string> all;
  map.for_each([&](std::string_view k, const std::string&) { all.emplace_back(k); });
  CHECK(std::is_sorted(all.begin(), all.end()));
  CHECK(all.size() == std::size(keys));
}

// Property: the 8-byte prefix compare orders like memcmp with the shorter key first, also when the
// prefixes are equal (keys that differ after byte 8, or only by trailing NUL bytes) and for bytes
// >= 0x80 (unsigned): in-order walks equal std::set<std::string>'s order, and every key is found.
TEST_CASE("keys sharing 8-byte prefixes, NUL padding and high bytes sort as bytes") {
  std::vector<std::string> keys = {"", std::string(1, '\0'), std::string(8, '\0'),
                                   std::string(9, '\0'), "a", std::string("a\0", 2),
                                   std::string("a\0\0", 3), "abcdefgh", std::string("abcdefgh\0", 9),
                                   "abcdefghi", "abcdefgh\xff", "abcdefgg\xff\xff", "abcdefgi",
                                   "\x7f", "\x80", "\xff\xff\xff\xff\xff\xff\xff\xff",
                                   "\xff\xff\xff\xff\xff\xff\xff\xff\x01", "zzzzzzzzzzzzzzzz1",
                                   "zzzzzzzzzzzzzzzz0"};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {  // random keys of 0..12 bytes over a 3-letter alphabet + NUL
    std::string k(rng() % 13, '\0');
    for (auto& c : k) c = "\0ab\xff"[rng() % 4];
    keys.push_back(k);
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  kvlab::skiplist::Kvlab<std::string> map;
  std::set<std::string> model;
  for (const auto& k : keys) CHECK(map.insert(k, k) == model.insert(k).second);
  std::vector<std::string> walked;
  map.for_each([&](std::string_view k, const std::string& v) {
    CHECK(k == v);
    walked.emplace_back(k);
  });
  CHECK(walked == std::vector<std::string>(model.begin(), model.end()));
  for (const auto& k : model) CHECK(map.find(k, [&](const std::string& v) { CHECK(v == k); }));
  CHECK_FALSE(map.find("abcdefgh\x01", [](const std::string&) {}));
  CHECK_FALSE(map.find(std::string(10, '\0'), [](const std::string&) {}));
  // Erase every other key of the model; the rest stays in order.
  bool odd = false;
  for (const auto& k : model) {
    if ((odd = !odd)) CHECK(map.erase(k));
  }
  walked.clear();
  map.for_each([&](std::string_view k, const std::string&) { walked.emplace_back(k); });
  CHECK(std::is_sorted(walked.begin(), walked.end()));
  CHECK(walked.size() == model.size() / 2);
}

// Property: with three writers inserting, erasing and update-toggling 64 keys (constant tombstone
// and reinsert traffic), a concurrent scanner's ranges are always sorted, duplicate-free, inside
// the bounds and value-correct; afterwards the keys present sum to what the writers' successful
// operations add up to, and size_approx, for_each and find agree.
TEST_CASE("inserts, erases and ranges racing on 64 keys keep every invariant") {
  Map map;
  const std::uint64_t keys = 64;
  const int writers = 3;
  const int per = 200000 / kScale;
  std::vector<std::int64_t> sums(writers, 0);
  std::atomic<int> done{0};
  std::atomic<std::uint64_t> bad{0};
  std::uint64_t scans = 0;
  std::barrier<> all_out(writers + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < writers; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(t + 1);
      std::int64_t sum = 0;
      for (int i = 0; i < per; ++i) {
        const std::uint64_t k = rng() % keys;
        switch (rng() % 4) {
          case 0:
            if (map.insert(key_of(k), k)) sum += static_cast<std::int64_t>(k);
            break;
          case 1:
            if (map.erase(key_of(k))) sum -= static_cast<std::int64_t>(k);
            break;
          case 2:
            if (map.insert_or_assign(key_of(k), k)) sum += static_cast<std::int64_t>(k);
            break;
          case 3: {
            bool erased = false;
            const auto out = map.update(key_of(k), [&](const std::uint64_t* cur) {
              erased = cur != nullptr;
              return cur ? U::erase() : U::assign(k);
            });
            if (out == kvlab::UpdateOutcome::erased) sum -= static_cast<std::int64_t>(k);
            if (out == kvlab::UpdateOutcome::inserted) sum += static_cast<std::int64_t>(k);
            if (erased != (out == kvlab::UpdateOutcome::erased)) bad.fetch_add(1);
            break;
          }
        }
      }
      sums[t] = sum;
      done.fetch_add(1, std::memory_order_release);
      drain_before_exit(all_out);
    });
  }
  threads.emplace_back([&] {
    std::mt19937_64 rng(99);
    while (done.load(std::memory_order_acquire) < writers) {
      const std::uint64_t lo = rng() % keys, hi = lo + rng() % (keys - lo + 1);
      std::uint64_t prev = 0;
      bool first = true;
      map.range(key_of(lo), key_of(hi), [&](std::string_view k, const std::uint64_t& v) {
        const std::uint64_t i = index_of(k);
        if (i != v || i < lo || i >= hi || (!first && i <= prev)) bad.fetch_add(1);
        prev = i;
        first = false;
        return true;
      });
      ++scans;
    }
    drain_before_exit(all_out);
  });
  for (auto& th : threads) th.join();
  CHECK(bad.load() == 0);
  CHECK(scans > 0);
  std::int64_t expected = 0;
  for (auto s : sums) expected += s;
  std::int64_t present = 0;
  std::size_t count = 0;
  map.for_each([&](std::string_view k, const std::uint64_t& v) {
    CHECK(index_of(k) == v);
    present += static_cast<std::int64_t>(v);
    ++count;
  });
  CHECK(present == expected);
  CHECK(map.size_approx() == count);
  std::size_t found = 0;
  for (std::uint64_t k = 0; k < keys; ++k) found += map.find(key_of(k), [](auto&) {});
  CHECK(found == count);
}

// Property: on four keys erased and reinserted (insert, or insert_or_assign, which reports whether
// it inserted) by four threads, per key the successful inserts minus the successful erases is 0
// or 1 at the end and says whether the key is present: a tombstoned node never hides a reinsert,
// and no reinsert duplicates a key. With heap boxes (std::string) insert_or_assign also moves a box between its unlinked node and an
// assign when a link loses to a racing insert or an assign meets a tombstone; a node linked
// without its box would show up here as a present-count mismatch, a lost box as a leak (ASan).
TEST_CASE_TEMPLATE("a key erased and reinserted by racing threads is present iff inserts win by one",
                   V, std::uint64_t, std::string) {
  kvlab::skiplist::Kvlab<V> map;
  auto value_of = [](int k) {
    if constexpr (std::is_same_v<V, std::string>) {
      return std::string(40, static_cast<char>('a' + k));  // past SSO: a heap allocation
    } else {
      return static_cast<V>(k);
    }
  };
  const int threads = 4;
  const int keys = 4;
  const int per = 100000 / kScale;
  std::vector<std::vector<std::int64_t>> net(threads, std::vector<std::int64_t>(keys, 0));
  run_threads(threads, [&](int t) {
    std::mt19937 rng(t * 7 + 3);
    for (int i = 0; i < per; ++i) {
      const int k = static_cast<int>(rng() % keys);
      switch (rng() % 4) {
        case 0:
          if (map.insert(key_of(k), value_of(k))) ++net[t][k];
          break;
        case 1:
          if (map.insert_or_assign(key_of(k), value_of(k))) ++net[t][k];
          break;
        default:
          if (map.erase(key_of(k))) --net[t][k];
      }
    }
  });
  std::size_t present_keys = 0;
  for (int k = 0; k < keys; ++k) {
    std::int64_t n = 0;
    for (int t = 0; t < threads; ++t) n += net[t][k];
    CAPTURE(k);
    REQUIRE((n == 0 || n == 1));
    V v{};
    const bool present = map.find(key_of(k), [&](const V& x) { v = x; });
    CHECK(present == (n == 1));
    if (present) CHECK(v == value_of(k));
    present_keys += present;
  }
  std::size_t seen = 0;
  map.for_each([&](std::string_view, const V&) { ++seen; });
  CHECK(seen == present_keys);
  CHECK(map.size_approx() == present_keys);
}

// Property: increments (update from absent creates 1) racing with update-erases that report the
// value they removed, on eight keys: every increment is either in a removed value or still in the
// map, never lost and never counted twice.
TEST_CASE("update increments racing with erase on eight keys lose and resurrect nothing") {
  Map map;
  const int threads = 4;
  const int keys = 8;
  const int per = 60000 / kScale;
  std::vector<std::uint64_t> added(threads, 0), removed(threads, 0);
  run_threads(threads, [&](int t) {
    std::mt19937 rng(t + 40);
    for (int i = 0; i < per; ++i) {
      const std::string key = key_of(rng() % keys);
      if (rng() % 5 == 0) {
        std::uint64_t got = 0;
        map.update(key, [&](const std::uint64_t* cur) {
          got = cur ? *cur : 0;
          return cur ? U::erase() : U::keep();
        });
        removed[t] += got;
      } else {
        map.update(key, [](const std::uint64_t* cur) { return U::assign(cur ? *cur + 1 : 1); });
        ++added[t];
      }
    }
  });
  std::uint64_t left = 0;
  map.for_each([&](std::string_view, const std::uint64_t& v) { left += v; });
  std::uint64_t a = 0, r = 0;
  for (int t = 0; t < threads; ++t) {
    a += added[t];
    r += removed[t];
  }
  CHECK(a == r + left);
}

// A counter that is not trivially destructible, so that the skip list keeps every one of its
// boxes on the heap (a uint64_t gets its first box inside the node).
struct HeapCounter {
  HeapCounter(std::uint64_t x) : v(x) {}  // NOLINT(google-explicit-constructor): like a uint64_t
  ~HeapCounter() {}                        // NOLINT(modernize-use-equals-default): non-trivial
  std::uint64_t v;
};
std::uint64_t num(std::uint64_t v) { return v; }
std::uint64_t num(const HeapCounter& c) { return c.v; }

// Property: every erase retires exactly one node and every erase or assign the box it replaced,
// unless that box was the node's inline one (which goes with the node), and nothing else is
// retired: a node retired twice (both parties of the handshake) or never (neither) shows up as a
// difference. Every node ends erased (the test clears the map), so a node's inline box is replaced
// exactly once: with inline boxes the count is erases + assigns, without 2 erases + assigns.
// (The epoch stats count an object that a thread exits with, unfreed, twice; run_threads' drain
// keeps that from happening here.)
TEST_CASE_TEMPLATE("erases and assigns retire exactly what they replaced", V, std::uint64_t,
                   HeapCounter) {
  using UV = kvlab::Update<V>;
  constexpr bool kInline = std::is_same_v<V, std::uint64_t>;
  auto retired_so_far = [] {
    const auto s = kvlab::reclaim::stats();
    return s.retired_unfreed + s.freed;
  };
  const int threads = 4;
  const int per = 50000 / kScale;
  std::vector<std::uint64_t> erased(threads, 0), assigned(threads, 0), inserted(threads, 0);
  kvlab::skiplist::Kvlab<V> map;
  const std::uint64_t before = retired_so_far();
  run_threads(threads, [&](int t) {
    std::mt19937 rng(t + 77);
    for (int i = 0; i < per; ++i) {
      const std::uint64_t k = rng() % 32;
      switch (rng() % 4) {
        case 0:
          inserted[t] += map.insert(key_of(k), V(k));
          break;
        case 1:
          erased[t] += map.erase(key_of(k));
          break;
        case 2:
          if (map.insert_or_assign(key_of(k), V(k))) {
            ++inserted[t];
          } else {
            ++assigned[t];
          }
          break;
        case 3:
          switch (map.update(key_of(k), [&](const V* c) {
            return c && num(*c) % 2 == 0 ? UV::erase() : UV::assign(V(c ? num(*c) + 1 : k));
          })) {
            case kvlab::UpdateOutcome::erased:
              ++erased[t];
              break;
            case kvlab::UpdateOutcome::assigned:
              ++assigned[t];
              break;
            case kvlab::UpdateOutcome::inserted:
              ++inserted[t];
              break;
            default:
              break;
          }
          break;
      }
    }
  });  // run_threads drains every worker's list before it exits
  std::uint64_t left = 0;
  map.for_each([&](std::string_view, const V&) { ++left; });
  map.clear();  // erases the `left` keys still present, on this thread
  std::uint64_t erases = left, assigns = 0, inserts = 0;
  for (int t = 0; t < threads; ++t) {
    erases += erased[t];
    assigns += assigned[t];
    inserts += inserted[t];
  }
  CHECK(inserts == erases);  // every node made was erased
  CHECK(erases > 0);
  CHECK(assigns > 0);
  const std::uint64_t retired = retired_so_far() - before;
  CHECK(retired == (kInline ? 1 : 2) * erases + assigns);
  // And the reclaimer frees all of it once everyone is idle.
  for (int i = 0; i < 10; ++i) kvlab::reclaim::flush();
  CHECK(kvlab::reclaim::stats().retired_unfreed == 0);
}

// The inline box of a small value: a find reads it, an assign moves the value to the heap and
// back again is still right, erase and reinsert reuse nothing stale.
TEST_CASE("small values start inline and survive assign, update, erase and reinsert") {
  Map map;
  for (std::uint64_t i = 0; i < 1000; ++i) CHECK(map.insert(key_of(i), i * 3));
  for (std::uint64_t i = 0; i < 1000; i += 2) CHECK_FALSE(map.insert_or_assign(key_of(i), i + 7));
  for (std::uint64_t i = 0; i < 1000; i += 3) {
    CHECK(map.update(key_of(i), [](const std::uint64_t* c) { return U::assign(*c + 1); }) ==
          kvlab::UpdateOutcome::assigned);
  }
  for (std::uint64_t i = 0; i < 1000; i += 5) CHECK(map.erase(key_of(i)));
  for (std::uint64_t i = 0; i < 1000; i += 10) CHECK(map.insert(key_of(i), 1000000 + i));
  for (std::uint64_t i = 0; i < 1000; ++i) {
    std::uint64_t want = i % 2 == 0 ? i + 7 : i * 3;
    if (i % 3 == 0) ++want;
    const bool present = i % 5 != 0 || i % 10 == 0;
    if (i % 10 == 0) want = 1000000 + i;
    std::uint64_t got = 0;
    CHECK(map.find(key_of(i), [&](const std::uint64_t& v) { got = v; }) == present);
    if (present) CHECK(got == want);
  }
}
