// structures/common/hash.hpp: key_equal's inline short-key paths must agree with memcmp at every
// length and every position of a difference, StringHash must hash std::string and
// std::string_view alike, and the out-of-line hashes must equal the own structures' inline copies
// (structures/internal/xxh3.hpp) and libxxhash's published values. Neither header may leave
// XXH_INLINE_ALL defined, and the public one must not pull in xxhash.h at all.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "structures/common/hash.hpp"

#ifdef XXH_VERSION_MAJOR
#error "structures/common/hash.hpp is public: it must not include xxhash.h"
#endif

#include "structures/internal/xxh3.hpp"

#ifdef XXH_INLINE_ALL
#error "structures/internal/xxh3.hpp must not leave XXH_INLINE_ALL defined"
#endif

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

TEST_CASE("the out-of-line and inline XXH3 agree with each other and with libxxhash") {
  // libxxhash 0.8's XXH3_64bits / XXH3_128bits of "" and "k1" (checked against libxxhash.so.0).
  CHECK(kvlab::hash64("") == 0x2d06800538d394c2ull);
  CHECK(kvlab::hash64("k1") == 0x81afbf86b72a36c5ull);
  CHECK(kvlab::hash128("") == kvlab::Hash128{0x6001c324468d497full, 0x99aa06d3014798d8ull});
  CHECK(kvlab::hash128("k1") == kvlab::Hash128{0x81afbf86b72a36c5ull, 0x3f02cbbe837576caull});
  // Every length class of XXH3 (0, 1-3, 4-8, 9-16, 17-128, 129-240, longer).
  std::string key;
  for (std::size_t n = 0; n <= 300; ++n) {
    INFO("length " << n);
    CHECK(kvlab::hash64(key) == kvlab::internal::xxh3_64(key));
    CHECK(kvlab::hash128(key) == kvlab::internal::xxh3_128(key));
    key.push_back(static_cast<char>('a' + n % 26));
  }
}

}  // namespace
