// Unit tests of the load generator's flag parsing and request encoding.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <unordered_set>

#include "tools/load/load.hpp"
#include "tools/load/report.hpp"
#include "tools/load/workload.hpp"

using namespace kvlab::load;

TEST_SUITE("unit") {
  TEST_CASE("rate lists accept k and M suffixes") {
    std::vector<double> rates;
    REQUIRE(parse_rate_list("20k,50k, 1.5M,300", &rates));
    REQUIRE(rates.size() == 4);
    CHECK(rates[0] == 20000);
    CHECK(rates[2] == 1500000);
    CHECK(rates[3] == 300);
    CHECK_FALSE(parse_rate_list("20k,,50k", &rates));
    CHECK_FALSE(parse_rate_list("-5", &rates));
    CHECK_FALSE(parse_rate_list("fast", &rates));
  }

  TEST_CASE("durations accept s, ms, m and bare seconds") {
    double s = 0;
    CHECK((parse_duration("3s", &s) && s == 3));
    CHECK((parse_duration("500ms", &s) && s == 0.5));
    CHECK((parse_duration("2m", &s) && s == 120));
    CHECK((parse_duration("1.5", &s) && s == 1.5));
    CHECK_FALSE(parse_duration("soon", &s));
  }

  TEST_CASE("a SET:GET ratio becomes two weighted templates") {
    std::vector<CommandTemplate> t;
    REQUIRE(parse_ratio("1:10", &t));
    REQUIRE(t.size() == 2);
    CHECK(t[0].args == std::vector<std::string>{"SET", "__key__", "__data__"});
    CHECK(t[0].weight == 1);
    CHECK(t[1].weight == 10);
    CHECK_FALSE(parse_ratio("1", &t));
    CHECK_FALSE(parse_ratio("0:0", &t));
  }

  TEST_CASE("templates are encoded as RESP multibulk with the key and data substituted") {
    LoadConfig c;
    c.keys = 10;
    c.key_prefix = "k:";
    c.data_size = 4;
    c.key_pattern = KeyPattern::kSequential;
    CommandTemplate t;
    REQUIRE(parse_template("SET __key__ __data__", &t));
    c.commands = {t};
    Workload w(c);
    auto s = w.make_stream(0, 1);
    std::string out;
    w.append_request(s, out);
    CHECK(out == "*3\r\n$3\r\nSET\r\n$3\r\nk:0\r\n$4\r\nabcd\r\n");
    out.clear();
    w.append_request(s, out);
    CHECK(out == "*3\r\n$3\r\nSET\r\n$3\r\nk:1\r\n$4\r\nabcd\r\n");
  }

  TEST_CASE("a template with ';' is several commands sent as one request, __keyN__ drawn apart") {
    LoadConfig c;
    c.keys = 10;
    c.key_prefix = "k:";
    c.key_pattern = KeyPattern::kSequential;
    CommandTemplate t;
    REQUIRE(parse_template("MULTI ; INCR __key1__ ; INCR __key2__ ; INCR __key1__ ; EXEC", &t));
    c.commands = {t};
    Workload w(c);
    auto s = w.make_stream(0, 1);
    std::string out;
    CHECK(w.append_request(s, out) == 5);
    CHECK(out ==
          "*1\r\n$5\r\nMULTI\r\n"
          "*2\r\n$4\r\nINCR\r\n$3\r\nk:0\r\n"
          "*2\r\n$4\r\nINCR\r\n$3\r\nk:1\r\n"
          "*2\r\n$4\r\nINCR\r\n$3\r\nk:0\r\n"
          "*1\r\n$4\r\nEXEC\r\n");
    out.clear();
    REQUIRE(parse_template("GET __key__", &t));
    c.commands = {t};
    Workload one(c);
    auto s1 = one.make_stream(0, 1);
    CHECK(one.append_request(s1, out) == 1);
  }

  TEST_CASE("a request of three commands completes with its third reply, in order") {
    std::deque<Pending> q;
    q.push_back({10, 11, 3});
    q.push_back({20, 21, 1});
    Pending done{};
    CHECK_FALSE(complete_front(q, &done));
    CHECK_FALSE(complete_front(q, &done));
    REQUIRE(complete_front(q, &done));
    CHECK(done.intended_ns == 10);
    REQUIRE(complete_front(q, &done));
    CHECK(done.intended_ns == 20);
    CHECK(q.empty());
  }

  TEST_CASE("a 1:10 mix interleaves one SET in every eleven requests") {
    LoadConfig c;
    c.keys = 100;
    REQUIRE(parse_ratio("1:10", &c.commands));
    Workload w(c);
    auto s = w.make_stream(0, 1);
    int sets = 0;
    for (int i = 0; i < 1100; ++i) {
      std::string out;
      w.append_request(s, out);
      sets += out.find("SET") != std::string::npos;
    }
    CHECK(sets == 100);
  }

  TEST_CASE("every key pattern stays inside the key space") {
    for (auto p : {KeyPattern::kUniform, KeyPattern::kZipf, KeyPattern::kSequential,
                   KeyPattern::kGaussian}) {
      LoadConfig c;
      c.keys = 1000;
      c.key_pattern = p;
      c.zipf_theta = 0.99;
      Workload w(c);
      auto s = w.make_stream(3, 8);
      std::vector<int> hits(c.keys);
      for (int i = 0; i < 20000; ++i) {
        const auto k = w.next_key(s);
        REQUIRE(k < c.keys);
        ++hits[k];
      }
      if (p == KeyPattern::kZipf) CHECK(hits[0] > hits[500] * 10);
    }
  }

  TEST_CASE("connections draw independent keys, not one sequence shifted") {
    // 2 streams × 10,000 uniform draws over 1,000,000 keys share about 100 keys by chance. Two
    // streams seeded a multiple of splitmix's gamma apart replay each other and share ~10,000.
    LoadConfig c;
    c.keys = 1000000;
    Workload w(c);
    for (std::uint64_t other : {1u, 2u, 24u}) {
      auto a = w.make_stream(0, 25), b = w.make_stream(other, 25);
      std::unordered_set<std::uint64_t> seen;
      for (int i = 0; i < 10000; ++i) seen.insert(w.next_key(a));
      int shared = 0;
      for (int i = 0; i < 10000; ++i) shared += seen.count(w.next_key(b)) ? 1 : 0;
      CAPTURE(other);
      CHECK(shared < 300);
    }
    // And the key streams are not the arrival-gap streams of the same connections.
    Rng gaps = Rng::stream(c.seed, 1), keys = Rng::stream(c.seed, 0);
    int equal = 0;
    for (int i = 0; i < 64; ++i) equal += gaps.next() == keys.next() ? 1 : 0;
    CHECK(equal == 0);
  }

  TEST_CASE("an unsustained step prints NS with its achieved rate and no latency") {
    Manifest m;
    m.mode = "open-loop";
    StepResult ok, ns;
    ok.target_rate = 1000;
    ok.achieved_rate = 1000;
    ok.latency.record(50000);
    ns.target_rate = 1e6;
    ns.achieved_rate = 123456;
    ns.sustained = false;
    const std::string table = format_table(m, {ok, ns});
    CHECK(table.find("NS (123,456)") != std::string::npos);
    const std::string json = format_json(m, {ok, ns});
    CHECK(json.find("\"sustained\": false") != std::string::npos);
    CHECK(json.find("\"latency_us\"") != std::string::npos);
    CHECK(is_sustained(970, 1000, 0.97));
    CHECK_FALSE(is_sustained(969, 1000, 0.97));
  }
}
