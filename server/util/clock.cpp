#include "server/util/clock.hpp"

#include <time.h>

namespace kvlab::server {

std::int64_t wall_ms() {
  struct timespec ts {};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace kvlab::server
