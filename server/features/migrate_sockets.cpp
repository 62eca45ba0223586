// MIGRATE's connection cache (see migrate_sockets.hpp).
#include "server/features/migrate_sockets.hpp"

#include <algorithm>
#include <cerrno>
#include <map>
#include <string>

#include "server/util/strings_util.hpp"

namespace kvlab::server {

#if KVLAB_SERVER_HAVE_HIREDIS
namespace {
constexpr std::int64_t kSocketIdleMs = 10'000;
constexpr std::size_t kMaxSockets = 64;

// This worker's connections, by "host:port", and the worker's gauge of how many there are
// (WorkerStats::migrate_sockets, set by migrate_cmd before first use). Only its own thread
// touches either.
struct SocketCache {
  std::map<std::string, CachedSocket> map;
  std::atomic<std::uint64_t>* gauge = nullptr;
  // Single writer (this worker); relaxed: a gauge INFO reads.
  void publish() {
    if (gauge != nullptr) gauge->store(map.size(), std::memory_order_relaxed);
  }
  void close_idle(std::int64_t now_ms) {
    const std::size_t n = map.size();
    std::erase_if(map,
                  [&](const auto& e) { return now_ms - e.second.last_use_ms > kSocketIdleMs; });
    if (map.size() != n) publish();
  }
};
SocketCache& cache() {
  thread_local SocketCache c;
  return c;
}
std::map<std::string, CachedSocket>& sockets() {
  return cache().map;
}

}  // namespace

void set_migrate_gauge(std::atomic<std::uint64_t>* gauge) {
  cache().gauge = gauge;
}

// A connected socket to host:port (cached or new), or nullptr when the connection fails.
CachedSocket* get_migrate_socket(const std::string& host, std::string_view port,
                                 std::int64_t timeout_ms, std::int64_t now_ms) {
  auto& cache = sockets();
  ::kvlab::server::cache().close_idle(now_ms);
  const std::string name = host + ":" + std::string(port);
  timeval tv{static_cast<time_t>(timeout_ms / 1000),
             static_cast<suseconds_t>((timeout_ms % 1000) * 1000)};
  auto it = cache.find(name);
  if (it == cache.end()) {
    if (cache.size() >= kMaxSockets) cache.erase(cache.begin());  // one makes room, as Redis
    std::int64_t p = 0;
    if (!parse_i64(port, &p) || p < 0 || p > 65535) p = 0;  // atoi-like: port 0 fails to connect
    std::unique_ptr<redisContext, decltype(&redisFree)> c(
        redisConnectWithTimeout(host.c_str(), static_cast<int>(p), tv), &redisFree);
    if (c == nullptr || c->err != 0) return nullptr;
    it = cache.emplace(name, CachedSocket{}).first;
    it->second.ctx = std::move(c);
    ::kvlab::server::cache().publish();
  }
  redisSetTimeout(it->second.ctx.get(), tv);
  it->second.last_use_ms = now_ms;
  return &it->second;
}

void close_migrate_socket(const std::string& host, std::string_view port) {
  sockets().erase(host + ":" + std::string(port));
  cache().publish();
}

bool migrate_timed_out(const redisContext* c) {
  return c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETIMEDOUT);
}
#endif

std::int64_t migrate_idle_deadline_ms() {
#if KVLAB_SERVER_HAVE_HIREDIS
  const auto& map = sockets();
  if (map.empty()) return -1;
  std::int64_t oldest = map.begin()->second.last_use_ms;
  for (const auto& [name, s] : map) oldest = std::min(oldest, s.last_use_ms);
  return oldest + kSocketIdleMs + 1;  // closed once idle for more than kSocketIdleMs
#else
  return -1;
#endif
}

void migrate_close_idle(std::int64_t now_ms) {
#if KVLAB_SERVER_HAVE_HIREDIS
  cache().close_idle(now_ms);
#else
  (void)now_ms;
#endif
}

}  // namespace kvlab::server
