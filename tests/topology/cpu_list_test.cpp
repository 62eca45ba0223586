// CPU list strings: the format taskset -c, /sys and the reports use.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include "topology/placement.hpp"

using kvlab::topo::format_cpu_list;
using kvlab::topo::parse_cpu_list;

TEST_CASE("format_cpu_list collapses runs into ranges") {
  CHECK(format_cpu_list({0, 1, 2, 3, 8}) == "0-3,8");
  CHECK(format_cpu_list({}) == "");
  CHECK(format_cpu_list({5}) == "5");
  CHECK(format_cpu_list({0, 1, 2, 3, 4, 5, 6, 7, 192, 193, 194, 195, 196, 197, 198, 199}) ==
        "0-7,192-199");
}

TEST_CASE("format_cpu_list sorts its input and drops duplicates") {
  CHECK(format_cpu_list({8, 3, 2, 2, 1, 0}) == "0-3,8");
  CHECK(format_cpu_list({4, 6}) == "4,6");
}

TEST_CASE("parse_cpu_list reads what format_cpu_list writes") {
  std::vector<unsigned> cpus;
  std::string error;
  REQUIRE(parse_cpu_list("0-3,8", &cpus, &error));
  CHECK(cpus == std::vector<unsigned>{0, 1, 2, 3, 8});
  REQUIRE(parse_cpu_list(" 4 , 1-2 ,2 ", &cpus, &error));
  CHECK(cpus == std::vector<unsigned>{1, 2, 4});
  REQUIRE(parse_cpu_list("", &cpus, &error));
  CHECK(cpus.empty());
  for (const std::string s : {"0-7,192-199", "1", "0-383"}) {
    REQUIRE(parse_cpu_list(s, &cpus, &error));
    CHECK(format_cpu_list(cpus) == s);
  }
}

TEST_CASE("parse_cpu_list rejects malformed lists with a message") {
  std::vector<unsigned> cpus{42};
  std::string error;
  for (const char* bad : {"a", "1,,2", "3-1", "1-", "-1", "1,", "0-99999999", "1.5", "2x"}) {
    CAPTURE(bad);
    error.clear();
    CHECK_FALSE(parse_cpu_list(bad, &cpus, &error));
    CHECK(!error.empty());
  }
  CHECK(cpus == std::vector<unsigned>{42});  // untouched on failure
}
