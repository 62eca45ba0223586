// A tiny kvlab bench run end to end: one backend, one thread, a short duration; its JSON has the
// report's schema (tools/bench/output.cpp) and every row is valid. Also: every registered backend
// is built into the bench.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cctype>
#include <string>
#include <string_view>

#include "structures/registry.hpp"
#include "tools/bench/backend_table.hpp"
#include "tools/bench/bench.hpp"

namespace {

// A strict JSON syntax check (RFC 8259 grammar, no semantic checks): enough to know that a
// consumer's parser will accept the output.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view s) : s_(s) {}
  bool ok() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  bool value() {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return object();
    if (c == '[') return array();
    if (c == '"') return string();
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) return number();
    for (const std::string_view lit : {"true", "false", "null"}) {
      if (s_.substr(i_, lit.size()) == lit) {
        i_ += lit.size();
        return true;
      }
    }
    return false;
  }
  bool object() {
    ++i_;
    ws();
    if (peek('}')) return ++i_, true;
    for (;;) {
      ws();
      if (!string()) return false;
      ws();
      if (!peek(':')) return false;
      ++i_;
      ws();
      if (!value()) return false;
      ws();
      if (peek('}')) return ++i_, true;
      if (!peek(',')) return false;
      ++i_;
    }
  }
  bool array() {
    ++i_;
    ws();
    if (peek(']')) return ++i_, true;
    for (;;) {
      ws();
      if (!value()) return false;
      ws();
      if (peek(']')) return ++i_, true;
      if (!peek(',')) return false;
      ++i_;
    }
  }
  bool string() {
    if (!peek('"')) return false;
    for (++i_; i_ < s_.size(); ++i_) {
      const char c = s_[i_];
      if (c == '"') return ++i_, true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c == '\\') ++i_;
    }
    return false;
  }
  bool number() {
    const std::size_t start = i_;
    if (peek('-')) ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return i_ > start;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  std::string_view s_;
  std::size_t i_ = 0;
};

kvlab::bench::BenchConfig tiny(std::string backends) {
  kvlab::bench::BenchConfig c;
  c.backends = std::move(backends);
  c.threads = {1};
  c.keys = 5000;
  c.duration_s = 0.05;
  c.reps = 2;
  c.items = 20000;
  c.quiet = true;
  c.argv = {"kvlab", "bench", "(test)"};
  return c;
}

}  // namespace

TEST_CASE("a one-backend one-thread run produces valid JSON with the schema fields") {
  kvlab::bench::BenchReport report;
  std::string error;
  REQUIRE(kvlab::bench::run_bench(tiny("hash/locked"), &report, &error));
  REQUIRE(report.results.size() == 1);
  CHECK(report.results[0].valid);
  CHECK(report.results[0].mops > 0);
  REQUIRE(report.floor.size() == 1);
  CHECK(report.floor[0].mops > 0);
  CHECK(report.floor[0].chase_mops > 0);

  const std::string json = kvlab::bench::format_json(report);
  CHECK(JsonChecker(json).ok());
  for (const char* field : {"\"manifest\"",
                            "\"kvlab_version\"",
                            "\"git_sha\"",
                            "\"date\"",
                            "\"host\"",
                            "\"cpu_model\"",
                            "\"topology_summary\"",
                            "\"placement\"",
                            "\"args\"",
                            "\"results\"",
                            "\"backend\": \"hash/locked\"",
                            "\"family\": \"hash\"",
                            "\"threads\": 1",
                            "\"workload\"",
                            "\"keys\": 5000",
                            "\"update_pct\"",
                            "\"dist\": \"uniform\"",
                            "\"key_size\": 8",
                            "\"value_size\": 8",
                            "\"duration_s\"",
                            "\"mops\"",
                            "\"mops_min\"",
                            "\"mops_max\"",
                            "\"reps\": 2",
                            "\"valid\": true",
                            "\"floor\""}) {
    CAPTURE(field);
    CHECK(json.find(field) != std::string::npos);
  }
  CHECK(json.find("\"valid\": false") == std::string::npos);

  const std::string table = kvlab::bench::format_table(report);
  CHECK(table.find("hash/locked") != std::string::npos);
  CHECK(table.find("random-read") != std::string::npos);
  const std::string csv = kvlab::bench::format_csv(report);
  CHECK(csv.find("backend,family,") != std::string::npos);
}

TEST_CASE(
    "a queue run with string values of 32 bytes for maps and one producer/consumer is valid") {
  auto c = tiny("queue/mutex,hash/global-lock");
  c.value_size = 32;
  c.floor = false;
  kvlab::bench::BenchReport report;
  std::string error;
  REQUIRE(kvlab::bench::run_bench(c, &report, &error));
  REQUIRE(report.results.size() == 2);
  for (const auto& m : report.results) {
    CAPTURE(m.backend);
    CAPTURE(m.invalid_reason);
    CHECK(m.valid);
  }
  CHECK(JsonChecker(kvlab::bench::format_json(report)).ok());
}

TEST_CASE(
    "--batch runs hash/kvlab with its prefetch hint and a plain backend without, both valid") {
  auto c = tiny("hash/kvlab,hash/locked");
  c.batch = 16;
  c.update_pct = 20;
  c.floor = false;
  kvlab::bench::BenchReport report;
  std::string error;
  REQUIRE(kvlab::bench::run_bench(c, &report, &error));
  REQUIRE(report.results.size() == 2);
  for (const auto& m : report.results) {
    CAPTURE(m.backend);
    CAPTURE(m.invalid_reason);
    CHECK(m.valid);
  }
  CHECK(kvlab::bench::format_json(report).find("\"batch\": 16") != std::string::npos);
  c.batch = 33;
  CHECK_FALSE(kvlab::bench::validate_config(c, &error));
  CHECK(error.find("--batch") != std::string::npos);
}

TEST_CASE("an unknown backend is a configuration error, not a result") {
  kvlab::bench::BenchReport report;
  std::string error;
  CHECK_FALSE(kvlab::bench::run_bench(tiny("hash/nope"), &report, &error));
  CHECK(error != "");
}

TEST_CASE("every registered backend is built into kvlab bench") {
  for (const auto& t : kvlab::registered_backends()) {
    CAPTURE(t.name);
    bool found = false;
    for (const auto* e : kvlab::bench::detail::bench_entries()) found |= e->name == t.name;
    CHECK(found);
  }
}
