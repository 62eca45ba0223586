#include "server/net/session.hpp"

#include <atomic>

#include "server/features/pubsub.hpp"
#include "server/features/tracking.hpp"
#include "server/net/server.hpp"
#include "server/net/worker.hpp"

namespace kvlab::server {

void pubsub_forget(Server& server, unsigned worker, Connection& c) {
  if (c.channels.empty() && c.patterns.empty() && c.shard_channels.empty()) return;
  server.pubsub().remove_all({worker, c.id}, c.channels, c.patterns, c.shard_channels);
  c.channels.clear();
  c.patterns.clear();
  c.shard_channels.clear();
  c.update_pubsub_counts(server, worker);
}

void tracking_forget(Server& server, Connection& c) {
  if (!c.tracking.on) return;
  server.tracking().disable(c.id);
  c.tracking = TrackingFlags{};
}

void discard_transaction(Server& server, Connection& c) {
  c.tx.reset();
  if (c.watch) server.db().watches().unwatch_all(*c.watch);
}

void end_client_state(Server& server, unsigned worker, Connection& c) {
  pubsub_forget(server, worker, c);
  tracking_forget(server, c);
  discard_transaction(server, c);
}

void reset_client(Server& server, unsigned worker, Connection& c) {
  end_client_state(server, worker, c);
  server.clients().with_lock([&] {
    c.info->name.clear();
    return 0;
  });
  c.authenticated = !server.auth_required();
  if (c.reply_mode != Connection::ReplyMode::kSkip) c.reply_mode = Connection::ReplyMode::kOn;
  c.resp = 2;
  // Relaxed: CLIENT LIST/INFO on other workers read it as a snapshot; nothing else depends on it.
  c.info->resp.store(2, std::memory_order_relaxed);
  c.asking = false;
}

}  // namespace kvlab::server
