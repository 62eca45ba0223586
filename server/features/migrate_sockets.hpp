// MIGRATE's connections to other servers, cached per worker thread and per host:port, with the
// database last selected on each, and closed after 10 s unused (by the worker's loop, which wakes
// for it as Redis's cron does, and when MIGRATE next runs on that worker) or on an error
// (Redis's migrateGetSocket cache). INFO's migrate_cached_sockets sums the workers' gauges.
//
// Thread safety: each worker thread has its own cache; only that thread touches it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#if KVLAB_SERVER_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace kvlab::server {

#if KVLAB_SERVER_HAVE_HIREDIS
struct CachedSocket {
  std::unique_ptr<redisContext, decltype(&redisFree)> ctx{nullptr, &redisFree};
  std::int64_t last_db = -1;  // -1: SELECT before the next RESTORE
  std::int64_t last_use_ms = 0;
};

// The calling worker's gauge of its cached connections (WorkerStats::migrate_sockets).
void set_migrate_gauge(std::atomic<std::uint64_t>* gauge);
// A connected socket to host:port (cached or new), or nullptr when the connection fails.
CachedSocket* get_migrate_socket(const std::string& host, std::string_view port,
                                 std::int64_t timeout_ms, std::int64_t now_ms);
// Drops host:port's connection after an error.
void close_migrate_socket(const std::string& host, std::string_view port);
// Whether c's last error was a timeout (no retry then, as in Redis).
bool migrate_timed_out(const redisContext* c);
#endif

// When the calling worker's least recently used connection becomes idle long enough to close
// (-1: none cached), and the closing of those that are, which the worker's loop runs then.
std::int64_t migrate_idle_deadline_ms();
void migrate_close_idle(std::int64_t now_ms);

}  // namespace kvlab::server
