// DUMP and RESTORE against a real kvlab-server (2 workers): Redis's RDB value encoding with its
// RDB version and CRC64 (server/data/rdb.hpp).
//
// - kvlab -> kvlab round trips for every type, with TTLs and RESTORE's options and errors, and
//   LZF-compressed strings at the format's limits (window, match length, runs).
// - With redis-server on PATH (a child started here, DEBUG enabled so that plain quicklist nodes
//   can be forced, and sanitize-dump-payload yes so that it checks kvlab's payloads in depth):
//   Redis -> kvlab and kvlab -> Redis round trips for every type and encoding Redis 7.0 writes
//   (listpack, intset, hashtable, skiplist, quicklist with listpack and plain nodes, integer and
//   LZF strings, streams with deleted entries and consumer groups), compared by value (a stream
//   by XINFO STREAM FULL).
// - Stream payloads with inconsistent nodes, counts or groups, built here, are refused.
// - The encodings older Redis versions wrote (LIST, ZIPLIST, QUICKLIST, ZIPMAP, ZSET with text
//   doubles, ziplist hashes and sorted sets) built here byte by byte; when Redis runs, the same
//   payloads RESTORE into it with the same value (which checks the builders).
// - Corrupt payloads: every flipped byte, every truncation and a few thousand random mutations
//   (bounded in time), with the CRC recomputed so that the value decoder sees them, answer OK or
//   Redis's errors and never crash the server.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::RedisProcess;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}
Client& client() {
  static Client c(server().port());
  return c;
}
RedisProcess& redis() {
  static RedisProcess r({"--enable-debug-command", "yes", "--sanitize-dump-payload", "yes"});
  return r;
}
Client& redis_client() {
  static Client c(redis().port());
  return c;
}

constexpr std::string_view kBadPayload = "ERR DUMP payload version or checksum are wrong";
constexpr std::string_view kBadFormat = "ERR Bad data format";

using W = std::vector<std::string>;

// ---- the payload format, written independently of server/data/rdb.cpp ------------------------------

// Bit by bit, straight from the definition: reflected Jones polynomial, initial value 0.
std::uint64_t crc64(std::string_view s) {
  std::uint64_t crc = 0;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x95AC9329AC4BC9B5ULL : crc >> 1;
  }
  return crc;
}

