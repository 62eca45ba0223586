// The wall clock the server keeps time by.
#pragma once

#include <cstdint>

namespace kvlab::server {

// Wall-clock milliseconds (CLOCK_REALTIME), the time base of EXPIREAT and TTL.
std::int64_t wall_ms();

}  // namespace kvlab::server
