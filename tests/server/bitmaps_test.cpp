// The bitmap family (SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO) and LCS
// against a real kvlab-server (2 workers) through hiredis: hand-written cases with Redis 7.0's
// replies and exact error texts, then a randomized comparison with a real redis-server started
// here on a free port (skipped when redis-server is not on PATH): a few thousand random calls,
// ranges negative and out of range, malformed arguments included, sent to both servers in the
// same order; every reply must be equal.
//
// The random seed is fixed (KVLAB_BITS_SEED overrides it); KVLAB_BITS_CALLS sets the number of
// calls. With KVLAB_BITS_PORT=<port> the hand-written cases run against that server instead of
// the kvlab-server they start, which is how their expectations were checked against Redis itself.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::kWrongType;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

int target_port() {
  const char* p = std::getenv("KVLAB_BITS_PORT");
  return p != nullptr ? std::atoi(p) : server().port();
}

Client& client() {
  static Client c(target_port());
  return c;
}

constexpr std::string_view kSyntax = "ERR syntax error";
constexpr std::string_view kNotInteger = "ERR value is not an integer or out of range";
constexpr std::string_view kBitOffset = "ERR bit offset is not an integer or out of range";
constexpr std::string_view kBitfieldType =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 "
    "is.";

// The integers of an array reply; nil elements as the sentinel kNil.
constexpr long long kNil = std::numeric_limits<long long>::min();
std::vector<long long> ints(const Reply& r) {
  std::vector<long long> out;
  for (const auto& e : r.elements) out.push_back(e.is_nil() ? kNil : e.integer);
  return out;
}
using I = std::vector<long long>;

