// A connection as CLIENT LIST, CLIENT INFO and the slow log describe it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/core/command.hpp"

namespace kvlab::server {

// What CLIENT LIST shows about a connection; shared between its worker and the registry.
struct ClientInfo {
  std::uint64_t id = 0;
  int fd = -1;
  unsigned worker = 0;
  std::string addr, laddr;
  std::int64_t created_ms = 0;
  std::atomic<std::int64_t> last_ms{0};
  std::atomic<const CommandSpec*> last_cmd{nullptr};  // relaxed: shown by CLIENT LIST only
  std::atomic<std::size_t> qbuf{0}, obuf{0};
  // relaxed: subscriptions (channels, patterns, shard channels), for CLIENT LIST
  std::atomic<std::uint32_t> sub{0}, psub{0}, ssub{0};
  std::atomic<int> resp{2};          // relaxed: protocol version, for CLIENT LIST
  std::atomic<bool> blocked{false};  // relaxed: in a blocking command (CLIENT LIST's flag b)
  // relaxed: the connection's memory as maxmemory-clients counts it (CLIENT LIST's tot-mem), and
  // CLIENT NO-EVICT (flag e); written by the owning worker, shown by CLIENT LIST.
  std::atomic<std::size_t> tot_mem{0};
  std::atomic<bool> no_evict{false};
  // Guarded by ClientRegistry::mu_.
  std::string name, lib_name, lib_ver;
};

}  // namespace kvlab::server
