// Unit tests of the set and sorted-set payloads (server/data/zset.hpp, set_types.hpp), linked
// with nothing but the headers: random operations checked against a std::set<pair<double,string>>
// model (membership, order, ranks, element by rank, score and lex ranges, counts), the skiplist's
// span invariants, the scan-order guarantee of the dense slot vectors, and score text conversion.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "server/data/zset.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "server/data/set_types.hpp"
#include "server/data/hash_fields.hpp"

using kvlab::server::HashFields;
using kvlab::server::LexBound;
using kvlab::server::LexRange;
using kvlab::server::MemberSet;
using kvlab::server::ScoreRange;
using kvlab::server::ZSet;
using kvlab::server::ZSkipList;
using Model = std::set<std::pair<double, std::string>>;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Model answers for a score range.
std::vector<std::pair<double, std::string>> model_range(const Model& m, const ScoreRange& r) {
  std::vector<std::pair<double, std::string>> out;
  for (const auto& e : m)
    if (r.gte_min(e.first) && r.lte_max(e.first)) out.push_back(e);
  return out;
}

std::size_t model_rank(const Model& m, const std::pair<double, std::string>& e) {
  return static_cast<std::size_t>(std::distance(m.begin(), m.find(e))) + 1;
}

double random_score(std::mt19937_64& g) {
  switch (g() % 8) {
    case 0:
      return -kInf;
    case 1:
      return kInf;
    case 2:
      return 0.0;
    default:
      return static_cast<double>(static_cast<int>(g() % 40) - 20) / 4;  // many ties
  }
}

