// The arguments of SCAN, HSCAN, SSCAN and ZSCAN, parsed once for all four as Redis 7.0's
// scanGenericCommand parses them: the cursor (strtoul rules: parse_scan_cursor in common.hpp),
// then options, each a name and a value, in any order, the last of a kind winning: MATCH pattern,
// COUNT n (an integer, at least 1), TYPE name (SCAN only) and the flag NOVALUES (HSCAN only, as
// Redis 7.4 has it). A name without its value, an unknown name, or COUNT below 1 is a syntax error;
// a COUNT that is not an integer, Redis's integer error.
//
// Redis's order for the key-scanning forms: the cursor is parsed first, then the key is looked up
// (a missing key answers an empty scan, another type WRONGTYPE), and only then the options; so
// the options' error is returned as text, for the caller to reply at that point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace kvlab::server {

struct CommandContext;

struct ScanArgs {
  std::uint64_t cursor = 0;
  std::uint64_t count = 10;
  std::string_view pattern;
  bool has_pattern = false;  // MATCH given with a pattern other than "*"
  std::string_view type;
  bool has_type = false;
  bool novalues = false;
};

// Which options beyond MATCH and COUNT a command takes.
enum ScanOptions : unsigned { kScanMatchCount = 0, kScanType = 1, kScanNoValues = 2 };

// argv[index] as the cursor; false after replying "ERR invalid cursor".
bool parse_scan_cursor_arg(CommandContext& ctx, std::size_t index, ScanArgs* a);
// argv[first...] as options; the error text to reply (empty when they parse).
std::string_view scan_options_error(std::span<const std::string_view> argv, std::size_t first,
                                    unsigned allowed, ScanArgs* a);
std::string_view scan_options_error(const CommandContext& ctx, std::size_t first, unsigned allowed,
                                    ScanArgs* a);
// The same, replying the error; false when there was one.
bool parse_scan_options(CommandContext& ctx, std::size_t first, unsigned allowed, ScanArgs* a);

}  // namespace kvlab::server