// A reply as text, binary-safe, for comparisons and failure messages.
std::string show(const Reply& r) {
  std::string out;
  auto quote = [&](const std::string& s) {
    for (unsigned char ch : s) {
      if (ch >= 0x20 && ch < 0x7f && ch != '\\') {
        out += static_cast<char>(ch);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", ch);
        out += buf;
      }
    }
  };
  switch (r.type) {
    case REDIS_REPLY_STRING:
      out += '"';
      quote(r.str);
      out += '"';
      break;
    case REDIS_REPLY_STATUS:
      out += '+';
      quote(r.str);
      break;
    case REDIS_REPLY_ERROR:
      out += '-';
      quote(r.str);
      break;
    case REDIS_REPLY_INTEGER:
      out += ':' + std::to_string(r.integer);
      break;
    case REDIS_REPLY_NIL:
      out += "(nil)";
      break;
    case REDIS_REPLY_ARRAY:
      out += '[';
      for (std::size_t i = 0; i < r.elements.size(); ++i) {
        if (i > 0) out += ", ";
        out += show(r.elements[i]);
      }
      out += ']';
      break;
    default:
      out += "(no reply, type " + std::to_string(r.type) + ")";
  }
  return out;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("the server with 2 workers starts") {
    REQUIRE(server().running());
    REQUIRE(client().ok());
    CHECK(client()("FLUSHALL").is_status("OK"));
  }

  TEST_CASE("SETBIT and GETBIT address bits from the most significant bit of byte 0") {
    auto& c = client();
    c("DEL sb");
    CHECK(c("SETBIT sb 7 1").integer == 0);
    CHECK(c("GET sb").str == std::string("\x01", 1));
    CHECK(c("SETBIT sb 0 1").integer == 0);
    CHECK(c("SETBIT sb 0 1").integer == 1);
    CHECK(c("GET sb").str == std::string("\x81", 1));
    CHECK(c("SETBIT sb 0 0").integer == 1);
    CHECK(c("GETBIT sb 7").integer == 1);
    CHECK(c("GETBIT sb 6").integer == 0);
    CHECK(c("GETBIT sb 100000").integer == 0);  // past the end: 0
    CHECK(c("GETBIT nosuch 3").integer == 0);
    // Growing zero-fills; clearing a bit past the end still creates or grows the string.
    CHECK(c("SETBIT sb 23 0").integer == 0);
    CHECK(c("GET sb").str == std::string("\x01\x00\x00", 3));
    CHECK(c("SETBIT sz 9 0").integer == 0);
    CHECK(c("GET sz").str == std::string(2, '\0'));
    // SETBIT keeps the key's TTL.
    CHECK(c("EXPIRE sb 100").integer == 1);
    CHECK(c("SETBIT sb 40 1").integer == 0);
    CHECK(c("TTL sb").integer > 90);
    CHECK(c("STRLEN sb").integer == 6);
    // Errors: the offset first, then the bit, then the type.
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("SETBIT sb -1 1"), kBitOffset);
    check_error(c("SETBIT sb x 1"), kBitOffset);
    check_error(c("SETBIT sb 01 1"), kBitOffset);
    check_error(c("SETBIT sb 4294967296 1"), kBitOffset);  // byte 512 MiB: past the limit
    check_error(c("SETBIT sb 1 2"), "ERR bit is not an integer or out of range");
    check_error(c("SETBIT sb 1 -1"), "ERR bit is not an integer or out of range");
    check_error(c("SETBIT sb 1 x"), "ERR bit is not an integer or out of range");
    check_error(c("SETBIT hx x 2"), kBitOffset);
    check_error(c("SETBIT hx 1 2"), "ERR bit is not an integer or out of range");
    check_error(c("SETBIT hx 1 1"), kWrongType);
    check_error(c("GETBIT hx 1"), kWrongType);
    check_error(c("GETBIT hx -1"), kBitOffset);
    check_error(c("GETBIT nosuch 4294967296"), kBitOffset);
    check_error(c("SETBIT sb 1"), "ERR wrong number of arguments for 'setbit' command");
    check_error(c("GETBIT sb"), "ERR wrong number of arguments for 'getbit' command");
  }

  TEST_CASE("BITCOUNT counts in byte or bit ranges with negative indexes") {
    auto& c = client();
    c("SET bc foobar");
    CHECK(c("BITCOUNT bc").integer == 26);
    CHECK(c("BITCOUNT bc 0 0").integer == 4);
    CHECK(c("BITCOUNT bc 1 1").integer == 6);
    CHECK(c("BITCOUNT bc 1 1 BYTE").integer == 6);
    CHECK(c("BITCOUNT bc 5 30 BIT").integer == 17);
    CHECK(c("BITCOUNT bc 0 -1 bit").integer == 26);
    // Option words are compared as C strings, as Redis does: a NUL ends them.
    CHECK(c.cmd({"BITCOUNT", "bc", "5", "30", std::string("BIT\0x", 5)}).integer == 17);
    CHECK(c("BITCOUNT bc -2 -1").integer == 7);
    CHECK(c("BITCOUNT bc -100 100").integer == 26);
    CHECK(c("BITCOUNT bc 3 2").integer == 0);
    CHECK(c("BITCOUNT bc 6 100").integer == 0);
    CHECK(c("BITCOUNT bc 47 47 BIT").integer == 0);
    CHECK(c("BITCOUNT bc 46 47 BIT").integer == 1);
    CHECK(c("BITCOUNT bc 9 9 BIT").integer == 1);
    CHECK(c("BITCOUNT bc 10 10 BIT").integer == 1);
    CHECK(c("BITCOUNT bc 8 8 BIT").integer == 0);
    CHECK(c("BITCOUNT bc -9223372036854775808 9223372036854775807 BIT").integer == 26);
    CHECK(c("BITCOUNT nosuch").integer == 0);
    c.cmd({"SET", "bce", ""});
    CHECK(c("BITCOUNT bce").integer == 0);
    CHECK(c("BITCOUNT bce 0 -1 BIT").integer == 0);
    // Redis 7.0 looks the key up before it parses the range: a missing key answers 0 regardless.
    CHECK(c("BITCOUNT nosuch a b").integer == 0);
    CHECK(c("BITCOUNT nosuch 1").integer == 0);
    check_error(c("BITCOUNT bc 1"), kSyntax);
    check_error(c("BITCOUNT bc a b"), kNotInteger);
    check_error(c("BITCOUNT bc 0 b"), kNotInteger);
    check_error(c("BITCOUNT bc 1 2 foo"), kSyntax);
    check_error(c("BITCOUNT bc 1 2 bit extra"), kSyntax);
    CHECK(c("BITCOUNT bc -1 -2 foo").integer == 0);  // the empty-range shortcut comes first
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("BITCOUNT hx"), kWrongType);
    check_error(c("BITCOUNT hx a b"), kWrongType);
  }

  TEST_CASE("BITPOS finds the first set or clear bit, padding with zeros only without an end") {
    auto& c = client();
    c.cmd({"SET", "bp", std::string("\xff\xf0\x00", 3)});
    CHECK(c("BITPOS bp 0").integer == 12);
    c.cmd({"SET", "bp", std::string("\x00\xff\xf0", 3)});
    CHECK(c("BITPOS bp 1 0").integer == 8);
    CHECK(c("BITPOS bp 1 2").integer == 16);
    CHECK(c("BITPOS bp 1 2 -1 BYTE").integer == 16);
    CHECK(c("BITPOS bp 1 7 15 BIT").integer == 8);
    CHECK(c("BITPOS bp 0 8 19 bit").integer == -1);
    CHECK(c("BITPOS bp 0 8 20 bit").integer == 20);
    CHECK(c("BITPOS bp 1 17 17 BIT").integer == 17);
    CHECK(c("BITPOS bp 1 20 -1 BIT").integer == -1);
    CHECK(c("BITPOS bp 1 -1").integer == 16);
    CHECK(c("BITPOS bp 1 3 2").integer == -1);  // empty range
    c.cmd({"SET", "bp", std::string(3, '\0')});
    CHECK(c("BITPOS bp 1").integer == -1);
    CHECK(c("BITPOS bp 1 7 -3 BIT").integer == -1);
    c.cmd({"SET", "bp", std::string("\xff\xff", 2)});
    CHECK(c("BITPOS bp 0").integer == 16);    // the zero just past the end
    CHECK(c("BITPOS bp 0 0").integer == 16);  // start only: still padded
    CHECK(c("BITPOS bp 0 -100").integer == 16);
    CHECK(c("BITPOS bp 0 0 -1").integer == -1);  // an explicit end: not padded
    CHECK(c("BITPOS bp 0 3 10 BIT").integer == -1);
    CHECK(c("BITPOS bp 0 100").integer == -1);
    CHECK(c("BITPOS bp 1 100").integer == -1);
    c.cmd({"SET", "bp", ""});
    CHECK(c("BITPOS bp 0").integer == -1);  // an empty string is an empty range
    CHECK(c("BITPOS bp 1").integer == -1);
    // A missing key is endless zeros, answered before the range is parsed.
    CHECK(c("BITPOS nosuch 0").integer == 0);
    CHECK(c("BITPOS nosuch 1").integer == -1);
    CHECK(c("BITPOS nosuch 1 a b").integer == -1);
    check_error(c("BITPOS nosuch 2"), "ERR The bit argument must be 1 or 0.");
    check_error(c("BITPOS nosuch -1"), "ERR The bit argument must be 1 or 0.");
    check_error(c("BITPOS nosuch x"), kNotInteger);
    c("SET bp foobar");
    check_error(c("BITPOS bp 1 a"), kNotInteger);
    check_error(c("BITPOS bp 1 0 a"), kNotInteger);
    check_error(c("BITPOS bp 1 0 BIT"), kNotInteger);  // with five arguments the fifth is the end
    check_error(c("BITPOS bp 1 0 1 foo"), kSyntax);
    check_error(c("BITPOS bp 1 0 x foo"), kSyntax);  // the unit is checked before the end
    check_error(c("BITPOS bp 1 0 1 bit x"), kSyntax);
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("BITPOS hx 1"), kWrongType);
    check_error(c("BITPOS bp"), "ERR wrong number of arguments for 'bitpos' command");
  }

  TEST_CASE("BITOP pads shorter sources with zeros and deletes the destination on empty input") {
    auto& c = client();
    c("DEL bo1 bo2 bo3 dst");
    c.cmd({"SET", "bo1", std::string("\x0f\xff", 2)});
    c.cmd({"SET", "bo2", std::string("\x3c", 1)});
    CHECK(c("BITOP AND dst bo1 bo2").integer == 2);
    CHECK(c("GET dst").str == std::string("\x0c\x00", 2));
    CHECK(c("BITOP or dst bo1 bo2").integer == 2);
    CHECK(c("GET dst").str == std::string("\x3f\xff", 2));
    CHECK(c("BITOP Xor dst bo1 bo2 bo3").integer == 2);
    CHECK(c("GET dst").str == std::string("\x33\xff", 2));
    CHECK(c("BITOP NOT dst bo2").integer == 1);
    CHECK(c("GET dst").str == std::string("\xc3", 1));
    CHECK(c("BITOP AND dst bo1 nosuch").integer == 2);
    CHECK(c("GET dst").str == std::string(2, '\0'));
    CHECK(c("BITOP NOT bo2 bo2").integer == 1);  // the destination may be a source
    CHECK(c("GET bo2").str == std::string("\xc3", 1));
    // The result replaces the destination without its TTL.
    CHECK(c("EXPIRE dst 100").integer == 1);
    CHECK(c("BITOP OR dst bo1").integer == 2);
    CHECK(c("TTL dst").integer == -1);
    // Only missing sources: the destination is deleted and the length is 0.
    CHECK(c("BITOP OR dst nosuch nosuch2").integer == 0);
    CHECK(c("EXISTS dst").integer == 0);
    c("SET dst x");
    CHECK(c("BITOP NOT dst nosuch").integer == 0);
    CHECK(c("EXISTS dst").integer == 0);
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("BITOP foo dst bo1"), kSyntax);
    check_error(c("BITOP foo dst bo1 bo2"), kSyntax);
    check_error(c("BITOP NOT dst bo1 bo2"),
                "ERR BITOP NOT must be called with a single source key.");
    check_error(c("BITOP NOT dst hx"), kWrongType);
    check_error(c("BITOP AND dst bo1 hx"), kWrongType);
    CHECK(c("EXISTS dst").integer == 0);  // nothing was written
    check_error(c("BITOP AND dst"), "ERR wrong number of arguments for 'bitop' command");
  }

  TEST_CASE("BITFIELD gets, sets and increments signed and unsigned fields with overflow control") {
    auto& c = client();
    c("DEL bf");
    CHECK(ints(c("BITFIELD bf SET i8 0 100 GET i8 0 INCRBY i8 0 50 GET u8 0")) ==
          I{0, 100, -106, 150});  // INCRBY wraps by default
    CHECK(ints(c("BITFIELD bf OVERFLOW SAT INCRBY i8 0 -100 INCRBY u8 0 200")) == I{-128, 255});
    CHECK(ints(c("BITFIELD bf OVERFLOW FAIL INCRBY u8 0 1 GET u8 0")) == I{kNil, 255});
    CHECK(ints(c("BITFIELD bf OVERFLOW SAT SET u8 8 -1 GET u8 8 SET i8 16 200 GET i8 16 "
                 "OVERFLOW WRAP SET i8 24 200 GET i8 24")) == I{0, 255, 0, 127, 0, -56});
    CHECK(ints(c("BITFIELD bf GET u4 0 GET i4 0 GET u1 7 GET i1 7 GET u63 0")) ==
          I{15, -1, 1, -1, 9223301547851513856LL});
    // Redis's quirk: a SET far enough below the minimum (at most INT64_MIN + max) saturates to max.
    CHECK(ints(c("BITFIELD bf4 OVERFLOW SAT SET i8 0 -9223372036854775681 GET i8 0 "
                 "SET i8 0 -9223372036854775680 GET i8 0")) == I{0, 127, 127, -128});
    // #N offsets count in fields of the type's width.
    c("DEL bf2");
    CHECK(ints(c("BITFIELD bf2 SET u8 #1 255 GET u8 8 GET u16 #0")) == I{0, 255, 255});
    // i64: full 64-bit range, WRAP and SAT at the limits.
    CHECK(ints(c("BITFIELD bf2 SET i64 0 9223372036854775807 INCRBY i64 0 1")) ==
          I{71776119061217280LL, std::numeric_limits<long long>::min()});
    CHECK(ints(c("BITFIELD bf2 OVERFLOW SAT INCRBY i64 0 -1")) ==
          I{std::numeric_limits<long long>::min()});
    CHECK(ints(c("BITFIELD bf2 OVERFLOW FAIL INCRBY i64 0 -1 GET i64 0")) ==
          I{kNil, std::numeric_limits<long long>::min()});
    // Reads past the end are zero; writes grow the string zero-filled, even when FAIL refuses them.
    c("DEL bf3");
    CHECK(ints(c("BITFIELD bf3 GET i64 1000")) == I{0});
    CHECK(c("EXISTS bf3").integer == 0);
    CHECK(ints(c("BITFIELD bf3 OVERFLOW FAIL SET u8 16 1000")) == I{kNil});
    CHECK(c("GET bf3").str == std::string(3, '\0'));
    CHECK(c("BITFIELD bf3").elements.empty());
    CHECK(c("BITFIELD nosuch").type == REDIS_REPLY_ARRAY);
    // Offsets: the byte must be below 512 MiB; "#N" multiplies and wraps as Redis's does.
    CHECK(ints(c("BITFIELD nosuch GET i8 4294967288 GET i64 #67108863")) == I{0, 0});
    check_error(c("BITFIELD nosuch GET i64 #67108864"), kBitOffset);
    check_error(c("BITFIELD nosuch GET i64 #144115188075855872"), kBitOffset);  // 2^63: negative
    CHECK(ints(c("BITFIELD bf GET u8 #2305843009213693952")) == I{255});        // 2^64: offset 0
    // SETs keep the TTL.
    CHECK(c("EXPIRE bf 100").integer == 1);
    c("BITFIELD bf SET u8 0 1");
    CHECK(c("TTL bf").integer > 90);
    // Errors, in Redis's order: each operation's syntax, type, offset, value; then the key.
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("BITFIELD bf GET"), kSyntax);
    check_error(c("BITFIELD bf GET i8"), kSyntax);
    check_error(c("BITFIELD bf SET i8 0"), kSyntax);
    check_error(c("BITFIELD bf OVERFLOW"), kSyntax);
    check_error(c("BITFIELD bf FOO"), kSyntax);
    check_error(c("BITFIELD bf OVERFLOW foo GET i8 0"), "ERR Invalid OVERFLOW type specified");
    for (const char* t : {"x8", "I8", "u64", "i65", "i0", "u0", "i08", "i", "i-1", "i+8"}) {
      check_error(c.cmd({"BITFIELD", "bf", "GET", t, "0"}), kBitfieldType);
    }
    for (const char* o : {"-1", "x", "#", "#-1", "##1", "#01", "#+1", "4294967296"}) {
      check_error(c.cmd({"BITFIELD", "bf", "GET", "i8", o}), kBitOffset);
    }
    // Redis reads the type's width up to a NUL, the offset in full.
    CHECK(ints(c.cmd({"BITFIELD", "bf", "GET", std::string("u8\0x", 4), "0"})) == I{1});
    check_error(c.cmd({"BITFIELD", "bf", "GET", "u8", std::string("8\0", 2)}), kBitOffset);
    check_error(c("BITFIELD bf SET i8 0 x"), kNotInteger);
    check_error(c("BITFIELD bf INCRBY i8 0 1.5"), kNotInteger);
    check_error(c("BITFIELD bf GET i8 0 SET u64 0 1"), kBitfieldType);
    check_error(c("BITFIELD hx GET i8 0"), kWrongType);
    check_error(c("BITFIELD hx"), kWrongType);
    check_error(c("BITFIELD hx SET i8 0 1"), kWrongType);
    check_error(c("BITFIELD hx SET i8 0 x"), kNotInteger);
    check_error(c("BITFIELD"), "ERR wrong number of arguments for 'bitfield' command");
  }

  TEST_CASE("BITFIELD_RO reads like BITFIELD and refuses SET and INCRBY") {
    auto& c = client();
    c.cmd({"SET", "ro", std::string("\x80\x01", 2)});
    CHECK(ints(c("BITFIELD_RO ro GET i8 0 GET u16 0 GET u1 15 GET i8 100")) ==
          I{-128, 32769, 1, 0});
    CHECK(ints(c("BITFIELD_RO ro OVERFLOW SAT GET u8 #1")) == I{1});
    CHECK(c("BITFIELD_RO ro").elements.empty());
    const std::string_view ro_error = "ERR BITFIELD_RO only supports the GET subcommand";
    check_error(c("BITFIELD_RO ro SET i8 0 1"), ro_error);
    check_error(c("BITFIELD_RO ro GET u8 0 INCRBY i8 0 1"), ro_error);
    check_error(c("BITFIELD_RO ro SET i8 0 x"), kNotInteger);  // parsing comes first
    check_error(c("BITFIELD_RO ro GET u64 0"), kBitfieldType);
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("BITFIELD_RO hx GET i8 0"), kWrongType);
    check_error(c("BITFIELD_RO hx SET i8 0 1"), ro_error);  // before the type check
    CHECK(c.cmd({"GET", "ro"}).str == std::string("\x80\x01", 2));
    check_error(c("BITFIELD_RO"), "ERR wrong number of arguments for 'bitfield_ro' command");
  }

  TEST_CASE("LCS answers the subsequence, its length or its matches as Redis 7.0 does") {
    auto& c = client();
    c("SET l1 ohmytext");
    c("SET l2 mynewtext");
    CHECK(c("LCS l1 l2").str == "mytext");
    CHECK(c("LCS l1 l2 LEN").integer == 6);
    CHECK(c("LCS l1 l2 withmatchlen len").integer == 6);
    CHECK(c("LCS l1 l2 WITHMATCHLEN").str == "mytext");
    Reply r = c("LCS l1 l2 IDX");
    CHECK(show(r) == "[\"matches\", [[[:4, :7], [:5, :8]], [[:2, :3], [:0, :1]]], \"len\", :6]");
    r = c("LCS l1 l2 IDX MINMATCHLEN 4 WITHMATCHLEN");
    CHECK(show(r) == "[\"matches\", [[[:4, :7], [:5, :8], :4]], \"len\", :6]");
    r = c("LCS l1 l2 idx minmatchlen -5 withmatchlen");
    CHECK(show(r) ==
          "[\"matches\", [[[:4, :7], [:5, :8], :4], [[:2, :3], [:0, :1], :2]], \"len\", :6]");
    r = c("LCS nosuch nosuch2 IDX");
    CHECK(show(r) == "[\"matches\", [], \"len\", :0]");
    CHECK(c("LCS l1 nosuch").str.empty());
    CHECK(c("LCS l1 nosuch").type == REDIS_REPLY_STRING);
    // Ties go the way Redis's walk goes: the match ranges it reports, not just any LCS.
    c("SET l3 abcabc");
    c("SET l4 cba");
    CHECK(c("LCS l3 l4").str == "cb");
    CHECK(show(c("LCS l3 l4 IDX WITHMATCHLEN")) ==
          "[\"matches\", [[[:4, :4], [:1, :1], :1], [[:2, :2], [:0, :0], :1]], \"len\", :2]");
    c("DEL hx");
    c("HSET hx f v");
    check_error(c("LCS l1 hx"), "ERR The specified keys must contain string values");
    check_error(c("LCS hx l1 FOO"), "ERR The specified keys must contain string values");
    check_error(c("LCS l1 l2 IDX LEN"),
                "ERR If you want both the length and indexes, please just use IDX.");
    check_error(c("LCS l1 l2 FOO"), kSyntax);
    check_error(c("LCS l1 l2 MINMATCHLEN"), kSyntax);
    check_error(c("LCS l1 l2 MINMATCHLEN x"), kNotInteger);
    check_error(c("LCS l1"), "ERR wrong number of arguments for 'lcs' command");
    // The table for two 12000-byte strings would take 576 MB: refused like Redis.
    c.cmd({"SET", "lbig", std::string(12000, 'a')});
    check_error(c("LCS lbig lbig"),
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  }

  // Property: SETBIT and BITFIELD are atomic read-modify-writes on their key. Four clients set
  // disjoint bits of one key while four others INCRBY one counter field of the same key; no
  // update is lost, so every bit is set and the counter equals the number of increments.
  TEST_CASE("concurrent SETBIT and BITFIELD INCRBY on one key lose no update") {
    auto& c = client();
    c("DEL race");
    constexpr int kClients = 4, kOps = 400;
    std::vector<std::thread> threads;
    for (int t = 0; t < 2 * kClients; ++t) {
      threads.emplace_back([t] {
        Client own(target_port());
        for (int i = 0; i < kOps; ++i) {
          if (t < kClients) {
            own.append({"SETBIT", "race", std::to_string(64 + i * kClients + t), "1"});
          } else {
            own.append({"BITFIELD", "race", "INCRBY", "u32", "0", "1"});
          }
        }
        for (int i = 0; i < kOps; ++i) own.get_reply();
      });
    }
    for (auto& th : threads) th.join();
    CHECK(c("BITCOUNT race 8 -1").integer == kClients * kOps);
    CHECK(ints(c("BITFIELD race GET u32 0")) == I{kClients * kOps});
  }

  TEST_CASE("COMMAND INFO gives the bitmap commands' arity, flags and key positions") {
    auto& c = client();
    Reply r = c("COMMAND INFO setbit getbit bitcount bitpos bitop bitfield bitfield_ro lcs");
    REQUIRE(r.elements.size() == 8);
    const long long expect[8][4] = {{4, 1, 1, 1},   {3, 1, 1, 1},  {-2, 1, 1, 1}, {-3, 1, 1, 1},
                                    {-4, 2, -1, 1}, {-2, 1, 1, 1}, {-2, 1, 1, 1}, {-3, 1, 2, 1}};
    for (std::size_t i = 0; i < 8; ++i) {
      REQUIRE(r.elements[i].elements.size() >= 6);
      CHECK(r.elements[i].elements[1].integer == expect[i][0]);
      CHECK(r.elements[i].elements[3].integer == expect[i][1]);
      CHECK(r.elements[i].elements[4].integer == expect[i][2]);
      CHECK(r.elements[i].elements[5].integer == expect[i][3]);
    }
    auto flags = [&](std::size_t i) {
      std::string out;
      for (const auto& f : r.elements[i].elements[2].elements) out += f.str + " ";
      return out;
    };
    CHECK(flags(0) == "write denyoom ");
    CHECK(flags(1) == "readonly fast ");
    CHECK(flags(4).rfind("write denyoom", 0) == 0);
    CHECK(flags(5) == "write denyoom ");
    CHECK(flags(6) == "readonly fast ");
    CHECK(flags(7).rfind("readonly", 0) == 0);
  }
}

