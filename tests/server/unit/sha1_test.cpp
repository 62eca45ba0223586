// Unit tests of server/util/sha1.hpp: the FIPS 180 test vectors, hashing in parts equal to hashing the
// concatenation, and threads hashing at once (each with its own context) agreeing with one thread.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "server/util/sha1.hpp"

using kvlab::server::sha1;
using kvlab::server::sha1_hex;
using kvlab::server::to_hex;

TEST_CASE("SHA-1 of the FIPS 180 test vectors") {
  CHECK(sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  CHECK(sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
  CHECK(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  CHECK(sha1_hex(std::string(1000000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  // Redis's name for the script `return 1`.
  CHECK(sha1_hex("return 1") == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

TEST_CASE("hashing in parts equals hashing the concatenation, at every split") {
  const std::string s =
      "The quick brown fox jumps over the lazy dog, twice: " + std::string(70, 'x');
  const std::string whole = sha1_hex(s);
  for (std::size_t i = 0; i <= s.size(); ++i) {
    const std::string_view v(s);
    CHECK(to_hex(sha1({v.substr(0, i), v.substr(i)})) == whole);
    CHECK(to_hex(sha1({v.substr(0, i), "", v.substr(i)})) == whole);
  }
}

// Each thread hashes with its own context: concurrent hashing gives what one thread gives.
TEST_CASE("threads hashing at once agree with one thread") {
  std::vector<std::string> inputs;
  for (int i = 0; i < 64; ++i)
    inputs.push_back(std::string(static_cast<std::size_t>(i * 13), 'a' + i % 26));
  std::vector<std::string> expected;
  for (const auto& in : inputs) expected.push_back(sha1_hex(in));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 200; ++round)
        for (std::size_t i = 0; i < inputs.size(); ++i)
          if (sha1_hex(inputs[i]) != expected[i]) ++mismatches[static_cast<std::size_t>(t)];
    });
  }
  for (auto& th : threads) th.join();
  for (const int m : mismatches) CHECK(m == 0);
}