void check_against(const ZSet& z, const Model& m, std::mt19937_64& g) {
  REQUIRE(z.size() == m.size());
  REQUIRE(z.list().check());
  // Order, backward links and ranks.
  std::size_t r = 0;
  const ZSkipList::Node* prev = nullptr;
  auto it = m.begin();
  for (const ZSkipList::Node* n = z.list().first(); n != nullptr; n = n->next(), ++it) {
    ++r;
    REQUIRE(it != m.end());
    CHECK(n->score == it->first);
    CHECK(n->member == it->second);
    CHECK(n->prev() == prev);
    CHECK(z.list().rank(n) == r);
    CHECK(z.list().by_rank(r) == n);
    prev = n;
  }
  CHECK(z.list().last() == prev);
  CHECK(z.list().by_rank(0) == nullptr);
  CHECK(z.list().by_rank(m.size() + 1) == nullptr);
  // Slots cover every node exactly once.
  std::unordered_set<const ZSkipList::Node*> seen;
  for (std::size_t i = 0; i < z.slots(); ++i) {
    CHECK(z.slot(i)->slot == i);
    seen.insert(z.slot(i));
  }
  CHECK(seen.size() == m.size());
  // Random score ranges: first/last and the count by ranks.
  for (int k = 0; k < 8; ++k) {
    ScoreRange sr{random_score(g), random_score(g), g() % 2 == 0, g() % 2 == 0};
    const auto want = model_range(m, sr);
    const ZSkipList::Node* f = z.list().first_in(sr);
    const ZSkipList::Node* l = z.list().last_in(sr);
    if (want.empty()) {
      CHECK(f == nullptr);
      CHECK(l == nullptr);
    } else {
      REQUIRE(f != nullptr);
      REQUIRE(l != nullptr);
      CHECK(f->score == want.front().first);
      CHECK(f->member == want.front().second);
      CHECK(l->member == want.back().second);
      CHECK(z.list().rank(l) - z.list().rank(f) + 1 == want.size());
    }
  }
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("zset random operations agree with a std::set model, ranks and ranges included") {
    std::mt19937_64 g(12345);
    for (int round = 0; round < 4; ++round) {
      ZSet z;
      Model m;
      std::map<std::string, double> scores;
      const int universe = round == 0 ? 8 : 300;
      for (int op = 0; op < 6000; ++op) {
        const std::string member = "m" + std::to_string(g() % universe);
        const unsigned kind = static_cast<unsigned>(g() % 10);
        if (kind < 5) {  // add or update
          const double s = random_score(g);
          const auto old = scores.find(member);
          const auto res = z.set(member, s);
          if (old == scores.end()) {
            CHECK(res == ZSet::AddResult::kAdded);
            m.emplace(s, member);
            scores[member] = s;
          } else if (old->second == s) {
            CHECK(res == ZSet::AddResult::kUnchanged);
          } else {
            CHECK(res == ZSet::AddResult::kUpdated);
            m.erase({old->second, member});
            m.emplace(s, member);
            old->second = s;
          }
        } else if (kind < 8) {  // erase
          const bool had = scores.erase(member) > 0;
          if (had) {
            for (auto e = m.begin(); e != m.end(); ++e)
              if (e->second == member) {
                m.erase(e);
                break;
              }
          }
          CHECK(z.erase(member) == had);
        } else if (kind == 8 && !m.empty()) {  // pop min or max
          const bool max = g() % 2 == 0;
          const auto want = max ? *m.rbegin() : *m.begin();
          const auto got = z.pop(max);
          CHECK(got.first == want.second);
          CHECK(got.second == want.first);
          m.erase(want);
          scores.erase(want.second);
        } else {  // lookups
          const auto sc = z.score(member);
          const auto it = scores.find(member);
          CHECK(sc.has_value() == (it != scores.end()));
          if (sc && it != scores.end()) {
            CHECK(*sc == it->second);
            CHECK(z.list().rank(*sc, member) == model_rank(m, {*sc, member}));
          } else {
            CHECK(z.list().rank(0.0, member) == 0);
          }
        }
        if (op % 500 == 0) check_against(z, m, g);
      }
      check_against(z, m, g);
      CHECK(z.empty() == m.empty());
    }
  }

  TEST_CASE("zset lex ranges follow memcmp order with equal scores") {
    ZSet z;
    std::set<std::string> m;
    std::mt19937_64 g(7);
    for (int i = 0; i < 400; ++i) {
      std::string s;
      for (unsigned k = 0, n = static_cast<unsigned>(g() % 4); k < n; ++k)
        s += static_cast<char>("ab\x80z"[g() % 4]);
      z.set(s, 0.0);
      m.insert(s);  // std::string orders by unsigned bytes, as memcmp
    }
    REQUIRE(z.list().check());
    auto bound = [&](LexBound* b) {
      switch (g() % 6) {
        case 0:
          b->kind = LexBound::kNegInf;
          b->exclusive = true;
          return;
        case 1:
          b->kind = LexBound::kPosInf;
          b->exclusive = true;
          return;
        default: {
          b->kind = LexBound::kValue;
          b->exclusive = g() % 2 == 0;
          b->value.clear();
          for (unsigned k = 0, n = static_cast<unsigned>(g() % 3); k < n; ++k)
            b->value += static_cast<char>("ab\x80z"[g() % 4]);
        }
      }
    };
    for (int q = 0; q < 2000; ++q) {
      LexRange r;
      bound(&r.min);
      bound(&r.max);
      std::vector<std::string> want;
      for (const auto& s : m)
        if (r.gte_min(s) && r.lte_max(s)) want.push_back(s);
      const auto* f = z.list().first_in(r);
      const auto* l = z.list().last_in(r);
      if (want.empty()) {
        CHECK(f == nullptr);
        CHECK(l == nullptr);
        continue;
      }
      REQUIRE(f != nullptr);
      REQUIRE(l != nullptr);
      CHECK(f->member == want.front());
      CHECK(l->member == want.back());
      CHECK(z.list().rank(l) - z.list().rank(f) + 1 == want.size());
    }
    LexRange all;
    all.min.kind = LexBound::kNegInf;
    all.max.kind = LexBound::kPosInf;
    CHECK_FALSE(all.empty());
    LexRange none;
    none.min.kind = LexBound::kPosInf;
    none.max.kind = LexBound::kNegInf;
    CHECK(none.empty());
    CHECK(z.list().first_in(none) == nullptr);
  }

  TEST_CASE("update_score keeps the node and moves it only when its order changes") {
    ZSet z;
    for (int i = 0; i < 100; ++i) z.set("m" + std::to_string(i), i);
    const auto* n = z.find("m50");
    z.set("m50", 50.5);  // stays in place
    CHECK(z.find("m50") == n);
    CHECK(z.list().rank(n) == 51);
    z.set("m50", -1);  // moves to the front
    CHECK(z.find("m50") == n);
    CHECK(z.list().rank(n) == 1);
    CHECK(z.list().first() == n);
    z.set("m50", 1000);
    CHECK(z.list().last() == n);
    CHECK(z.list().check());
  }

  // Property: a descending walk of the slot positions, with erases and inserts between steps,
  // returns every member present for the whole walk (Redis's SCAN guarantee).
  TEST_CASE("scanning slots from high to low returns every member present throughout") {
    std::mt19937_64 g(99);
    for (int round = 0; round < 50; ++round) {
      MemberSet s;
      ZSet z;
      for (int i = 0; i < 200; ++i) {
        s.insert("s" + std::to_string(i));
        z.set("s" + std::to_string(i), i % 7);
      }
      std::set<std::string> stable_s, stable_z, seen_s, seen_z;
      for (int i = 0; i < 200; ++i) {
        stable_s.insert("s" + std::to_string(i));
        stable_z.insert("s" + std::to_string(i));
      }
      std::size_t ps = s.size(), pz = z.slots();
      int next = 1000;
      while (ps > 0 || pz > 0) {
        for (int k = 0; k < 3 && ps > 0; ++k) seen_s.insert(s.at(--ps).str());
        for (int k = 0; k < 3 && pz > 0; ++k) seen_z.insert(z.slot(--pz)->member);
        // churn: erase a random member (it leaves the "present throughout" set), add a new one
        if (s.size() > 0) {
          const std::string victim = s.at(g() % s.size()).str();
          stable_s.erase(victim);
          CHECK(s.erase(victim));
        }
        if (z.size() > 0) {
          const std::string victim = z.slot(g() % z.slots())->member;
          stable_z.erase(victim);
          CHECK(z.erase(victim));
        }
        s.insert("n" + std::to_string(next));
        z.set("n" + std::to_string(next), 3);
        ++next;
        ps = std::min(ps, s.size());
        pz = std::min(pz, z.slots());
      }
      for (const auto& m : stable_s) CHECK(seen_s.count(m) == 1);
      for (const auto& m : stable_z) CHECK(seen_z.count(m) == 1);
    }
  }

  // Every member reachable after every kind of change (the open-addressing index: growth,
  // backward-shift deletion, the last member moved into a hole), over small and larger domains
  // and through emptying, which frees the index.
  TEST_CASE("MemberSet keeps positions dense and its index exact") {
    for (const int domain : {5, 40, 500, 5000}) {
      MemberSet s;
      std::set<std::string> model;
      std::mt19937_64 g(3 + domain);
      for (int op = 0; op < 20000; ++op) {
        if (op % 4000 == 3999) {  // empty it through erase_at, then go on
          while (s.size() > 0) {
            model.erase(s.at(s.size() - 1).str());
            s.erase_at(s.size() - 1);
          }
          CHECK(s.index_bytes() == 0);
        }
        const std::string m = "k" + std::to_string(g() % static_cast<unsigned>(domain));
        if (g() % 3 != 0) {
          CHECK(s.insert(m) == model.insert(m).second);
        } else if (g() % 2 == 0 && s.size() > 0) {
          const std::size_t i = g() % s.size();
          model.erase(s.at(i).str());
          s.erase_at(i);
        } else {
          CHECK(s.erase(m) == (model.erase(m) > 0));
        }
        CHECK(s.contains(m) == (model.count(m) == 1));
        if (op % 97 == 0) {
          REQUIRE(s.size() == model.size());
          for (const auto& x : model) REQUIRE(s.contains(x));
          CHECK(!s.contains("absent"));
        }
      }
      REQUIRE(s.size() == model.size());
      std::set<std::string> listed;
      for (std::size_t i = 0; i < s.size(); ++i) listed.insert(s.at(i).str());
      CHECK(listed == model);
    }
  }

  // The compact encoding (sorted int64s) against a std::set<std::string> model: integers in
  // canonical form keep a set compact and its positions ascending; a member that is not one
  // ("01", "+1", "-0", " 1", "a", 2^63) or one past the limit converts it to the general
  // encoding, which keeps every member and never converts back.
  TEST_CASE("MemberSet: integers stay compact and ascending until a member breaks the rule") {
    const std::vector<std::string> odd = {"01", "+1", "-0", " 1", "a", "9223372036854775808", ""};
    for (int round = 0; round < 40; ++round) {
      MemberSet s;
      std::set<std::string> model;
      std::mt19937_64 g(7 + round);
      bool broken = false;  // a non-integer member was inserted
      const int convert_at = round % 4 == 0 ? -1 : static_cast<int>(g() % 3000);
      for (int op = 0; op < 3000; ++op) {
        std::string m;
        if (op == convert_at) {
          m = odd[g() % odd.size()];
          broken = true;
        } else {
          const std::int64_t v = static_cast<std::int64_t>(g() % 300) - 150;
          m = std::to_string(g() % 50 == 0 ? v * 61489146912345678LL : v);
        }
        const unsigned kind = static_cast<unsigned>(g() % 4);
        if (kind < 2 || op == convert_at) {
          CHECK(s.insert(m) == model.insert(m).second);
        } else if (kind == 2 && s.size() > 0) {
          const std::size_t i = g() % s.size();
          std::vector<std::string> below;
          for (std::size_t j = 0; j < i; ++j) below.push_back(s.at(j).str());
          model.erase(s.at(i).str());
          s.erase_at(i);
          for (std::size_t j = 0; j < i; ++j) REQUIRE(s.at(j).view() == below[j]);
        } else {
          CHECK(s.erase(m) == (model.erase(m) > 0));
        }
        REQUIRE(s.compact() == !broken);
        REQUIRE(s.intset() == !broken);  // one-way: erasing the odd member does not undo it
        CHECK(s.contains(m) == (model.count(m) == 1));
        REQUIRE(s.size() == model.size());
        if (op % 61 == 0) {
          std::set<std::string> listed;
          for (std::size_t i = 0; i < s.size(); ++i) listed.insert(s.at(i).str());
          REQUIRE(listed == model);
          for (const auto& x : odd) CHECK(s.contains(x) == (model.count(x) == 1));
          if (s.compact()) {
            for (std::size_t i = 1; i < s.size(); ++i)
              REQUIRE(std::stoll(s.at(i - 1).str()) < std::stoll(s.at(i).str()));
            CHECK(s.index_bytes() >= s.size() * sizeof(std::int64_t));
          }
        }
      }
    }
  }

  // Redis's encoding (intset()) turns hashtable once the set grows past set-max-intset-entries,
  // and only then; past kCompactMax the storage leaves the compact encoding first.
  TEST_CASE("MemberSet: the compact encoding's bound follows set-max-intset-entries, capped") {
    using kvlab::server::set_encoding_limit;
    for (const std::uint64_t limit : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{8},
                                      std::uint64_t{512}, std::uint64_t{1} << 40}) {
      set_encoding_limit("set-max-intset-entries", limit);
      const std::size_t bound = std::min<std::uint64_t>(limit, MemberSet::kCompactMax);
      MemberSet s;
      for (std::size_t i = 0; i < bound + 5; ++i) {
        // descending, so that every insert lands at the front of the sorted array
        CHECK(s.insert(std::to_string(1000000 - static_cast<int>(i))));
        CHECK(s.compact() == (i < bound));
        CHECK(s.intset() == (i < limit));
        CHECK(!s.insert(std::to_string(1000000 - static_cast<int>(i))));  // no duplicate
      }
      REQUIRE(s.size() == bound + 5);
      for (std::size_t i = 0; i < bound + 5; ++i)
        CHECK(s.contains(std::to_string(1000000 - static_cast<int>(i))));
      // The ascending order of the compact set became the general encoding's dense order.
      for (std::size_t i = 1; i < bound; ++i)
        CHECK(std::stoll(s.at(i - 1).str()) < std::stoll(s.at(i).str()));
    }
    set_encoding_limit("set-max-intset-entries", 512);
  }

  // copy_from (COPY) across encodings: the copy takes the source's members, order and encoding
  // whichever encoding it had before, and the source is left as it was.
  TEST_CASE("MemberSet: copy_from switches encodings both ways") {
    MemberSet ints, strs;
    for (int i = 0; i < 20; ++i) ints.insert(std::to_string(i * 7));
    for (int i = 0; i < 20; ++i) strs.insert("m" + std::to_string(i));
    REQUIRE(ints.compact());
    REQUIRE(!strs.compact());
    MemberSet a, b;
    b.insert("x");  // general before the copy
    a.copy_from(strs);
    b.copy_from(ints);
    CHECK(!a.compact());
    CHECK(!a.intset());
    CHECK(b.compact());
    CHECK(b.intset());
    REQUIRE(a.size() == 20);
    REQUIRE(b.size() == 20);
    for (std::size_t i = 0; i < 20; ++i) {
      CHECK(a.at(i).view() == strs.at(i).view());
      CHECK(b.at(i).view() == ints.at(i).view());
    }
    CHECK(!b.contains("x"));
    a.copy_from(ints);  // and back
    CHECK(a.compact());
    CHECK(a.contains("133"));
    CHECK(!a.contains("m3"));
    CHECK(strs.contains("m3"));
  }

  // A set's encoding rebuilt from its contents (the results of SINTER/SDIFF, built by erasing
  // from a copy): integers only and few enough are an intset again, compact when they fit.
  TEST_CASE("MemberSet: encode_from_contents restores the intset of an all-integer set") {
    MemberSet s;
    for (int i = 40; i > 0; --i) s.insert(std::to_string(i));
    s.insert("a");
    CHECK(!s.compact());
    CHECK(!s.intset());
    CHECK(s.erase("a"));
    CHECK(!s.intset());  // one-way, as Redis's conversion
    s.encode_from_contents();
    CHECK(s.compact());
    CHECK(s.intset());
    REQUIRE(s.size() == 40);
    for (std::size_t i = 0; i < s.size(); ++i) CHECK(s.at(i).str() == std::to_string(i + 1));
    s.insert("b");
    s.encode_from_contents();
    CHECK(!s.intset());
    CHECK(s.contains("b"));
    CHECK(s.contains("17"));
    CHECK(s.size() == 41);
  }

  // HashFields against a std::map model: set/set_if_absent/get/erase, iteration, uniform random
  // entries, and HSCAN's guarantee (a field present for the whole scan is returned) with fields
  // added and erased between pages.
  TEST_CASE("HashFields matches a map model and its scan returns every field present throughout") {
    for (const int domain : {6, 60, 3000}) {
      HashFields h;
      std::map<std::string, std::string> model;
      std::mt19937_64 g(11 + domain);
      for (int op = 0; op < 20000; ++op) {
        const std::string f = "f" + std::to_string(g() % static_cast<unsigned>(domain));
        const std::string v = "v" + std::to_string(op);
        switch (g() % 4) {
          case 0:
          case 1:
            CHECK(h.set(f, v) == (model.count(f) == 0));
            model[f] = v;
            break;
          case 2:
            CHECK(h.set_if_absent(f, v) == model.emplace(f, v).second);
            break;
          default:
            CHECK(h.erase(f) == (model.erase(f) == 1));
        }
        const std::string* got = h.get(f);
        CHECK((got == nullptr) == (model.count(f) == 0));
        if (got != nullptr) CHECK(*got == model[f]);
        if (op % 101 == 0) {
          REQUIRE(h.size() == model.size());
          std::map<std::string, std::string> listed(h.begin(), h.end());
          REQUIRE(listed == model);
          if (!h.empty()) CHECK(model.count(h.random_entry(g).first) == 1);
        }
      }
      // A scan in pages of 5 with churn between pages.
      std::set<std::string> stable, seen;
      for (const auto& [f, v] : model) stable.insert(f);
      std::uint64_t cursor = 0;
      int pages = 0, next = 0;
      do {
        cursor = h.scan(cursor, 5,
                        [&](std::string_view f, std::string_view) { seen.insert(std::string(f)); });
        if (h.size() > 0) {
          const std::string victim = h.random_entry(g).first;
          stable.erase(victim);
          h.erase(victim);
        }
        h.set("new" + std::to_string(next++), "x");
      } while (cursor != 0 && ++pages < 100000);
      for (const auto& f : stable) CHECK(seen.count(f) == 1);
    }
  }

  TEST_CASE("scores are formatted like Redis 7.0 and parsed like getDoubleFromObject") {
    using kvlab::server::format_score;
    CHECK(format_score(1.0) == "1");
    CHECK(format_score(1.5) == "1.5");
    CHECK(format_score(-2.25) == "-2.25");
    CHECK(format_score(0.1) == "0.10000000000000001");  // %.17g, as redis-server 7.0
    CHECK(format_score(0.5) == "0.5");
    CHECK(format_score(1.1) == "1.1000000000000001");
    CHECK(format_score(100.0) == "100");
    CHECK(format_score(0.0) == "0");
    CHECK(format_score(0.0001) == "0.0001");
    CHECK(format_score(0.00001) == "1.0000000000000001e-05");
    CHECK(format_score(1e16) == "10000000000000000");
    CHECK(format_score(1e17) == "1e+17");
    CHECK(format_score(123456789012345678.0) == "1.2345678901234568e+17");
    CHECK(format_score(kInf) == "inf");
    CHECK(format_score(-kInf) == "-inf");
    CHECK(format_score(3.0000000000000004) == "3.0000000000000004");
    CHECK(format_score(-0.0) == "-0");
    double d = 0;
    using kvlab::server::parse_score;
    CHECK(parse_score("1.5", &d));
    CHECK(d == 1.5);
    CHECK(parse_score("inf", &d));
    CHECK(d == kInf);
    CHECK(parse_score("-inf", &d));
    CHECK(parse_score("+inf", &d));
    CHECK_FALSE(parse_score("nan", &d));
    CHECK_FALSE(parse_score("1e400", &d));
    CHECK_FALSE(parse_score(" 1", &d));
    CHECK_FALSE(parse_score("1 ", &d));
    CHECK_FALSE(parse_score("", &d));
    CHECK_FALSE(parse_score("abc", &d));
    bool ex = false;
    using kvlab::server::parse_score_bound;
    CHECK(parse_score_bound("(1.5", &d, &ex));
    CHECK(ex);
    CHECK(d == 1.5);
    CHECK(parse_score_bound("-inf", &d, &ex));
    CHECK_FALSE(ex);
    CHECK_FALSE(parse_score_bound("(x", &d, &ex));
    CHECK_FALSE(parse_score_bound("nan", &d, &ex));
    LexBound b;
    using kvlab::server::parse_lex_bound;
    CHECK(parse_lex_bound("[a", &b));
    CHECK_FALSE(b.exclusive);
    CHECK(parse_lex_bound("(a", &b));
    CHECK(b.exclusive);
    CHECK(parse_lex_bound("-", &b));
    CHECK(b.kind == LexBound::kNegInf);
    CHECK_FALSE(parse_lex_bound("a", &b));
    CHECK_FALSE(parse_lex_bound("+x", &b));
    CHECK_FALSE(parse_lex_bound("", &b));
  }
}