// ------------------------------------------------------------------------ random comparison

namespace {

using kvtest::find_redis_server;

using kvtest::RedisProcess;

// Random commands over a few keys: bit and string writes, every bitmap read, malformed arguments.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  std::vector<std::string> next() {
    // Writes may turn the hash into a string and create bm:none; now and then both are reset.
    if (restore_hash_) {
      restore_hash_ = false;
      return {"HSET", "bm:h", "f", "v"};
    }
    if (below(100) < 2) {
      restore_hash_ = true;
      return {"DEL", "bm:h", "bm:none"};
    }
    const int pick = below(100);
    if (pick < 14) return setbit();
    if (pick < 18) return {"GETBIT", key(), bit_offset()};
    if (pick < 32) return bitcount();
    if (pick < 48) return bitpos();
    if (pick < 58) return bitop();
    if (pick < 74) return bitfield(false);
    if (pick < 78) return bitfield(true);
    if (pick < 88) return lcs();
    if (pick < 94) return {"SET", key(), value()};
    if (pick < 98) return {"GET", key()};
    return {"DEL", key()};
  }

 private:
  int below(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(below(static_cast<int>(v.size())))];
  }

  // Four bitmaps, one hash (WRONGTYPE), one key deleted now and then (often missing).
  std::string key() {
    static const std::vector<std::string> keys = {"bm:0", "bm:1", "bm:2",
                                                  "bm:3", "bm:h", "bm:none"};
    const int p = below(100);
    return p < 88 ? keys[static_cast<std::size_t>(p % 4)]
                  : keys[4 + static_cast<std::size_t>(p % 2)];
  }

  // Short strings over a small alphabet (so that LCS finds long matches) or any bytes.
  std::string value() {
    std::string s(static_cast<std::size_t>(below(below(4) == 0 ? 200 : 24)), '\0');
    const bool any = below(3) == 0;
    for (char& ch : s)
      ch = any ? static_cast<char>(rng_()) : static_cast<char>("abcd\xff"[below(5)]);
    return s;
  }

  std::string bit_offset() {
    const int p = below(100);
    if (p < 80) return std::to_string(range(0, 320));
    if (p < 90) return std::to_string(range(0, 6000));
    return one_of<std::string>({"-1", "x", "01", "4294967296", "-9223372036854775808", "", " 1"});
  }

  // A range endpoint: mostly near the string, sometimes huge, sometimes not a number.
  std::string index() {
    const int p = below(100);
    if (p < 65) return std::to_string(range(-48, 48));
    if (p < 80) return std::to_string(range(-400, 400));
    if (p < 90) return std::to_string(range(-3000, 3000));
    if (p < 96) {
      return one_of<std::string>({"9223372036854775807", "-9223372036854775808",
                                  "4611686018427387904", "-4611686018427387904", "1099511627776"});
    }
    return one_of<std::string>({"a", "1.5", "", "+1", "01", "-0", "9223372036854775808"});
  }

  std::string unit() {
    const int p = below(100);
    if (p < 45) return "BIT";
    if (p < 55) return "bit";
    if (p < 90) return "BYTE";
    return one_of<std::string>({"bits", "bytes", "", "b"});
  }

  std::vector<std::string> setbit() {
    const int p = below(100);
    std::string v = p < 93 ? std::to_string(below(2)) : one_of<std::string>({"2", "-1", "x", "01"});
    return {"SETBIT", key(), bit_offset(), v};
  }

  std::vector<std::string> bitcount() {
    std::vector<std::string> c = {"BITCOUNT", key()};
    const int p = below(100);
    if (p < 15) return c;
    c.push_back(index());
    if (p < 18) return c;  // start without end: syntax error
    c.push_back(index());
    if (p < 45) return c;
    c.push_back(unit());
    if (p > 97) c.push_back("extra");
    return c;
  }

  std::vector<std::string> bitpos() {
    const int p = below(100);
    std::string bit = p < 95 ? std::to_string(below(2)) : one_of<std::string>({"2", "-1", "x"});
    std::vector<std::string> c = {"BITPOS", key(), bit};
    const int q = below(100);
    if (q < 15) return c;
    c.push_back(index());
    if (q < 30) return c;
    c.push_back(index());
    if (q < 55) return c;
    c.push_back(unit());
    if (q > 97) c.push_back("extra");
    return c;
  }

  std::vector<std::string> bitop() {
    const int p = below(100);
    std::string op = p < 25   ? "AND"
                     : p < 50 ? "OR"
                     : p < 72 ? "XOR"
                     : p < 95 ? "NOT"
                              : one_of<std::string>({"nand", "an", "ORR"});
    if (below(4) == 0) op[0] = static_cast<char>(op[0] - 'A' + 'a');
    std::vector<std::string> c = {"BITOP", op, key()};
    const int n = op == "NOT" && below(10) != 0 ? 1 : 1 + below(4);
    for (int i = 0; i < n; ++i) c.push_back(key());
    return c;
  }

  std::string field_type() {
    const int p = below(100);
    if (p < 6)
      return one_of<std::string>({"u64", "i65", "i0", "u0", "x8", "I8", "i", "i08", "u-1"});
    const bool is_signed = below(2) == 0;
    const int max_bits = is_signed ? 64 : 63;
    const int bits =
        below(3) == 0 ? one_of<int>({1, 8, 16, 32, 63, max_bits}) : 1 + below(max_bits);
    return (is_signed ? "i" : "u") + std::to_string(bits);
  }

  std::string field_offset() {
    const int p = below(100);
    if (p < 70) return std::to_string(range(0, 200));
    if (p < 85) return "#" + std::to_string(range(0, 24));
    if (p < 95) return std::to_string(range(0, 3000));
    return one_of<std::string>({"-1", "#-1", "#", "x", "4294967296", "#288230376151711744"});
  }

  std::string field_value() {
    const int p = below(100);
    if (p < 45) return std::to_string(range(-300, 300));
    if (p < 65) return std::to_string(static_cast<std::int64_t>(rng_()));
    if (p < 85) {
      const int shift = below(64);
      const std::int64_t v = static_cast<std::int64_t>(std::uint64_t{1} << shift);
      return std::to_string(v + range(-1, 1) * (shift == 63 ? 0 : 1));
    }
    if (p < 97) {
      return one_of<std::string>({"9223372036854775807", "-9223372036854775808", "-1", "0",
                                  "-9223372036854775807", "18446744073709551615"});
    }
    return one_of<std::string>({"x", "1.5", ""});
  }

  std::vector<std::string> bitfield(bool read_only) {
    std::vector<std::string> c = {read_only ? "BITFIELD_RO" : "BITFIELD", key()};
    const int n = below(5);
    for (int i = 0; i < n; ++i) {
      const int p = below(100);
      if (p < (read_only ? 80 : 40)) {
        c.insert(c.end(), {below(5) == 0 ? "get" : "GET", field_type(), field_offset()});
      } else if (p < (read_only ? 85 : 65)) {
        c.insert(c.end(), {"SET", field_type(), field_offset(), field_value()});
      } else if (p < (read_only ? 90 : 85)) {
        c.insert(c.end(), {"INCRBY", field_type(), field_offset(), field_value()});
      } else if (p < 98) {
        c.insert(c.end(),
                 {"OVERFLOW", one_of<std::string>({"WRAP", "SAT", "FAIL", "sat", "fail", "wrap"})});
      } else {
        c.push_back(one_of<std::string>({"OVERFLOW", "GET", "FOO", "SET"}));  // cut short
        if (below(2) == 0) c.push_back("i8");
      }
    }
    return c;
  }

  std::vector<std::string> lcs() {
    std::vector<std::string> c = {"LCS", key(), key()};
    const int n = below(4);
    for (int i = 0; i < n; ++i) {
      const int p = below(100);
      if (p < 30) {
        c.push_back(below(2) == 0 ? "IDX" : "idx");
      } else if (p < 45) {
        c.push_back("LEN");
      } else if (p < 70) {
        c.push_back("WITHMATCHLEN");
      } else if (p < 95) {
        c.push_back("MINMATCHLEN");
        c.push_back(below(10) == 0 ? "x" : std::to_string(range(-2, 6)));
      } else {
        c.push_back(one_of<std::string>({"FOO", "MINMATCHLEN"}));
      }
    }
    return c;
  }

  std::mt19937_64 rng_;
  bool restore_hash_ = false;
};

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoull(v, nullptr, 10) : fallback;
}

