// Fuzz target: the RESP request parser (server/protocol/resp_parser.hpp) and its look-ahead key scanner.
//
// Input: byte 0 chooses whether the client is authenticated (bit 0) and seeds the chunking; the
// rest is the byte stream a client sends. Properties checked, beyond "no crash, no out-of-bounds
// read, no allocation above the limits" (ASan/UBSan and libFuzzer's -rss_limit_mb/-malloc_limit_mb):
//   1. Chunking does not matter: feeding the stream in pieces of any sizes (as reads return them)
//      yields the same commands, argument for argument, and the same error, as feeding it whole.
//   2. consumed() of a command is > 0 and within the bytes given; bytes_needed(), when set, is
//      more than the bytes given and at most what the largest legal bulk needs.
//   3. scan_keys (the prefetch hint), without a key layout, reports, for the complete multibulk
//      commands at the front, exactly the second argument of each command that has one, in order.
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/protocol/resp_parser.hpp"

namespace {

using kvlab::server::RequestParser;

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  std::string error;  // empty: no protocol error
};

[[noreturn]] void fail(const char* what) {
  __builtin_trap();
  (void)what;
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

// Feeds `stream` to a parser in chunks whose sizes come from `seed` (0: all at once).
Outcome run(std::string_view stream, bool auth, std::uint32_t seed) {
  Outcome out;
  RequestParser p;
  std::string buf;  // bytes received and not yet consumed
  std::size_t fed = 0;
  std::uint32_t x = seed | 1;
  auto next_chunk = [&]() -> std::size_t {
    if (seed == 0) return stream.size() - fed;
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;  // xorshift32
    return 1 + x % 7 + ((x >> 8) % 4 == 0 ? (x >> 12) % 300 : 0);
  };
  for (int guard = 0; guard < 1 << 20; ++guard) {
    const RequestParser::Status st = p.parse(buf, auth);
    if (st == RequestParser::Status::kError) {
      out.error = p.error();
      check(!out.error.empty(), "an error has a text");
      return out;
    }
    if (st == RequestParser::Status::kCommand) {
      check(p.consumed() > 0 && p.consumed() <= buf.size(), "consumed within the input");
      std::vector<std::string> args;
      for (std::string_view a : p.args()) args.emplace_back(a);
      if (!args.empty()) out.commands.push_back(std::move(args));
      buf.erase(0, p.consumed());
      continue;
    }
    // kIncomplete
    if (p.bytes_needed() != 0) {
      check(p.bytes_needed() > buf.size(), "bytes_needed beyond the bytes given");
      check(p.bytes_needed() <= RequestParser::kMaxBulk + 64 + buf.size(),
            "bytes_needed within the bulk limit");
    }
    if (fed == stream.size()) return out;  // the stream ends inside a command
    const std::size_t n = std::min(next_chunk(), stream.size() - fed);
    buf.append(stream.substr(fed, n));
    fed += n;
  }
  fail("the parser made no progress");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const bool auth = (data[0] & 1) != 0;
  const std::uint32_t seed = data[0] >> 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Outcome whole = run(stream, auth, 0);
  const Outcome pieces = run(stream, auth, seed + 1);
  check(whole.commands == pieces.commands, "chunking changed the commands");
  check(whole.error == pieces.error, "chunking changed the error");

  // The look-ahead scanner over the same bytes.
  std::string_view keys[16];
  const kvlab::server::KeyScan scan = kvlab::server::scan_keys(stream, 16, keys, 16);
  check(scan.keys <= 16 && scan.commands <= 16, "scan within its bounds");
  std::size_t k = 0;
  for (std::size_t i = 0; i < scan.commands && i < whole.commands.size() && k < scan.keys; ++i) {
    if (whole.commands[i].size() >= 2) {
      check(keys[k] == whole.commands[i][1], "the scanned key is the command's second argument");
      ++k;
    }
  }
  return 0;
}
