// The RDB format's constants and the helpers rdb.cpp, rdb_load.cpp and rdb_dump.cpp share (type
// codes, length encodings, byte order). Not for use outside server/data/rdb*.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "server/data/rdb.hpp"

namespace kvlab::server::rdb {

// RDB object types (Redis's rdb.h).
enum Type : std::uint8_t {
  kTypeString = 0,
  kTypeList = 1,
  kTypeSet = 2,
  kTypeZSet = 3,
  kTypeHash = 4,
  kTypeZSet2 = 5,
  kTypeHashZipmap = 9,
  kTypeListZiplist = 10,
  kTypeSetIntset = 11,
  kTypeZSetZiplist = 12,
  kTypeHashZiplist = 13,
  kTypeListQuicklist = 14,
  kTypeStreamListpacks = 15,
  kTypeHashListpack = 16,
  kTypeZSetListpack = 17,
  kTypeListQuicklist2 = 18,
  kTypeStreamListpacks2 = 19,
};

// Length prefixes: the top two bits of the first byte.
inline constexpr std::uint8_t k6BitLen = 0, k14BitLen = 1, kEncVal = 3;

inline constexpr std::uint8_t k32BitLen = 0x80, k64BitLen = 0x81;

// Special string encodings (kEncVal's low six bits).
inline constexpr std::uint8_t kEncInt8 = 0, kEncInt16 = 1, kEncInt32 = 2, kEncLzf = 3;

// Quicklist 2 node containers.
inline constexpr std::uint64_t kQuicklistPlain = 1, kQuicklistPacked = 2;

// DEBUG SET-SKIP-CHECKSUM-VALIDATION. Relaxed: a switch read once per RESTORE, publishing nothing.
extern std::atomic<bool> g_skip_checksum;

// ---- little helpers --------------------------------------------------------------------------

std::uint64_t load_le(const unsigned char* p, int n);

std::uint64_t load_be(const unsigned char* p, int n);

// Sign-extends the low `bits` bits of v.
std::int64_t sign_extend(std::uint64_t v, int bits);

std::string int_string(std::int64_t v);

// ---- embedded blobs --------------------------------------------------------------------------

// How many bytes a listpack entry's back-length takes (Redis's lpEncodeBacklen, whose thresholds
// are one below the powers of 128: an entry of 16383 bytes gets three).
std::size_t backlen_size(std::size_t len);

// The canonical decimal text of an int64 (Redis's string2ll): stored as an integer in listpacks
// and intsets. "007", "+1", "-0" and " 1" are strings.
bool canonical_int(std::string_view s, std::int64_t* v);

}  // namespace kvlab::server::rdb