std::string join(const std::vector<std::string>& args) {
  Reply r;
  r.type = REDIS_REPLY_ARRAY;
  for (const auto& a : args) {
    Reply e;
    e.type = REDIS_REPLY_STRING;
    e.str = a;
    r.elements.push_back(e);
  }
  return show(r);
}

}  // namespace

TEST_SUITE("server") {
  // Both servers get the same commands in the same order from the same seed, in pipelined
  // batches; the keyspaces therefore stay equal, and every reply must be byte for byte the same
  // (a final GET of every key checks the values the replies did not show).
  TEST_CASE("random bitmap and LCS calls answer exactly as redis-server does") {
    const std::string redis = find_redis_server();
    if (redis.empty()) {
      MESSAGE("redis-server is not on PATH: comparison skipped");
      return;
    }
    RedisProcess oracle;
    REQUIRE(oracle.running());
    REQUIRE(server().running());
    Client r(oracle.port()), k(server().port());
    REQUIRE(r.ok());
    REQUIRE(k.ok());
    for (Client* c : {&r, &k}) {
      c->cmd({"FLUSHALL"});
      c->cmd({"HSET", "bm:h", "f", "v"});
    }
    const std::uint64_t seed = env_u64("KVLAB_BITS_SEED", 20261204);
    const std::uint64_t calls = env_u64("KVLAB_BITS_CALLS", 20000);
    Generator gen(seed);
    std::vector<std::vector<std::string>> batch;
    int mismatches = 0;
    std::uint64_t errors = 0;
    auto run_batch = [&] {
      for (const auto& cmd : batch) {
        r.append(cmd);
        k.append(cmd);
      }
      for (const auto& cmd : batch) {
        const Reply a = r.get_reply(), b = k.get_reply();
        if (a.is_error()) ++errors;
        const std::string sa = show(a), sb = show(b);
        if (sa != sb && ++mismatches <= 5) {
          FAIL_CHECK("seed " << seed << ": " << join(cmd) << "\n  redis-server: " << sa
                             << "\n  kvlab-server: " << sb);
        }
      }
      batch.clear();
    };
    for (std::uint64_t i = 0; i < calls; ++i) {
      batch.push_back(gen.next());
      // A write is followed by a GET of what it wrote, so that the first diverging write is
      // reported itself, not some later read of its result.
      const std::string& name = batch.back()[0];
      if (name == "BITOP") {
        batch.push_back({"GET", batch.back()[2]});
      } else if (name == "SETBIT" || name == "BITFIELD") {
        batch.push_back({"GET", batch.back()[1]});
      }
      if (batch.size() >= 64) run_batch();
    }
    for (const char* key : {"bm:0", "bm:1", "bm:2", "bm:3", "bm:none"}) {
      batch.push_back({"GET", key});
    }
    run_batch();
    CHECK(mismatches == 0);
    MESSAGE(calls << " random calls, " << errors << " of them errors, " << mismatches
                  << " mismatches (seed " << seed << ")");
  }
}