std::string le(std::uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}
std::string be(std::uint64_t v, int n) {
  std::string s;
  for (int i = n - 1; i >= 0; --i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

// body (type byte and value) + RDB version 10 + CRC64.
std::string seal(std::string body, int version = 10) {
  body += le(static_cast<std::uint64_t>(version), 2);
  return body + le(crc64(body), 8);
}
// The payload's body back, and a payload with a new body and a correct footer.
std::string body_of(const std::string& payload) {
  return payload.substr(0, payload.size() - 10);
}

std::string rdb_len(std::uint64_t n) {
  if (n < 64) return std::string(1, static_cast<char>(n));
  if (n < 16384) return std::string{static_cast<char>(0x40 | (n >> 8)), static_cast<char>(n)};
  return "\x80" + be(n, 4);
}
std::string rdb_str(std::string_view s) {
  return rdb_len(s.size()) + std::string(s);
}

// A ziplist of string and integer entries (an entry that parses as an int64 is stored as one).
std::string ziplist(const W& items) {
  std::string entries;
  std::size_t prev = 0, last = 10;
  for (const std::string& it : items) {
    std::string e = prev < 254 ? std::string(1, static_cast<char>(prev)) : "\xFE" + le(prev, 4);
    char* end = nullptr;
    const long long v = std::strtoll(it.c_str(), &end, 10);
    if (!it.empty() && end == it.c_str() + it.size() && std::to_string(v) == it) {
      if (v >= 0 && v <= 12) {
        e.push_back(static_cast<char>(0xF1 + v));
      } else if (v >= -128 && v <= 127) {
        e += "\xFE" + le(static_cast<std::uint64_t>(v), 1);
      } else if (v >= -32768 && v <= 32767) {
        e += "\xC0" + le(static_cast<std::uint64_t>(v), 2);
      } else if (v >= -(1 << 23) && v < (1 << 23)) {
        e += "\xF0" + le(static_cast<std::uint64_t>(v), 3);
      } else if (v >= INT32_MIN && v <= INT32_MAX) {
        e += "\xD0" + le(static_cast<std::uint64_t>(v), 4);
      } else {
        e += "\xE0" + le(static_cast<std::uint64_t>(v), 8);
      }
    } else if (it.size() < 64) {
      e += static_cast<char>(it.size()) + it;
    } else if (it.size() < 16384) {
      e += std::string{static_cast<char>(0x40 | (it.size() >> 8)), static_cast<char>(it.size())} +
           it;
    } else {
      e += "\x80" + be(it.size(), 4) + it;
    }
    last = 10 + entries.size();
    entries += e;
    prev = e.size();
  }
  const std::size_t total = 10 + entries.size() + 1;
  return le(total, 4) + le(last, 4) + le(items.size(), 2) + entries + "\xFF";
}

// A listpack; entries that parse as integers use the integer encodings.
std::string listpack(const W& items) {
  std::string entries;
  for (const std::string& it : items) {
    std::string e;
    char* end = nullptr;
    const long long v = std::strtoll(it.c_str(), &end, 10);
    if (!it.empty() && end == it.c_str() + it.size() && std::to_string(v) == it) {
      if (v >= 0 && v <= 127) {
        e.push_back(static_cast<char>(v));
      } else if (v >= -4096 && v <= 4095) {
        const std::uint64_t u = static_cast<std::uint64_t>(v) & 0x1FFF;
        e = {static_cast<char>(0xC0 | (u >> 8)), static_cast<char>(u)};
      } else if (v >= -32768 && v <= 32767) {
        e = "\xF1" + le(static_cast<std::uint64_t>(v), 2);
      } else if (v >= -(1 << 23) && v < (1 << 23)) {
        e = "\xF2" + le(static_cast<std::uint64_t>(v), 3);
      } else if (v >= INT32_MIN && v <= INT32_MAX) {
        e = "\xF3" + le(static_cast<std::uint64_t>(v), 4);
      } else {
        e = "\xF4" + le(static_cast<std::uint64_t>(v), 8);
      }
    } else if (it.size() < 64) {
      e = static_cast<char>(0x80 | it.size()) + it;
    } else if (it.size() < 4096) {
      e = std::string{static_cast<char>(0xE0 | (it.size() >> 8)), static_cast<char>(it.size())} +
          it;
    } else {
      e = "\xF0" + le(it.size(), 4) + it;
    }
    // The back-length, written so that it reads right to left.
    const std::size_t l = e.size();
    std::string back;
    if (l < 128) {
      back = std::string(1, static_cast<char>(l));
    } else if (l < 16383) {  // Redis's threshold: 16383 itself takes three bytes
      back = {static_cast<char>(l >> 7), static_cast<char>((l & 127) | 128)};
    } else {
      back = {static_cast<char>(l >> 14), static_cast<char>(((l >> 7) & 127) | 128),
              static_cast<char>((l & 127) | 128)};
    }
    entries += e + back;
  }
  return le(6 + entries.size() + 1, 4) + le(items.size(), 2) + entries + "\xFF";
}

// A zipmap (hashes before Redis 2.6); `free` spare bytes after each value.
std::string zipmap(const std::vector<std::pair<std::string, std::string>>& kv, int free = 0) {
  std::string s(1, static_cast<char>(kv.size()));
  for (const auto& [k, v] : kv) {
    s += static_cast<char>(k.size()) + k;
    s += static_cast<char>(v.size());
    s += static_cast<char>(free);
    s += v + std::string(static_cast<std::size_t>(free), 'X');
  }
  return s + "\xFF";
}

// ---- values, read back as comparable text -------------------------------------------------------

// A reply as text, nested arrays in brackets.
std::string flat(const Reply& r) {
  switch (r.type) {
    case REDIS_REPLY_ARRAY: {
      std::string s = "[";
      for (const Reply& e : r.elements) s += flat(e) + ",";
      return s + "]";
    }
    case REDIS_REPLY_INTEGER:
      return ":" + std::to_string(r.integer);
    case REDIS_REPLY_NIL:
      return "nil";
    default:
      return std::to_string(r.str.size()) + "|" + r.str;
  }
}

// TYPE plus the value, order-independent where Redis's order is unspecified.
std::string value_of(Client& c, const std::string& key) {
  const std::string t = c.cmd({"TYPE", key}).str;
  std::string out = t + ":";
  auto add_sorted = [&](W v) {
    std::sort(v.begin(), v.end());
    for (const auto& s : v) out += std::to_string(s.size()) + "|" + s + ",";
  };
  W items;
  if (t == "string") {
    out += c.cmd({"GET", key}).str;
  } else if (t == "list") {
    for (const auto& e : c.cmd({"LRANGE", key, "0", "-1"}).elements) out += e.str + ",";
  } else if (t == "set") {
    for (const auto& e : c.cmd({"SMEMBERS", key}).elements) items.push_back(e.str);
    add_sorted(items);
  } else if (t == "hash") {
    const Reply r = c.cmd({"HGETALL", key});
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2)
      items.push_back(r.elements[i].str + "=" + r.elements[i + 1].str);
    add_sorted(items);
  } else if (t == "zset") {
    for (const auto& e : c.cmd({"ZRANGE", key, "0", "-1", "WITHSCORES"}).elements)
      out += e.str + ",";
  } else if (t == "stream") {
    // Entries, metadata, node counts, groups with their PELs and consumers (times included).
    out += flat(c.cmd({"XINFO", "STREAM", key, "FULL"}));
  }
  return out;
}

std::string dump(Client& c, const std::string& key) {
  const Reply r = c.cmd({"DUMP", key});
  REQUIRE(r.type == REDIS_REPLY_STRING);
  return r.str;
}

// A string with long repeats, which Redis stores LZF-compressed.
std::string compressible(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  static const char* kWords[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "};
  std::string s;
  while (s.size() < n) s += kWords[rng() % 6];
  s.resize(n);
  return s;
}
std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& ch : s) ch = static_cast<char>(rng());
  return s;
}

