// A connection as CLIENT LIST, CLIENT INFO and the slow log describe it, and the registry of them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

// Every connection of every worker, by id: CLIENT LIST, CLIENT KILL, tracking redirects.
class ClientRegistry {
 public:
  void add(std::shared_ptr<ClientInfo> c);
  void remove(std::uint64_t id);
  // The client with this id, or nullptr (CLIENT TRACKING REDIRECT).
  std::shared_ptr<ClientInfo> find(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(id);
    return it == clients_.end() ? nullptr : it->second;
  }
  // The client's address and name, read under the registry lock from any thread (the slow log
  // entry of a blocked client that another worker serves); false when it has gone.
  bool addr_and_name(std::uint64_t id, std::string* addr, std::string* name) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clients_.find(id);
    if (it == clients_.end()) return false;
    *addr = it->second->addr;
    *name = it->second->name;
    return true;
  }
  // Applies fn to every client under the registry lock (CLIENT LIST); fn must not block.
  template <class F>
  void for_each(F&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, c] : clients_) fn(*c);
  }
  // Removes, under one hold of the lock, every client for which keep_out(client) says so, and
  // returns their (id, worker) pairs. CLIENT KILL: as in Redis, where a killed client is freed
  // at once, it is gone from CLIENT LIST and from a second KILL's count before its worker has
  // closed the socket.
  template <class F>
  std::vector<std::pair<std::uint64_t, unsigned>> remove_if(F&& keep_out) {
    std::vector<std::pair<std::uint64_t, unsigned>> out;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (keep_out(*it->second)) {
        out.emplace_back(it->first, it->second->worker);
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    return out;
  }
  template <class F>
  auto with_lock(F&& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    return fn();
  }

 private:
  std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<ClientInfo>> clients_;
};

}  // namespace kvlab::server
