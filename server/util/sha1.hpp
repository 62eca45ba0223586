// SHA-1 for the server: script names (EVAL, EVALSHA, SCRIPT LOAD, redis.sha1hex) and DEBUG
// DIGEST. The hashing is OpenSSL's libcrypto (Debian's libssl-dev), which uses the CPU's SHA
// instructions where it has them; this file only keeps one digest context per thread so that a
// hash costs no allocation.
//
// Thread safety: every function may be called from any thread at once; each thread hashes with
// its own context, created on its first call and freed when it exits.
#pragma once

#include <array>
#include <initializer_list>
#include <string>
#include <string_view>

namespace kvlab::server {

inline constexpr std::size_t kSha1Bytes = 20;
using Sha1Digest = std::array<unsigned char, kSha1Bytes>;

// The SHA-1 of the concatenation of parts (hashed in place, not copied together).
Sha1Digest sha1(std::initializer_list<std::string_view> parts);
inline Sha1Digest sha1(std::string_view data) {
  return sha1({data});
}

// A digest as 40 lowercase hex characters.
std::string to_hex(const Sha1Digest& d);

// The SHA-1 of data as 40 lowercase hex characters (a script's name).
inline std::string sha1_hex(std::string_view data) {
  return to_hex(sha1(data));
}

}  // namespace kvlab::server
