// What reaches a worker from outside its own connections' input: messages in its inbox from other
// workers (pub/sub and tracking deliveries, unblocks, kills), blocked and paused clients and their
// timeouts, serving other connections while a script is busy, client eviction, and the sweep that
// expires keys with a TTL.

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>

#include "server/core/command.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/features/monitor.hpp"
#include "server/features/notify.hpp"
#include "server/features/scripting.hpp"
#include "server/net/session.hpp"
#include "server/net/worker.hpp"
#include "server/net/worker_internal.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/reply.hpp"
#include "structures/reclaim/epoch.hpp"

#ifdef KVLAB_SERVER_HAVE_TOPO
#include "topology/placement.hpp"
#endif

namespace kvlab::server {

void Worker::evict_clients() {
  // Thread safety: each worker closes only its own connections; the workers agree on who evicts
  // through three relaxed gauges per worker (WorkerStats::client_mem, largest_evictable), no lock.
  // The gauges may be stale, which costs at most a wasted wake-up or one extra look:
  //  - The sum is re-read after every eviction, and every change of a connection's memory is
  //    followed, on its own worker, by a call of this function at the end of the same iteration,
  //    so a sum that stays over the limit is always seen by some worker.
  //  - A worker's largest_evictable is never below its largest evictable connection's memory
  //    (account_memory raises it as a connection grows), only possibly above it (that connection
  //    shrank or closed). A worker evicts only when its own largest evictable connection (just
  //    measured) is at least every other worker's published value, so it never evicts a client
  //    smaller than one elsewhere, as of the values it read. Otherwise it wakes the worker whose
  //    value is larger, which measures and publishes its real value: a value that was too large
  //    is corrected, so the wake-ups converge on the worker that holds the largest client.
  // The eventfd write and read of wake() order whatever the woken worker must see.
  const std::size_t limit = server_.client_eviction_limit();
  if (limit == 0) return;
  WorkerStats& st = server_.stats(index_);
  // Bounded work per iteration: a burst of evictions continues on the next iteration.
  for (int round = 0; round < 64 && server_.client_memory_total() >= limit; ++round) {
    Connection* big = nullptr;
    for (Connection* c : all_)
      if (!c->no_evict && (big == nullptr || c->mem_counted > big->mem_counted)) big = c;
    const std::uint64_t mine = big != nullptr ? big->mem_counted : 0;
    st.largest_evictable.store(mine, std::memory_order_relaxed);  // relaxed: see above
    unsigned owner = index_;
    std::uint64_t most = mine;
    for (unsigned i = 0; i < server_.num_workers(); ++i) {
      const std::uint64_t v = server_.stats(i).largest_evictable.load(std::memory_order_relaxed);
      if (i != index_ && v > most) {
        most = v;
        owner = i;
      }
    }
    if (owner != index_) {
      server_.worker(owner).wake();
      return;
    }
    if (big == nullptr) {
      const std::int64_t now = wall_ms();
      if (now - evict_warned_ms_ >= 1000) {  // once a second at most
        evict_warned_ms_ = now;
        std::fprintf(stderr,
                     "kvlab-server: over maxmemory-clients after evicting all evictable clients "
                     "of worker %u\n",
                     index_);
      }
      return;
    }
    std::fprintf(stderr,
                 "kvlab-server: evicting client %llu (%s): %zu bytes, clients use %zu of "
                 "maxmemory-clients %zu\n",
                 static_cast<unsigned long long>(big->id), big->info->addr.c_str(),
                 big->mem_counted, server_.client_memory_total(), limit);
    bump(st.evicted_clients);  // before the close, which the evicted client may see first
    close_connection(big);
    // largest_evictable still holds big's memory: too large, which the next round corrects.
  }
}

void Worker::serve_while_busy(const Connection* running, bool function) {
  const std::string_view busy_error = function ? err::kBusyFunction : err::kBusyScript;
  epoll_event events[kMaxEvents];
  const int n = epoll_wait(epfd_, events, kMaxEvents, 0);
  const std::int64_t now = wall_ms();
  for (int i = 0; i < n; ++i) {
    void* tag = events[i].data.ptr;
    // The listener, the wake-up eventfd and the running connection are level-triggered: they
    // report again once the script ends.
    if (tag == &g_listen_tag || tag == &g_wake_tag || tag == running) continue;
    auto* c = static_cast<Connection*>(tag);
    // A client in a blocking command keeps its pipelined input until it is served, as always.
    if (c->close_after_reply || c->paused || c->blocked || c->postponed) continue;
    if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
      c->in.reserve_tail(kReadChunk);
      const ssize_t got = ::read(c->fd, c->in.tail(), c->in.tail_room());
      if (got > 0) {
        c->in.commit(static_cast<std::size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        c->close_after_reply = true;  // closed by flush_touched() once the script has ended
      }
      while (!c->close_after_reply) {
        const auto st =
            c->parser.parse(c->in.view(), c->authenticated, server_.proto_max_bulk_len());
        if (st == RequestParser::Status::kIncomplete) break;
        if (st == RequestParser::Status::kError) {
          ReplyWriter(c->out).error(c->parser.error());
          c->close_after_reply = true;
          c->in.consume(c->in.size());
          c->parser.reset();
          break;
        }
        const auto& args = c->parser.args();
        if (!args.empty()) {
          ReplyWriter reply(c->out, c->resp);
          const bool allowed =
              args.size() == 2 && (iequals(args[0], "script") || iequals(args[0], "function")) &&
              (iequals(args[1], "kill") ||
               (function && iequals(args[0], "function") && iequals(args[1], "stats")));
          if (allowed) {
            CommandContext ctx{server_, *this, *c, server_.db(), reply, std::span(args), now};
            dispatch(ctx);
          } else {
            reply.error(busy_error);
          }
        }
        c->in.consume(c->parser.consumed());
      }
    }
    if (!c->out.empty()) {  // reply now, as Redis does; what does not fit leaves after the script
      const ssize_t sent = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
      if (sent > 0) c->out.consume(static_cast<std::size_t>(sent));
    }
    mark_touched(*c);
  }
}

void Worker::gate_wait_hook(void* self) {
  auto* w = static_cast<Worker*>(self);
  const int kind = scripting::busy_script_kind(w->server_.num_workers());
  if (kind == 0) return;
  w->serve_while_busy(w->running_, kind == 2);
}

void Worker::post(PubSubBatch* batch) {
  // Order per producer: once a batch went to the overflow list, this producer's later batches
  // must not overtake it through the queue. overflowed_ stays set until the consumer has taken the
  // list, and a producer that set it reads it back (same thread), so its later batches follow it
  // into the list. A bounded queue may hold an earlier batch of this producer behind another
  // producer's unfinished push (a claimed, unfilled cell), so the consumer takes the list only
  // when no producer is inside push() (in_flight_ == 0) and the queue then reads empty.
  if (inbox_bounded_) {
    // seq_cst (with the loads in drain_inbox): a producer that enters after the consumer saw
    // in_flight_ == 0 also sees overflowed_ set and goes to the list.
    in_flight_.fetch_add(1, std::memory_order_seq_cst);
  }
  const bool queued = !overflowed_.load(std::memory_order_seq_cst) && inbox_->push(batch);
  if (!queued) {
    std::lock_guard<std::mutex> lock(overflow_mu_);
    overflow_.push_back(batch);
    overflowed_.store(true, std::memory_order_seq_cst);
    overflow_total_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a statistic
  }
  // release: pairs with the consumer's acquire load; our push is complete.
  if (inbox_bounded_) in_flight_.fetch_sub(1, std::memory_order_release);
  // acq_rel: the consumer clears pending_ with an acq_rel exchange before it drains; if we read
  // true, the thread that set it will write the eventfd (or did), and the drain that follows
  // its clear synchronizes with this exchange, so it sees our push. Only the false→true flip
  // writes the eventfd: one wake-up per drain however many publishers post.
  if (!pending_.exchange(true, std::memory_order_acq_rel)) wake();
}

void Worker::drain_inbox() {
  // acq_rel: see post(). Cleared before popping, so a push after our last pop wakes us again.
  pending_.exchange(false, std::memory_order_acq_rel);
  auto rearm = [this] {
    // More work than one iteration's share: come back after serving sockets.
    pending_.store(true, std::memory_order_relaxed);  // relaxed: we wake ourselves just below
    wake();
  };
  int budget = kMaxDrainBatches;
  while (void* p = inbox_->try_pop()) {
    deliver_batch(p);
    if (--budget == 0) return rearm();
  }
  if (!overflowed_.load(std::memory_order_seq_cst)) return;
  if (in_flight_.load(std::memory_order_seq_cst) != 0) return rearm();
  // Batches whose push finished before in_flight_ read 0 precede the list's batches.
  while (void* p = inbox_->try_pop()) {
    deliver_batch(p);
    if (--budget == 0) return rearm();
  }
  std::vector<void*> items;
  {
    std::lock_guard<std::mutex> lock(overflow_mu_);
    items.swap(overflow_);
    overflowed_.store(false, std::memory_order_seq_cst);
  }
  for (void* p : items) deliver_batch(p);
}

void Worker::deliver_batch(void* p) {
  auto* b = static_cast<PubSubBatch*>(p);
  for (std::uint32_t i = 0; i < b->count; ++i) {
    PubSubEnvelope& e = b->items()[i];
    deliver(e.conn, e.frame->bytes());
    e.frame->release();
  }
  PubSubBatch::destroy(b, false);
}

void Worker::deliver(std::uint64_t id, std::string_view bytes) {
  auto it = by_id_.find(id);
  WorkerStats& st = server_.stats(index_);
  if (it == by_id_.end()) {
    bump(st.pubsub_dropped);  // the subscriber closed before delivery
    return;
  }
  Connection& c = *it->second;
  if (c.close_after_reply) return;  // QUIT, or already over the limit: Redis drops it too
  std::string rendered;
  if (!bytes.empty() && bytes[0] == kTrackingFrameTag) {
    if (!tracking_render(c.resp, c.subscribed(), bytes, &rendered)) return;  // not receivable here (RESP2)
    bytes = rendered;
  }
  if (c.resp == 3 && !bytes.empty() && bytes[0] == '*') {
    c.out.append(">", 1);  // frames are encoded for RESP2; RESP3 receives the same push frame
    bytes.remove_prefix(1);
  }
  c.out.append(bytes);
  bump(st.pubsub_delivered);
  enforce_obuf_limit(c, server_.pubsub_obuf_limit(), "pubsub");
  mark_touched(c);
}

void Connection::update_pubsub_counts(Server& server, unsigned worker) {
  info->sub.store(static_cast<std::uint32_t>(channels.size()), std::memory_order_relaxed);
  info->psub.store(static_cast<std::uint32_t>(patterns.size()), std::memory_order_relaxed);
  info->ssub.store(static_cast<std::uint32_t>(shard_channels.size()), std::memory_order_relaxed);
  const bool now = subscribed();
  if (now == counted_pubsub) return;
  counted_pubsub = now;
  std::atomic<std::uint64_t>& n = server.stats(worker).pubsub_clients;
  // Single writer (the owning worker); relaxed: a gauge read by INFO.
  n.store(n.load(std::memory_order_relaxed) + (now ? 1 : std::uint64_t(-1)),
          std::memory_order_relaxed);
}

void Worker::block(Connection& conn, std::shared_ptr<BlockedClient> b) {
  if (b->deadline_ms != 0) block_timeouts_.push(BlockTimeout{b->deadline_ms, conn.id, b.get()});
  conn.blocked = std::move(b);
  conn.info->blocked.store(true, std::memory_order_relaxed);
}

void Worker::post_unblock(std::uint64_t conn_id, const BlockedClient* b, std::string reply,
                          std::vector<std::string> after) {
  {
    std::lock_guard<std::mutex> lock(unblock_mu_);
    unblocks_.push_back(Unblock{conn_id, b, std::move(reply), std::move(after)});
  }
  // release: pairs with the acquire load in run(); the eventfd write wakes the loop.
  if (!unblock_pending_.exchange(true, std::memory_order_acq_rel)) wake();
}

void Worker::post_kill(std::uint64_t conn_id) {
  {
    std::lock_guard<std::mutex> lock(unblock_mu_);
    unblocks_.push_back(Unblock{conn_id, nullptr, {}, {}, true});
  }
  // release: as post_unblock.
  if (!unblock_pending_.exchange(true, std::memory_order_acq_rel)) wake();
}

void Worker::resume(Connection& c, std::string_view reply, std::int64_t now_ms, bool run_input) {
  c.blocked.reset();
  c.info->blocked.store(false, std::memory_order_relaxed);
  if (!c.blocked_reply_dropped) c.out.append(reply);  // CLIENT REPLY OFF/SKIP when it blocked
  c.blocked_reply_dropped = false;
  mark_touched(c);
  // Commands that arrived while it waited run now (in order, after the reply).
  if (run_input && !c.paused && !c.in.empty()) process_input(c, now_ms);
}

void Worker::postpone(Connection& c) {
  c.postponed = true;
  c.info->blocked.store(true, std::memory_order_relaxed);  // CLIENT LIST's flag b, as Redis
  postponed_.push_back(c.id);
  server_.add_postponed(1);
}

void Worker::resume_postponed(std::int64_t now_ms) {
  std::vector<std::uint64_t> ids;
  ids.swap(postponed_);  // a command that finds a new pause postpones itself again
  for (std::uint64_t id : ids) {
    auto it = by_id_.find(id);
    if (it == by_id_.end() || !it->second->postponed) continue;  // closed meanwhile
    Connection& c = *it->second;
    c.postponed = false;
    c.info->blocked.store(false, std::memory_order_relaxed);
    server_.add_postponed(-1);
    if (!c.paused) process_input(c, now_ms);
    mark_touched(c);
  }
}

void Worker::drain_unblocks(std::int64_t now_ms) {
  // acq_rel: cleared before taking the list, so a post after the swap wakes us again.
  unblock_pending_.exchange(false, std::memory_order_acq_rel);
  std::vector<Unblock> items;
  {
    std::lock_guard<std::mutex> lock(unblock_mu_);
    items.swap(unblocks_);
  }
  for (Unblock& u : items) {
    auto it = by_id_.find(u.conn);
    if (it != by_id_.end() && u.kill) {
      close_connection(it->second);
      continue;
    }
    if (it == by_id_.end() || u.kill || it->second->blocked.get() != u.b) continue;  // closed
    Connection& c = *it->second;
    resume(c, u.reply, now_ms, /*run_input=*/u.after.empty());
    if (u.after.empty()) continue;
    for (const std::string& f : u.after) deliver(u.conn, f);
    if (!c.paused && !c.in.empty()) process_input(c, now_ms);
  }
}

void Worker::expire_blocked(std::int64_t now_ms) {
  while (!block_timeouts_.empty() && block_timeouts_.top().at_ms <= now_ms) {
    const BlockTimeout t = block_timeouts_.top();
    block_timeouts_.pop();
    auto it = by_id_.find(t.conn);
    if (it == by_id_.end() || it->second->blocked.get() != t.b) continue;  // stale
    Connection& c = *it->second;
    int expected = BlockedClient::kWaiting;
    if (!c.blocked->state.compare_exchange_strong(expected, BlockedClient::kDone,
                                                  std::memory_order_acq_rel))
      continue;  // being served or unblocked: its reply is on its way
    server_.blocking().remove(*c.blocked);
    const std::string reply = c.blocked->timeout_reply;
    resume(c, !reply.empty() ? std::string_view(reply) : c.resp == 3 ? "_\r\n" : "*-1\r\n", now_ms);
  }
}

void Worker::track_expiry(std::string_view key, std::int64_t at_ms) {
  server_.eviction().on_expire_set(key);  // volatile-* sample among the keys with a TTL
  expiry_.push(ExpiryEntry{at_ms, std::string(key)});
  // Keep the index proportional to the keys with a TTL: when it has doubled since the last
  // compaction, rebuild it from the entries that still match the stored expiry, so stale entries
  // (keys re-set, persisted, deleted or evicted) are at most half of it. Amortized: each
  // compaction of n entries follows at least n/2 pushes. Without it SET EX churn on a few keys
  // grew the index (counted in used_memory) past maxmemory (maxmemory_test).
  if (expiry_.size() > expiry_compact_at_) {
    std::vector<ExpiryEntry> keep;
    while (!expiry_.empty()) {
      ExpiryEntry e = expiry_.top();
      expiry_.pop();
      bool current = false;
      server_.keyspace().find(e.key, [&](const Value& v) { current = v.expire_ms == e.at_ms; });
      if (current) keep.push_back(std::move(e));
    }
    // A fresh heap over what was kept (the old vector would keep its capacity).
    keep.shrink_to_fit();
    expiry_ = decltype(expiry_)(std::greater<>{}, std::move(keep));
    expiry_compact_at_ = std::max(kExpiryCompactMin, 2 * expiry_.size());
  }
  server_.stats(index_).expiry_index.store(expiry_.size(), std::memory_order_relaxed);
}

void Worker::sweep_expired(std::int64_t now_ms) {
  // Bounded work per loop iteration (like Redis's active expire cycle): 1000 keys, then back to
  // serving sockets; the zero timeout of next_timeout_ms() brings us back immediately.
  WorkerStats& st = server_.stats(index_);
  const std::uint64_t t0 = monotonic_ns();
  server_.atomicity().online(index_);
  for (int k = 0; k < 1000 && !expiry_.empty() && expiry_.top().at_ms <= now_ms; ++k) {
    const std::string key = expiry_.top().key;
    expiry_.pop();
    // A deletion like any single-key command's: behind a running escalation (EXEC, MSET).
    Atomicity& gate = server_.atomicity();
    const int stripe = gate.begin_single(index_, key);
    const bool removed = expire_if_due(server_.db(), key, now_ms);
    gate.end_single(index_, stripe);
    if (removed) bump(st.expired);
  }
  server_.atomicity().offline(index_);
  st.expiry_index.store(expiry_.size(), std::memory_order_relaxed);
  monitor_event("expire-cycle", (monotonic_ns() - t0) / 1000000);
}

}  // namespace kvlab::server
