// The registry: the table is complete, names are unique and well formed, every registered backend
// has a conformance binary, selections resolve, and the factories build working keyspaces.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "structures/registry.hpp"

namespace {
std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    auto c = s.find(',');
    out.emplace_back(s.substr(0, c));
    s = c == std::string_view::npos ? std::string_view{} : s.substr(c + 1);
  }
  return out;
}
}  // namespace

TEST_CASE("the registry lists the fifteen wrapped backends by their family/algorithm names") {
  const std::set<std::string> wrapped = {
      "hash/locked",      "hash/global-lock", "hash/tbb",          "hash/tbb-unordered",
      "hash/cds-michael", "hash/cds-splitlist", "hash/cds-feldman", "skiplist/tbb",
      "skiplist/cds",     "queue/mutex",      "queue/tbb",         "queue/cds-ms",
      "queue/cds-basket", "queue/cds-segmented", "queue/cds-vyukov"};
  std::set<std::string> names;
  for (const auto& t : kvlab::registered_backends()) {
    CHECK(names.insert(std::string(t.name)).second);  // unique
    CHECK(t.name.find('/') != std::string_view::npos);
    CHECK(t.name.substr(0, t.family.size()) == t.family);
  }
  for (const auto& w : wrapped) CHECK_MESSAGE(names.count(w) == 1, w);
}

TEST_CASE("every registered backend runs the conformance suite") {
  std::set<std::string> tested;
  for (auto& n : split(KVLAB_CONFORMANCE_NAMES)) tested.insert(n);
  for (const auto& t : kvlab::registered_backends()) {
    CHECK_MESSAGE(tested.count(std::string(t.name)) == 1, "no conformance run for " << t.name);
  }
}

TEST_CASE("capabilities are declared where the wrapped library lacks them") {
  CHECK_FALSE(kvlab::find_backend("hash/tbb-unordered")->concurrent_erase);
  CHECK_FALSE(kvlab::find_backend("skiplist/tbb")->concurrent_erase);
  CHECK_FALSE(kvlab::find_backend("queue/cds-segmented")->fifo);
  CHECK(kvlab::find_backend("queue/cds-vyukov")->bounded);
  CHECK(kvlab::find_backend("skiplist/cds")->ordered);
  CHECK(kvlab::find_backend("no/such") == nullptr);
}

TEST_CASE("selections resolve names, families and all, and reject unknown words") {
  std::string err;
  CHECK(kvlab::select_backends("all", &err).size() == kvlab::registered_backends().size());
  auto hash = kvlab::select_backends("hash", &err);
  CHECK(hash.size() >= 7);
  for (auto* t : hash) CHECK(t->family == "hash");
  auto two = kvlab::select_backends("hash/locked,skiplist/cds,hash/locked", &err);
  CHECK(two.size() == 2);
  CHECK(kvlab::select_backends("hash,bogus", &err).empty());
  CHECK(err.find("bogus") != std::string::npos);
}

TEST_CASE("the string keyspace factory builds every map backend and refuses queues") {
  for (const auto& t : kvlab::registered_backends()) {
    auto ks = kvlab::make_string_keyspace(t.name, {.expected_keys = 64});
    if (t.family == "queue") {
      CHECK(ks == nullptr);
      continue;
    }
    REQUIRE(ks != nullptr);
    CHECK(ks->traits().name == t.name);
    CHECK(ks->insert("k", "v"));
    std::string got;
    CHECK(ks->find("k", [&](const std::string& v) { got = v; }));
    CHECK(got == "v");
  }
  CHECK(kvlab::make_string_keyspace("nope") == nullptr);
}

TEST_CASE("the table renders as text, json and markdown with every name") {
  for (auto f : {kvlab::TableFormat::text, kvlab::TableFormat::json, kvlab::TableFormat::markdown}) {
    const std::string table = kvlab::format_backend_table(f);
    for (const auto& t : kvlab::registered_backends()) {
      CHECK(table.find(std::string(t.name)) != std::string::npos);
    }
  }
  const std::string json = kvlab::format_backend_table(kvlab::TableFormat::json);
  CHECK(json.front() == '[');
  CHECK(json.find("\"concurrent_erase\": false") != std::string::npos);
}
