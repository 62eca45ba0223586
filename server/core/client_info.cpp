#include "server/core/client_info.hpp"

namespace kvlab::server {

void ClientRegistry::add(std::shared_ptr<ClientInfo> c) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::uint64_t id = c->id;
  clients_.emplace(id, std::move(c));
}

void ClientRegistry::remove(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  clients_.erase(id);
}

}  // namespace kvlab::server
