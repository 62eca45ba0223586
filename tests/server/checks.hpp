// Checks shared by the server suite's doctest files: include it after <doctest/doctest.h>.
#pragma once

#include <doctest/doctest.h>

#include <string_view>

#include "tests/server/harness.hpp"

namespace kvtest {

// The reply is an error with exactly this text (Redis's, without the leading '-').
inline void check_error(const Reply& r, std::string_view text) {
  CHECK(r.type == REDIS_REPLY_ERROR);
  CHECK(r.str == text);
}

inline constexpr std::string_view kWrongType =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

}  // namespace kvtest
