// The server as the features see it: the workers they deliver to and the registries they share.
//
// Pub/sub, client-side caching and keyspace notifications hand messages to connections on any
// worker. They name what they need here, and net/Server implements it, so that the features do
// not include the network layer above them (server/layers.txt). Server is final: calls through a
// Server& stay direct; only a feature's call through FeatureHost& is virtual, once per delivery
// batch or registry lookup, never per command on the hot path.
//
// Thread safety: as Server's own methods. deliver() is for the calling worker's own connections.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab::server {

class ClientRegistry;
class PubSubRegistry;
class TrackingRegistry;
struct BlockedClient;
struct PubSubBatch;

class FeatureHost {
 public:
  virtual unsigned num_workers() const = 0;
  // Appends bytes to connection `conn` of worker `self`, which must be the calling worker.
  virtual void deliver(unsigned self, std::uint64_t conn, std::string_view bytes) = 0;
  // Pushes a batch into worker `worker`'s inbox (any thread); the worker delivers it in order.
  virtual void post(unsigned worker, PubSubBatch* batch) = 0;
  // Ends a blocked client's wait on its worker with `reply`, then the frames in `after`.
  virtual void post_unblock(unsigned worker, std::uint64_t conn, const BlockedClient* b,
                            std::string reply, std::vector<std::string> after) = 0;
  virtual PubSubRegistry& pubsub() = 0;
  virtual TrackingRegistry& tracking() = 0;
  virtual ClientRegistry& clients() = 0;

 protected:
  ~FeatureHost() = default;
};

}  // namespace kvlab::server
