// structures/common/hash.hpp: key_equal's inline short-key paths must agree with memcmp at every
// length and every position of a difference, and StringHash must hash std::string and
// std::string_view alike.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "structures/common/hash.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace {

TEST_CASE("key_equal agrees with byte-wise equality at every length and difference position") {
  // Lengths cover every path: 0, 1-3 (memcmp), 4-7 and 8-16 (overlapping loads), 17+ (memcmp).
  for (std::size_t n = 0; n <= 40; ++n) {
    std::string a(n, '\0');
    for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + (i * 7) % 26);
    // Offsets into a larger buffer: the loads must not assume alignment.
    const std::string buffer = "xyz" + a + "q";
    const std::string_view b(buffer.data() + 3, n);
    CHECK(kvlab::key_equal(a, b));
    for (std::size_t i = 0; i < n; ++i) {
      for (const unsigned char flip : {0x01u, 0x80u}) {
        std::string c = a;
        c[i] = static_cast<char>(static_cast<unsigned char>(c[i]) ^ flip);
        INFO("length " << n << ", byte " << i << ", flip " << int(flip));
        CHECK_FALSE(kvlab::key_equal(a, c));
        CHECK_FALSE(kvlab::key_equal(c, b));
      }
    }
    // Same bytes, different length (a prefix): never equal.
    if (n > 0) CHECK_FALSE(kvlab::key_equal(a, std::string_view(a).substr(0, n - 1)));
  }
  CHECK(kvlab::StringEqual{}("short", std::string("short")));
  CHECK_FALSE(kvlab::StringEqual{}("sixteen-bytes-ab", "sixteen-bytes-ac"));
}

TEST_CASE("StringHash hashes std::string and std::string_view alike") {
  const std::string s = "a key of some length";
  CHECK(kvlab::StringHash{}(s) == kvlab::StringHash{}(std::string_view(s)));
  CHECK(kvlab::hash64("k1") != kvlab::hash64("k2"));
}

}  // namespace