// Fills `c` with one key per type and encoding; returns the keys.
W populate(Client& c) {
  c("FLUSHALL");
  W keys;
  auto run = [&](std::vector<std::string> args) {
    const Reply r = c.cmd(args);
    REQUIRE_MESSAGE(r.type != REDIS_REPLY_ERROR, r.str);
  };
  auto key = [&](const std::string& k) {
    keys.push_back(k);
    return k;
  };
  // Strings: raw, integers of each width (and ones that are not canonical integers), binary,
  // 1 MB compressible (LZF) and 1 MB random (raw), an HLL.
  run({"SET", key("s:raw"), "hello world"});
  run({"SET", key("s:empty"), ""});
  for (const char* v : {"0", "-1", "127", "-128", "128", "32767", "-32768", "32768", "2147483647",
                        "-2147483648", "2147483648", "9223372036854775807", "-9223372036854775808",
                        "007", "+5", "-0", "1e3", "12345678901"}) {
    run({"SET", key(std::string("s:int:") + v), v});
  }
  run({"SET", key("s:binary"), std::string("a\0b\r\n\xff\x80", 7)});
  run({"SET", key("s:lzf"), compressible(1 << 20, 1)});
  run({"SET", key("s:lzf-small"), compressible(100, 2)});
  run({"SET", key("s:random"), random_bytes(1 << 20, 3)});
  run({"PFADD", key("s:hll"), "a", "b", "c"});
  // Lists: small (one listpack node), large (many nodes), integers, long elements.
  run({"RPUSH", key("l:small"), "a", "1", "-7", "4096", "99999999999", std::string("\0x", 2)});
  std::vector<std::string> big = {"RPUSH", key("l:big")};
  for (int i = 0; i < 3000; ++i)
    big.push_back(i % 3 ? std::to_string(i * 7919) : "e" + std::to_string(i));
  run(big);
  // Listpack entries around the length-encoding and back-length thresholds (an entry of 16383
  // bytes takes a three-byte back-length).
  std::vector<std::string> edge = {"RPUSH", key("l:edge")};
  for (std::size_t n : {63, 64, 4095, 4096, 16378, 16379, 16377})
    edge.push_back(std::string(n, 'e'));
  run(edge);
  run({"HSET", key("h:edge"), std::string(64, 'f'), std::string(64, 'v'), "-4096", "4095", "-4097",
       "4096", "-32769", "8388607", "-8388609", "2147483648"});
  run({"ZADD", key("z:edge"), "4503599627370495", "a", "-4503599627370494", "b", "1e15", "c", "0.5",
       "d", "4503599627370496", "e"});
  run({"RPUSH", key("l:long"), std::string(5000, 'q'), compressible(70000, 4), "x"});
  // Sets: intset, listpack-sized strings, hashtable, large intset.
  run({"SADD", key("set:int"), "1", "-5", "100000", "9223372036854775807", "-9223372036854775808"});
  run({"SADD", key("set:str"), "a", "b", std::string("\0\1", 2)});
  std::vector<std::string> bigset = {"SADD", key("set:big")};
  for (int i = 0; i < 700; ++i) bigset.push_back("m" + std::to_string(i));
  run(bigset);
  std::vector<std::string> bigint = {"SADD", key("set:bigint")};
  for (int i = 0; i < 700; ++i) bigint.push_back(std::to_string(i * 1000003LL - 300000000));
  run(bigint);
  // Hashes: listpack, hashtable (many fields, long values).
  run({"HSET", key("h:small"), "f", "v", "n", "12", "neg", "-3", "empty", ""});
  std::vector<std::string> bighash = {"HSET", key("h:big")};
  for (int i = 0; i < 300; ++i) {
    bighash.push_back("field" + std::to_string(i));
    bighash.push_back(i % 2 ? std::to_string(i) : compressible(100 + i, static_cast<unsigned>(i)));
  }
  run(bighash);
  run({"HSET", key("h:longvalue"), "f", std::string(200, 'v')});
  // Sorted sets: listpack, skiplist, special scores.
  run({"ZADD", key("z:small"), "1", "a", "2.5", "b", "-3", "c", "1e300", "d"});
  run({"ZADD", key("z:special"), "inf", "pinf", "-inf", "ninf", "0", "zero", "-0", "negzero", "0.1",
       "tenth", "-1e-310", "subnormal"});
  std::vector<std::string> bigz = {"ZADD", key("z:big")};
  for (int i = 0; i < 400; ++i) {
    bigz.push_back(std::to_string(i * 0.37 - 50));
    bigz.push_back("member" + std::to_string(i));
  }
  run(bigz);
  run({"ZADD", key("z:skiplist-special"), "-0", std::string(100, 'm'), "inf", "p", "-inf", "n"});
  // Streams: several nodes (100 entries or 4 KB each), entries with and without the master's
  // fields, integer and long values, deleted entries (Redis keeps them flagged in its nodes),
  // a group with a PEL over two consumers and one without pending entries, an emptied stream.
  key("x:big");
  for (int i = 0; i < 260; ++i) {
    const std::string id = std::to_string(1000 + i / 3) + "-" + std::to_string(i % 3);
    if (i % 5 == 4) {
      run({"XADD", "x:big", id, "other", std::to_string(i * 7919), "n", "-" + std::to_string(i)});
    } else {
      run({"XADD", "x:big", id, "f", std::string(static_cast<std::size_t>(i % 40), 'v'), "n",
           std::to_string(i)});
    }
  }
  run({"XDEL", "x:big", "1000-0", "1010-1", "1050-0", "1085-2"});
  run({"XGROUP", "CREATE", "x:big", "g1", "1005-0"});
  run({"XGROUP", "CREATE", "x:big", "g2", "$"});
  run({"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "x:big", ">"});
  run({"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "x:big", ">"});
  run({"XACK", "x:big", "g1", "1006-0"});
  run({"XGROUP", "CREATECONSUMER", "x:big", "g2", "carol"});
  run({"XADD", key("x:emptied"), "7-7", "k", "v"});
  run({"XTRIM", "x:emptied", "MAXLEN", "0"});
  run({"XADD", key("x:small"), "1-1", "a", "1"});
  run({"XADD", "x:small", "MAXLEN", "5", "2-1", "a", std::string(70, 'z')});
  return keys;
}

void restore(Client& c, const std::string& key, const std::string& payload,
             const std::string& ttl = "0") {
  const Reply r = c.cmd({"RESTORE", key, ttl, payload, "REPLACE"});
  CHECK_MESSAGE(r.is_status("OK"), key, " -> ", r.str);
}

std::string hexs(const std::string& b) {
  std::string hex;
  for (unsigned char ch : b) {
    char t[4];
    std::snprintf(t, 4, "%02x", ch);
    hex += t;
  }
  return hex;
}
bool ok_or_known_error(const Reply& r) {
  return r.is_status("OK") || (r.is_error() && (r.str == kBadFormat || r.str == kBadPayload));
}

}  // namespace

TEST_SUITE("dump and restore") {
  TEST_CASE("the server starts") {
    REQUIRE(server().running());
    REQUIRE(client().ok());
    CHECK(crc64("123456789") == 0xe9c6d914c4b8d9caULL);  // the test's own CRC is Redis's
  }

  TEST_CASE("DUMP of a missing key is nil and DUMP/RESTORE keep every type's value") {
    Client& c = client();
    CHECK(c("DUMP nosuchkey").is_nil());
    const W keys = populate(c);
    for (const std::string& k : keys) {
      const std::string before = value_of(c, k);
      const std::string payload = dump(c, k);
      restore(c, k + ":copy", payload);
      CHECK_MESSAGE(value_of(c, k + ":copy") == before, k);
      CHECK(c.cmd({"TTL", k + ":copy"}).integer == -1);
    }
    // A large list and set need 32-bit lengths.
    std::vector<std::string> args = {"RPUSH", "hugelist"};
    for (int i = 0; i < 20000; ++i) args.push_back(std::to_string(i));
    c.cmd(args);
    restore(c, "hugelist2", dump(c, "hugelist"));
    CHECK(value_of(c, "hugelist2") == value_of(c, "hugelist"));
  }

  TEST_CASE("LZF-compressed strings round-trip at the format's limits") {
    Client& c = client();
    c("FLUSHALL");
    // Runs (overlapping back-references), matches longer than 264, repeats at distances around
    // the 8192-byte window, long literal runs, and a mix.
    // A repeat 8193 bytes back is out of LZF's reach: random units of that period stay raw.
    std::vector<std::pair<std::string, bool>> values = {{std::string(100000, 'a'), true},
                                                        {std::string(21, 'b'), true}};
    for (std::size_t period : {8190, 8191, 8192, 8193, 3, 264, 265}) {
      const std::string unit = random_bytes(period, static_cast<unsigned>(period));
      std::string v;
      while (v.size() < 40000) v += unit;
      values.emplace_back(v, period <= 8192);
    }
    std::string mixed;
    for (unsigned i = 0; i < 200; ++i) mixed += random_bytes(i % 40, i) + std::string(i % 300, 'z');
    values.emplace_back(mixed, true);
    for (std::size_t i = 0; i < values.size(); ++i) {
      const auto& [value, compressible] = values[i];
      const std::string k = "lzf" + std::to_string(i);
      c.cmd({"SET", k, value});
      const std::string payload = dump(c, k);
      CHECK_MESSAGE((static_cast<unsigned char>(payload[1]) == 0xC3) == compressible, "value ", i);
      if (compressible && value.size() > 1000) CHECK(payload.size() < value.size() / 2);
      restore(c, k + ":copy", payload);
      CHECK_MESSAGE(c.cmd({"GET", k + ":copy"}).str == value, "value ", i);
      if (redis().running()) {
        restore(redis_client(), k, payload);
        CHECK_MESSAGE(redis_client().cmd({"GET", k}).str == value, "redis: value ", i);
      }
    }
    // Random bytes do not compress: written raw.
    c.cmd({"SET", "random", random_bytes(5000, 7)});
    CHECK(static_cast<unsigned char>(dump(c, "random")[1]) != 0xC3);
  }

  TEST_CASE("RESTORE answers Redis's errors in Redis's order") {
    Client& c = client();
    c("FLUSHALL");
    c("SET a 1");
    const std::string good = dump(c, "a");
    // Options are parsed first, then BUSYKEY, then the TTL, then the payload.
    check_error(c.cmd({"RESTORE", "a", "0", good}), "BUSYKEY Target key name already exists.");
    check_error(c.cmd({"RESTORE", "a", "x", good, "FOO"}), "ERR syntax error");
    check_error(c.cmd({"RESTORE", "a", "-1", "junk"}), "BUSYKEY Target key name already exists.");
    check_error(c.cmd({"RESTORE", "b", "-1", "junk"}), "ERR Invalid TTL value, must be >= 0");
    check_error(c.cmd({"RESTORE", "b", "abc", "junk"}),
                "ERR value is not an integer or out of range");
    check_error(c.cmd({"RESTORE", "b", "0", good, "IDLETIME", "-1"}),
                "ERR Invalid IDLETIME value, must be >= 0");
    check_error(c.cmd({"RESTORE", "b", "0", good, "IDLETIME", "x"}),
                "ERR value is not an integer or out of range");
    check_error(c.cmd({"RESTORE", "b", "0", good, "FREQ", "256"}),
                "ERR Invalid FREQ value, must be >= 0 and <= 255");
    check_error(c.cmd({"RESTORE", "b", "0", good, "FREQ", "-1"}),
                "ERR Invalid FREQ value, must be >= 0 and <= 255");
    check_error(c.cmd({"RESTORE", "b", "0", good, "IDLETIME", "1", "FREQ", "2"}),
                "ERR syntax error");
    check_error(c.cmd({"RESTORE", "b", "0", good, "FREQ", "2", "IDLETIME", "1"}),
                "ERR syntax error");
    check_error(c.cmd({"RESTORE", "b", "0", good, "FREQ"}), "ERR syntax error");
    check_error(c.cmd({"RESTORE", "b", "0", "x"}), kBadPayload);
    check_error(c.cmd({"RESTORE", "b", "0", ""}), kBadPayload);
    check_error(c("RESTORE b 0"), "ERR wrong number of arguments for 'restore' command");
    // Version 11 (Redis 7.2) is newer than kvlab loads; older versions are fine.
    check_error(c.cmd({"RESTORE", "b", "0", seal(body_of(good), 11)}), kBadPayload);
    CHECK(c.cmd({"RESTORE", "b", "0", seal(body_of(good), 6)}).is_status("OK"));
    std::string flipped = good;
    flipped[good.size() - 1] ^= 1;
    check_error(c.cmd({"RESTORE", "c", "0", flipped}), kBadPayload);
    // Well sealed but not a value: a truncated stream, a module, trailing bytes, empty keys.
    check_error(c.cmd({"RESTORE", "c", "0", seal("\x0F")}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal(std::string("\x13\x00", 2))}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal(std::string("\x07\x01", 2))}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal(body_of(good) + "x")}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal(std::string("\x01\x00", 2))}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal(std::string("\x02\x00", 2))}), kBadFormat);
    // Duplicates are corrupt: a set member, a hash field, a sorted-set member.
    check_error(c.cmd({"RESTORE", "c", "0", seal("\x02\x02" + rdb_str("a") + rdb_str("a"))}),
                kBadFormat);
    check_error(
        c.cmd({"RESTORE", "c", "0",
               seal("\x04\x02" + rdb_str("f") + rdb_str("1") + rdb_str("f") + rdb_str("2"))}),
        kBadFormat);
    check_error(
        c.cmd({"RESTORE", "c", "0", seal("\x10" + rdb_str(listpack({"f", "1", "f", "2"})))}),
        kBadFormat);
    // A NaN score, an odd listpack hash.
    check_error(c.cmd({"RESTORE", "c", "0", seal("\x03\x01" + rdb_str("m") + "\xFD")}), kBadFormat);
    check_error(c.cmd({"RESTORE", "c", "0", seal("\x10" + rdb_str(listpack({"f", "1", "g"})))}),
                kBadFormat);
    // An LZF string that claims more than it can expand to.
    check_error(c.cmd({"RESTORE", "c", "0",
                       seal(std::string("\x00\xC3\x02\x80\x00\x01\x00\x00\x00x", 10))}),
                kBadFormat);
    CHECK(c("EXISTS c").integer == 0);
    CHECK(c("PING").is_status("PONG"));
  }

  TEST_CASE("RESTORE with TTL, ABSTTL, REPLACE, IDLETIME and FREQ") {
    Client& c = client();
    c("FLUSHALL");
    c("RPUSH l a b");
    const std::string payload = dump(c, "l");
    CHECK(c.cmd({"RESTORE", "t", "5000", payload}).is_status("OK"));
    const long long pttl = c("PTTL t").integer;
    CHECK(pttl > 4000);
    CHECK(pttl <= 5000);
    const long long at =
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count()) +
        100000;
    CHECK(c.cmd({"RESTORE", "abs", std::to_string(at), payload, "ABSTTL"}).is_status("OK"));
    CHECK(c("PEXPIRETIME abs").integer == at);
    // An absolute time in the past: OK, and the key is not created (or deleted with REPLACE).
    CHECK(c.cmd({"RESTORE", "gone", "1", payload, "ABSTTL"}).is_status("OK"));
    CHECK(c("EXISTS gone").integer == 0);
    CHECK(c.cmd({"RESTORE", "abs", "1", payload, "ABSTTL", "REPLACE"}).is_status("OK"));
    CHECK(c("EXISTS abs").integer == 0);
    // A relative TTL so large that Redis's addition wraps: already expired as well.
    CHECK(c.cmd({"RESTORE", "wrap", "9223372036854775807", payload}).is_status("OK"));
    CHECK(c("EXISTS wrap").integer == 0);
    // REPLACE over another type; the TTL of the old key does not survive.
    c("SET x y EX 100");
    CHECK(c.cmd({"RESTORE", "x", "0", payload, "REPLACE", "IDLETIME", "10"}).is_status("OK"));
    CHECK(c("TTL x").integer == -1);
    CHECK(c("LRANGE x 0 -1").elements.size() == 2);
    CHECK(
        c.cmd({"RESTORE", "y", "0", payload, "freq", "255", "replace", "absttl"}).is_status("OK"));
    CHECK(c.cmd({"RESTORE-ASKING", "z", "0", payload}).is_status("OK"));
    CHECK(c("LLEN z").integer == 2);
    // The restored list is an ordinary list.
    CHECK(c("LPUSH y c").integer == 3);
  }

  TEST_CASE("payloads in the encodings older Redis versions wrote restore with their values") {
    Client& c = client();
    c("FLUSHALL");
    struct Case {
      std::string key, body, want;
    };
    const W list_items = {"a",
                          "12",
                          "-200",
                          "70000",
                          "-9000000",
                          "5000000000",
                          std::string(70, 'L'),
                          std::string(300, 'M'),
                          "0",
                          ""};
    std::string want_list = "list:";
    for (const auto& s : list_items) want_list += s + ",";
    std::string ql = "\x0E\x02" + rdb_str(ziplist({list_items.begin(), list_items.begin() + 4})) +
                     rdb_str(ziplist({list_items.begin() + 4, list_items.end()}));
    std::string ql2 = std::string("\x12\x03", 2) + "\x02" +
                      rdb_str(listpack({list_items.begin(), list_items.begin() + 4})) + "\x01" +
                      rdb_str(list_items[4]) + "\x02" +
                      rdb_str(listpack({list_items.begin() + 5, list_items.end()}));
    std::string plain_list = "\x01" + rdb_len(list_items.size());
    for (const auto& s : list_items) plain_list += rdb_str(s);
    const std::vector<Case> cases = {
        {"list:plain", plain_list, want_list},
        {"list:ziplist", "\x0A" + rdb_str(ziplist(list_items)), want_list},
        {"list:quicklist", ql, want_list},
        {"list:quicklist2", ql2, want_list},
        {"list:quicklist2-empty-node",
         std::string("\x12\x02\x02", 3) + rdb_str(listpack({})) + "\x02" + rdb_str(listpack({"x"})),
         "list:x,"},
        {"set:intset16",
         "\x0B" + rdb_str(le(2, 4) + le(3, 4) + le(static_cast<std::uint64_t>(-5), 2) + le(7, 2) +
                          le(300, 2)),
         "set:2|-5,3|300,1|7,"},
        {"set:intset64", "\x0B" + rdb_str(le(8, 4) + le(2, 4) + le(1ULL << 63, 8) + le(5, 8)),
         "set:20|-9223372036854775808,1|5,"},
        {"hash:zipmap", "\x09" + rdb_str(zipmap({{"f", "v"}, {"num", "12"}, {"e", ""}}, 2)),
         "hash:2|e=,3|f=v,6|num=12,"},
        {"hash:ziplist",
         "\x0D" + rdb_str(ziplist({"f", "v", "n", "-5", "big", std::string(100, 'b')})),
         "hash:" + std::to_string(104) + "|big=" + std::string(100, 'b') + ",3|f=v,4|n=-5,"},
        {"hash:listpack", "\x10" + rdb_str(listpack({"f", "v", "n", "4095"})),
         "hash:3|f=v,6|n=4095,"},
        {"zset:text-doubles",
         "\x03\x04" + rdb_str("a") +
             "\x03"
             "1.5" +
             rdb_str("b") + "\xFE" + rdb_str("c") + "\xFF" + rdb_str("d") +
             "\x02"
             "-2",
         "zset:c,-inf,d,-2,a,1.5,b,inf,"},
        // Packed sorted sets in score order: Redis keeps the blob as it is and trusts its order.
        {"zset:ziplist", "\x0C" + rdb_str(ziplist({"c", "-7", "b", "1.25", "a", "3"})),
         "zset:c,-7,b,1.25,a,3,"},
        {"zset:listpack", "\x11" + rdb_str(listpack({"c", "-1e10", "a", "3", "b", "inf"})),
         "zset:c,-10000000000,a,3,b,inf,"},
        {"string:int8", std::string("\x00\xC0\x85", 3), "string:-123"},
        {"string:int16", std::string("\x00\xC1\x00\x80", 4), "string:-32768"},
        {"string:int32", std::string("\x00\xC2\xFF\xFF\xFF\x7F", 6), "string:2147483647"},
        // LZF: "abcabcabcabc": literal "abc", then a back-reference of 9 bytes at distance 3.
        {"string:lzf",
         std::string("\x00\xC3\x07\x0C\x02"
                     "abc"
                     "\xE0\x00\x02",
                     11),
         "string:abcabcabcabc"},
    };
    for (const Case& t : cases) {
      const Reply r = c.cmd({"RESTORE", t.key, "0", seal(t.body)});
      CHECK_MESSAGE(r.is_status("OK"), t.key, " -> ", r.str);
      CHECK_MESSAGE(value_of(c, t.key) == t.want, t.key);
      // Round trip through kvlab's own DUMP.
      restore(c, t.key + ":again", dump(c, t.key));
      CHECK(value_of(c, t.key + ":again") == t.want);
      if (redis().running()) {  // Redis 7.0 reads the same payload as the same value
        Client& rc = redis_client();
        const Reply rr = rc.cmd({"RESTORE", t.key, "0", seal(t.body), "REPLACE"});
        CHECK_MESSAGE(rr.is_status("OK"), "redis: ", t.key, " -> ", rr.str);
        CHECK_MESSAGE(value_of(rc, t.key) == t.want, "redis: ", t.key);
      }
    }
  }

  TEST_CASE(
      "embedded blobs with a wrong length, count or order are refused, as deep sanitizing does") {
    Client& c = client();
    auto patch = [](std::string blob, std::size_t at, char v) {
      blob[at] = v;
      return blob;
    };
    const std::string zl = ziplist({"a", "b"});   // header 10; "a" at 10 (3 bytes); "b" at 13
    const std::string lp = listpack({"a", "b"});  // header 6; "a" at 6 (2 + backlen 1); "b" at 9
    const std::string is = le(2, 4) + le(2, 4) + le(5, 2) + le(7, 2);
    const W bad = {
        "\x0A" + rdb_str(patch(zl, 13, 4)),       // prevlen of "b" is not 3
        "\x0A" + rdb_str(patch(zl, 4, 10)),       // tail offset is not the last entry
        "\x0A" + rdb_str(patch(zl, 8, 3)),        // three entries claimed
        "\x0A" + rdb_str(patch(zl, 0, 14)),       // total bytes wrong
        "\x0A" + rdb_str(patch(zl, 11, '\xC1')),  // no such encoding
        "\x10" + rdb_str(patch(lp, 8, 3)),        // back-length of "a" is not 2
        "\x10" + rdb_str(patch(lp, 4, 3)),        // three elements claimed
        "\x10" + rdb_str(patch(lp, 6, '\xF5')),   // no such encoding
        "\x10" + rdb_str(patch(lp, 6, '\x83')),   // "a" runs past its entry
        "\x0B" + rdb_str(patch(is, 8, 9)),        // 9 before 7: not ascending
        "\x0B" + rdb_str(patch(is, 10, 5)),       // 5 twice
        "\x0B" + rdb_str(patch(is, 0, 3)),        // 3-byte integers do not exist
        "\x09" + rdb_str(patch(zipmap({{"f", "v"}, {"g", "w"}}), 0, 3)),  // three pairs claimed
        "\x09" + rdb_str(zipmap({{"f", "v"}}, 0) + "x"),   // bytes after the end marker
        std::string("\x12\x01\x03", 3) + rdb_str(lp),      // quicklist node container 3
        "\x11" + rdb_str(listpack({"a", "1", "a", "2"})),  // duplicate sorted-set member
        "\x11" + rdb_str(listpack({"a", "x1"})),           // a score that is not a number
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
      const Reply r = c.cmd({"RESTORE", "bad", "0", seal(bad[i]), "REPLACE"});
      CHECK_MESSAGE(r.str == kBadFormat, "case ", i);
    }
    // Redis 7.0 refuses them too when it sanitizes payloads in depth (its default only checks
    // blob headers; the test's Redis runs with sanitize-dump-payload yes). Not the score text:
    // Redis reads "x1" as 0.
    if (redis().running()) {
      Client& rc = redis_client();
      for (std::size_t i = 0; i + 1 < bad.size(); ++i) {
        const Reply r = rc.cmd({"RESTORE", "bad", "0", seal(bad[i]), "REPLACE"});
        CHECK_MESSAGE(r.str == kBadFormat, "redis: case ", i);
      }
    }
  }

  TEST_CASE("stream payloads with inconsistent nodes, counts or groups are refused") {
    Client& c = client();
    // RDB_TYPE_STREAM_LISTPACKS_2 built here: node keys (16-byte IDs) and listpacks, length,
    // last, first and max-deleted IDs, entries added, then the groups.
    auto id = [](std::uint64_t ms, std::uint64_t seq) { return be(ms, 8) + be(seq, 8); };
    using Node = std::pair<std::string, W>;
    auto stream = [&](const std::vector<Node>& nodes, std::uint64_t length,
                      const std::string& groups = std::string(1, '\0'), std::uint64_t last_ms = 5) {
      std::string b = "\x13" + rdb_len(nodes.size());
      for (const auto& [key, items] : nodes) b += rdb_str(key) + rdb_str(listpack(items));
      b += rdb_len(length) + rdb_len(last_ms) + rdb_len(0);  // last ID
      b += rdb_len(5) + rdb_len(0) + rdb_len(0) + rdb_len(0) + rdb_len(1);
      return b + groups;
    };
    // Master entry (1 live, 0 deleted, field "f", 0), then one entry: SAMEFIELDS, ID 5-0, "v", 4.
    const W entry = {"1", "0", "1", "f", "0", "2", "0", "0", "v", "4"};
    auto group = [&](const std::string& pel, const std::string& consumers) {
      return rdb_str("g") + rdb_len(5) + rdb_len(0) + rdb_len(1) + pel + consumers;
    };
    const std::string pel = rdb_len(1) + id(5, 0) + le(0, 8) + rdb_len(1);
    const std::string consumer = rdb_len(1) + rdb_str("c") + le(0, 8) + rdb_len(1) + id(5, 0);
    const std::string good = stream({{id(5, 0), entry}}, 1, "\x01" + group(pel, consumer));
    REQUIRE(c.cmd({"RESTORE", "good", "0", seal(good), "REPLACE"}).is_status("OK"));
    CHECK(flat(c("XPENDING good g")) == "[:1,3|5-0,3|5-0,[[1|c,1|1,],],]");
    auto with = [](W w, std::size_t at, const std::string& v) {
      w[at] = v;
      return w;
    };
    // Refused by Redis 7.0 with deep sanitizing too.
    const W both = {
        stream({{id(5, 0), with(entry, 9, "5")}}, 1),       // wrong element count
        stream({{id(5, 0), with(entry, 0, "2")}}, 1),       // master claims 2 live entries
        stream({{id(5, 0), with(entry, 5, "8")}}, 1),       // unknown entry flag
        stream({{id(5, 0), entry}, {id(5, 0), entry}}, 2),  // a node twice
        stream({{id(5, 0), {}}}, 0),                        // an empty listpack
        stream({{id(5, 0), entry}}, 1, "\x01" + group(rdb_len(0), consumer)),  // not in PEL
        stream({{id(5, 0), entry}}, 1, "\x01" + group(pel, rdb_len(0))),       // no consumer
        stream({{id(5, 0), entry}}, 1,
               "\x02" + group(rdb_len(0), rdb_len(0)) +
                   group(rdb_len(0), rdb_len(0))),                              // a group twice
        "\x13\x01" + rdb_str(std::string(15, 'k')) + rdb_str(listpack(entry)),  // short node key
    };
    // Accepted by Redis (the stream is then inconsistent), refused by kvlab, whose invariants
    // (server/data/stream.hpp) they would break.
    const W kvlab_only = {
        stream({{id(5, 0), entry}}, 2),                     // length is not the live count
        stream({{id(5, 0), entry}, {id(4, 0), entry}}, 2),  // nodes out of order
        stream({{id(5, 0), {"0", "1", "1", "f", "0", "3", "0", "0", "v", "4"}}}, 0),  // all deleted
        stream({{id(5, 0), entry}}, 1, std::string(1, '\0'), 4),  // last ID before an entry
    };
    for (std::size_t i = 0; i < both.size() + kvlab_only.size(); ++i) {
      const bool common = i < both.size();
      const std::string& b = common ? both[i] : kvlab_only[i - both.size()];
      CHECK_MESSAGE(c.cmd({"RESTORE", "bad", "0", seal(b), "REPLACE"}).str == kBadFormat, "case ",
                    i);
      if (common && redis().running()) {
        const Reply r = redis_client().cmd({"RESTORE", "bad", "0", seal(b), "REPLACE"});
        CHECK_MESSAGE(r.str == kBadFormat, "redis: case ", i);
      }
    }
    CHECK(c("EXISTS bad").integer == 0);
  }

  TEST_CASE("values move from Redis to kvlab and back for every type and encoding") {
    if (!redis().running()) {
      MESSAGE("redis-server not on PATH: skipped");
      return;
    }
    Client& rc = redis_client();
    REQUIRE(rc.ok());
    Client& c = client();
    c("FLUSHALL");
    // Elements of 1000 bytes or more go to plain quicklist nodes.
    CHECK(rc("DEBUG QUICKLIST-PACKED-THRESHOLD 1000").is_status("OK"));
    const W keys = populate(rc);
    std::map<int, int> types_seen;
    for (const std::string& k : keys) {
      const std::string want = value_of(rc, k);
      const std::string from_redis = dump(rc, k);
      ++types_seen[static_cast<unsigned char>(from_redis[0])];
      // 0x43 after the type byte: an LZF-compressed string.
      if (from_redis[0] == 0 && static_cast<unsigned char>(from_redis[1]) == 0xC3)
        ++types_seen[100];
      restore(c, k, from_redis);
      CHECK_MESSAGE(value_of(c, k) == want, k);
      const std::string from_kvlab = dump(c, k);
      restore(rc, k + ":back", from_kvlab);
      CHECK_MESSAGE(value_of(rc, k + ":back") == want, k);
      // kvlab picks the encoding Redis picked (listpack, intset...), so Redis restores kvlab's
      // payload with the encoding it gives its own.
      CHECK_MESSAGE(from_kvlab[0] == from_redis[0], k);
      restore(rc, k + ":self", from_redis);
      CHECK_MESSAGE(rc.cmd({"OBJECT", "ENCODING", k + ":back"}).str ==
                        rc.cmd({"OBJECT", "ENCODING", k + ":self"}).str,
                    k);
    }
    // An HLL is a string: Redis's sparse HLL restored into kvlab counts the same.
    CHECK(c("PFCOUNT s:hll").integer == 3);
    CHECK(c("PFADD s:hll d").integer == 1);
    restore(rc, "hll", dump(c, "s:hll"));
    CHECK(rc("PFCOUNT hll").integer == 4);
    // Every encoding Redis 7.0 writes was exercised: strings (raw, int, LZF), quicklist 2, intset,
    // set, listpack hash and zset, hash, ZSET_2, stream listpacks 2.
    for (int t : {0, 2, 4, 5, 11, 16, 17, 18, 19, 100})
      CHECK_MESSAGE(types_seen[t] > 0, "type ", t);
    rc("DEBUG QUICKLIST-PACKED-THRESHOLD 1073741824");
  }

  TEST_CASE("corrupt payloads answer an error and never crash the server") {
    Client& c = client();
    std::vector<std::string> seeds;
    // Seeds: Redis's own payloads when it runs (listpacks, intsets, LZF), plus kvlab's, plus the
    // legacy encodings (ziplist, zipmap).
    Client* sources[2] = {&c, redis().running() ? &redis_client() : nullptr};
    for (Client* src : sources) {
      if (src == nullptr) continue;
      src->cmd({"FLUSHALL"});
      src->cmd({"RPUSH", "l", "a", "1", "-300", "70000", "5000000000", std::string(80, 'x')});
      src->cmd({"SADD", "si", "1", "-5", "100000"});
      src->cmd({"SADD", "ss", "a", "bb"});
      src->cmd({"HSET", "h", "f", "v", "n", "12"});
      src->cmd({"ZADD", "z", "1", "a", "2.5", "b", "-inf", "c"});
      src->cmd({"SET", "lzf", compressible(300, 9)});
      src->cmd({"SET", "i", "-32768"});
      src->cmd({"XADD", "x", "5-1", "f", "v", "n", "-3"});
      src->cmd({"XADD", "x", "5-2", "f", "w", "n", "70000"});
      src->cmd({"XADD", "x", "6-0", "g", "1"});
      src->cmd({"XDEL", "x", "5-2"});
      src->cmd({"XGROUP", "CREATE", "x", "grp", "0"});
      src->cmd({"XREADGROUP", "GROUP", "grp", "c1", "COUNT", "1", "STREAMS", "x", ">"});
      src->cmd({"XREADGROUP", "GROUP", "grp", "c2", "STREAMS", "x", ">"});
      for (const char* k : {"l", "si", "ss", "h", "z", "lzf", "i", "x"})
        seeds.push_back(dump(*src, k));
    }
    seeds.push_back(
        seal("\x0D" + rdb_str(ziplist({"f", "v", "n", "-5", std::string(300, 'b'), "x"}))));
    seeds.push_back(seal("\x09" + rdb_str(zipmap({{"f", "v"}, {"num", "12"}}, 1))));
    seeds.push_back(seal("\x0E\x01" + rdb_str(ziplist({"a", "100000", "-2"}))));
    seeds.push_back(seal("\x03\x02" + rdb_str("a") +
                         "\x03"
                         "1.5" +
                         rdb_str("b") + "\xFE"));
    int ok = 0, errors = 0;
    for (const std::string& seed : seeds) {
      const std::string body = body_of(seed);
      // Every truncation of the body, sealed again: never a valid value.
      for (std::size_t n = 0; n < body.size(); ++n) {
        const Reply r = c.cmd({"RESTORE", "t", "0", seal(body.substr(0, n)), "REPLACE"});
        CHECK_MESSAGE(r.str == kBadFormat, "truncated to ", n, " of ", body.size(), " ", hexs(body),
                      " reply ", r.str);
      }
      // Every byte flipped (xor 0xFF and +1), sealed again: OK or "Bad data format".
      for (std::size_t i = 0; i < body.size(); ++i) {
        for (int how = 0; how < 2; ++how) {
          std::string b = body;
          b[i] = static_cast<char>(how == 0 ? b[i] ^ 0xFF : b[i] + 1);
          const Reply r = c.cmd({"RESTORE", "t", "0", seal(b), "REPLACE"});
          CHECK_MESSAGE((r.is_status("OK") || r.str == kBadFormat), r.str, hexs(b));
          (r.is_status("OK") ? ok : errors)++;
        }
        // Not sealed again: the checksum catches it.
        std::string p = seed;
        p[i] ^= 0x20;
        check_error(c.cmd({"RESTORE", "t", "0", p, "REPLACE"}), kBadPayload);
      }
    }
    CHECK(errors > 0);
    // Random mutations (flips, inserted and deleted bytes, spliced runs), sealed again, bounded
    // in time: OK or a known error; a value that loaded must dump and load back equal.
    std::mt19937 rng(12345);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(4);
    int runs = 0;
    while (runs < 5000 && std::chrono::steady_clock::now() < deadline) {
      std::string b = body_of(seeds[rng() % seeds.size()]);
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !b.empty(); ++e) {
        const std::size_t at = rng() % b.size();
        switch (rng() % 5) {
          case 0:
            b[at] = static_cast<char>(b[at] ^ (1u << (rng() % 8)));
            break;
          case 1:
            b[at] = static_cast<char>(rng());
            break;
          case 2:
            b.insert(b.begin() + static_cast<long>(at), static_cast<char>(rng()));
            break;
          case 3:
            b.erase(at, 1 + rng() % 4);
            break;
          default: {
            const std::size_t from = rng() % b.size(), n = 1 + rng() % 8;
            b.insert(at, b.substr(from, n));
          }
        }
      }
      const Reply r = c.cmd({"RESTORE", "fuzz", "0", seal(b), "REPLACE"});
      REQUIRE_MESSAGE(ok_or_known_error(r), "reply type ", r.type, ": ", r.str, " body ", hexs(b));
      if (r.is_status("OK")) {
        const std::string v = value_of(c, "fuzz");
        restore(c, "fuzz2", dump(c, "fuzz"));
        CHECK(value_of(c, "fuzz2") == v);
      }
      ++runs;
    }
    MESSAGE(runs, " random mutations, ", ok, " single-byte changes loaded, ", errors, " refused");
    CHECK(runs >= 1000);
    CHECK(c("PING").is_status("PONG"));
  }
}
