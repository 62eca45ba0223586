// Small string helpers shared by the parser and the commands: strict integer parsing with the
// rules Redis applies (string2ll), float parsing and formatting, case folding, and glob matching.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvlab::server {

// Strict decimal parse as Redis's string2ll: optional '-', no '+', no blanks, no leading zeros,
// no overflow. Returns false on any violation.
bool parse_i64(std::string_view s, std::int64_t* out);

// Parses a long double as Redis's string2ld: no blanks, not NaN; returns false otherwise.
bool parse_long_double(std::string_view s, long double* out);
// Parses a double (for INCRBYFLOAT-like arguments and CONFIG); no blanks, not NaN.
bool parse_double(std::string_view s, double* out);

// Writes v in decimal to buf (at least 21 bytes); returns the number of characters.
std::size_t format_i64(std::int64_t v, char* buf);
// Formats like Redis's ld2string(LD_STR_HUMAN): "%.17Lf" with trailing zeros (and a trailing
// '.') removed, "-0" normalised to "0".
std::string format_long_double_human(long double v);

// ASCII lower-casing into out (resized); returns a view of out.
std::string_view to_lower(std::string_view s, std::string* out);
bool iequals(std::string_view a, std::string_view b);

// Glob matching with Redis 7.0.15's stringmatchlen() semantics: '*', '?', '[...]' with ranges
// (reversed ones too) and '^', '\' escapes, Redis's nesting limit of 1000 runs of '*'. Binary
// safe; case sensitive unless nocase (which folds 'A'..'Z' only). Work: at most
// (text + 1) x (2 pattern + 1) + pattern steps, no recursion (strings_util.cpp has the proof).
bool glob_match(std::string_view pattern, std::string_view text, bool nocase = false);
// The same, also returning in *steps the work done, in the unit of the bound above (for tests).
bool glob_match_counted(std::string_view pattern, std::string_view text, bool nocase,
                        std::uint64_t* steps);

}  // namespace kvlab::server
