// The per-thread event loop: accept, read, parse, execute, write; see worker.hpp for the model.
// This file holds the hot path (the loop, input, execution, output and the per-connection limits
// checked on it); worker_lifecycle.cpp opens, starts and shuts a worker down, and
// worker_messages.cpp has what arrives from other workers and timers (inbox, pub/sub delivery,
// blocked and paused clients, busy scripts, the expiry sweep).

#include "server/net/worker.hpp"

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
#include "server/core/command_util.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/features/migrate_sockets.hpp"
#include "server/features/monitor.hpp"
#include "server/features/notify.hpp"
#include "server/features/scripting.hpp"
#include "server/net/session.hpp"
#include "server/net/worker_internal.hpp"
#include "server/protocol/errors.hpp"
#include "server/protocol/reply.hpp"
#include "structures/reclaim/epoch.hpp"

#ifdef KVLAB_SERVER_HAVE_TOPO
#include "topology/placement.hpp"
#endif

namespace kvlab::server {

char g_listen_tag;

char g_wake_tag;

namespace {

constexpr std::size_t kShrinkAbove = 1024 * 1024;

std::string sockaddr_text(const sockaddr_storage& sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "?:0";
}

bool is_loopback(const sockaddr_storage& sa) {
  if (sa.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) return in6->sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

// accept(2) reports network errors already pending on the new connection (and a connection that
// was reset while it waited) as its own failure; the listener is fine and the next pending
// connection may be accepted at once. Returning to the event loop instead, with a log line each,
// let a peer that provokes such errors slow every other client's accept and flood the log
// (CVE-2025-48367). These are retried silently, within accept_all()'s bound.
bool accept_error_is_transient(int e) {
  switch (e) {
    case ECONNABORTED:
    case ENETDOWN:
    case EPROTO:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Worker::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Worker::stop() {
  // Release: the loop's acquire load after the eventfd wake-up sees the request.
  stopping_.store(true, std::memory_order_release);
  wake();
}

int Worker::next_timeout_ms(std::int64_t now_ms) const {
  std::int64_t next = -1;
  if (!expiry_.empty()) next = expiry_.top().at_ms;
  if (!block_timeouts_.empty() && (next < 0 || block_timeouts_.top().at_ms < next))
    next = block_timeouts_.top().at_ms;
  // A client above a soft output limit may add no output while the read pause holds it, so
  // check_soft_limits() looks at it again (Redis's cron does): every 100 ms at most.
  if (!soft_over_.empty() && (next < 0 || now_ms + 100 < next)) next = now_ms + 100;
  if (!postponed_.empty()) {  // the end of the pause (UNPAUSE wakes us sooner)
    const std::int64_t end = server_.pause_end_ms();
    if (next < 0 || end < next) next = end;
  }
  // An idle cached MIGRATE connection is closed on time, not at the next MIGRATE.
  if (const std::int64_t m = migrate_idle_deadline_ms(); m >= 0 && (next < 0 || m < next)) next = m;
  if (next < 0) return -1;  // nothing scheduled: sleep until a socket is ready
  const std::int64_t due = next - now_ms;
  if (due <= 0) return 0;
  // Wake at most every 10 ms for expiries: many distinct expiry times then cost ≤100 wake-ups/s.
  return static_cast<int>(std::clamp<std::int64_t>(due, 10, 1000));
}

void Worker::run() {
  epoll_event events[kMaxEvents];
  // Epoch reclamation (QSBR mode): the worker is announced while it runs commands, passes a
  // quiescent point at the end of every loop iteration (it holds no references to keyspace
  // internals between iterations), and is offline while it sleeps in epoll_wait, so an idle
  // worker never holds back reclamation.
  reclaim::online();
  server_.atomicity().set_wait_hook(index_, &Worker::gate_wait_hook, this);
  // Asked once, with no keys: does the backend act on the prefetch hint at all?
  prefetch_ = server_.config().prefetch && server_.keyspace().prefetch({}, [](const Value&) {});
  const bool yield = server_.config().yield_on;
  WorkerStats& stats = server_.stats(index_);
  // Yield only while two or more connections are active: only then can a yield pay (another
  // client, perhaps on this CPU, may send before the worker sleeps). A lone client waits for the
  // reply just sent, so a yield cannot hand the CPU to it, and when any other task is runnable
  // here it costs that client a whole time slice per request (experiments/commands/README.md,
  // "One sequential client"). Active = sent input within this window of kYieldWindow iterations
  // or the one before; counting iterations, not time, needs no clock read, and a busy worker
  // with many clients sees most of them in every window even when each poll returns one.
  constexpr std::uint32_t kYieldWindow = 32;
  std::uint32_t window = 1, window_iters = 0;
  unsigned active_now = 0, active_before = 0;
  bool busy = false;  // the last poll returned events and two or more connections are active
  // Yield back-off: after a yield whose poll came back empty, skip the next 1, 3, 7 … 63 chances
  // to yield; a poll that finds events resets it. When the clients are slower than the worker
  // (one redis-benchmark thread at -P 1), most extra polls come back empty and yielding after
  // every busy iteration costs server CPU; a fixed commands-per-iteration threshold instead
  // misses the saturating client at --pipeline 1. The measurements of both are in
  // experiments/server-vs-redis/README.md, "Yield before sleeping".
  unsigned yield_skip = 0, yield_backoff = 0;
  while (!stopping_.load(std::memory_order_acquire)) {
    // An accept pause (fd exhaustion) ends here, whether or not this worker ever sleeps.
    if (accept_paused_until_ms_ != 0 && accept_paused_until_ms_ <= wall_ms()) resume_accept();
    reclaim::offline();
    server_.atomicity().offline(index_);  // sleeping or yielding: no command in flight
    // Yield before sleeping (--yield): a worker that just served events gives its CPU to whoever
    // else is runnable there (the client, another worker) and polls once more before it blocks.
    // When workers and clients share the CPUs, the clients then send their next requests before
    // this worker sleeps, so it finds them without a sleep and a wake-up (the wake-up runs the
    // scheduler from the sender's network softirq); fewer sleeps, less CPU per request, more
    // requests/s (experiments/server-vs-redis/README.md, "Yield before sleeping"). With nothing
    // else runnable, sched_yield returns at once and the extra poll is one cheap syscall. It never
    // spins: an empty poll goes straight to the blocking epoll_wait.
    int n = 0;
    if (yield && busy) {
      if (yield_skip > 0) {
        --yield_skip;
      } else {
        sched_yield();
        n = epoll_wait(epfd_, events, kMaxEvents, 0);
        bump(stats.yields);
        if (n > 0) {
          bump(stats.yield_hits);
          yield_backoff = 0;
        } else {
          yield_backoff = std::min(2 * yield_backoff + 1, 63u);
          yield_skip = yield_backoff;
        }
      }
    }
    if (n <= 0) {
      // Sleep until a socket is ready, the next expiry, or the end of an accept pause (0 if it
      // ended during the yield: the next iteration resumes the listener). Computed after any
      // yield, so neither is a time slice late; at most 1 s, so a clock step cannot overflow it.
      const std::int64_t now = wall_ms();
      // Retired objects left by a bounded free pass (a FLUSHALL's million values): poll without
      // blocking so the next passes run between requests instead of after the next wake-up.
      int timeout = reclaim::backlog() ? 0 : next_timeout_ms(now);
      if (accept_paused_until_ms_ != 0) {
        const std::int64_t left = std::clamp<std::int64_t>(accept_paused_until_ms_ - now, 0, 1000);
        if (timeout < 0 || timeout > left) timeout = static_cast<int>(left);
      }
      n = epoll_wait(epfd_, events, kMaxEvents, timeout);
    }
    if (++window_iters == kYieldWindow) {
      window_iters = 0;
      ++window;
      active_before = active_now;
      active_now = 0;
    }
    reclaim::online();
    // The worker stays offline for the atomicity gate except while it runs commands
    // (process_input, sweep_expired): an escalation need not wait for its reads and writes.
    bool woken = false;
    if (n < 0 && errno != EINTR) {
      std::fprintf(stderr, "kvlab-server: worker %u: epoll_wait: %s\n", index_,
                   std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &g_listen_tag) {
        try {
          accept_all();
        } catch (const std::exception& e) {
          std::fprintf(stderr, "kvlab-server: accept: %s\n", e.what());
        }
      } else if (tag == &g_wake_tag) {
        std::uint64_t v = 0;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &v, sizeof v);
        woken = true;
      } else {
        auto* c = static_cast<Connection*>(tag);
        if (c->seen_window != window && (events[i].events & EPOLLIN)) {
          c->seen_window = window;
          ++active_now;
        }
        try {
          on_event(c, events[i].events);
        } catch (const std::exception& e) {
          // Buffer growth is the only thing outside dispatch() that may throw (bad_alloc); the
          // connection cannot continue, the server can.
          std::fprintf(stderr, "kvlab-server: closing client %llu: %s\n",
                       static_cast<unsigned long long>(c->id), e.what());
          close_connection(c);
        }
      }
    }
    busy = n > 0 && std::max(active_now, active_before) >= 2;
    // After the event batch, so that no event of this batch refers to a connection that a
    // delivery closes (the output limit): closing happens in flush_touched(), below.
    if (woken) drain_inbox();
    if (woken && unblock_pending_.load(std::memory_order_acquire)) drain_unblocks(wall_ms());
    if (!block_timeouts_.empty() && block_timeouts_.top().at_ms <= wall_ms())
      expire_blocked(wall_ms());
    if (!postponed_.empty() && server_.paused(wall_ms()) == Server::kPauseNone)
      resume_postponed(wall_ms());
    broadcast_tracking();
    if (!touched_.empty()) flush_touched();
    const std::int64_t now = wall_ms();
    // No active expiry while clients are paused: the dataset stays as it is (Redis 7.0).
    if (!expiry_.empty() && expiry_.top().at_ms <= now && active_expire_enabled() &&
        server_.paused(now) == Server::kPauseNone)
      sweep_expired(now);
    // Keyspace notifications of the sweep, of evictions and of blocked clients served here.
    if (notify_pending()) {
      notify_flush(server_, index_);
      if (!touched_.empty()) flush_touched();
    }
    if (tracking_pending() || server_.tracking().broadcast_pending()) {  // expired keys
      broadcast_tracking();
      if (!touched_.empty()) flush_touched();
    }
    if (const std::int64_t m = migrate_idle_deadline_ms(); m >= 0 && m <= now)
      migrate_close_idle(now);
    server_.sample_ops(now);
    reclaim::quiescent();
    server_.eviction().end_iteration(index_, now);
    if (!soft_over_.empty()) check_soft_limits();
    if (server_.maxmemory_clients() != 0) evict_clients();
  }
  drain_and_close_all();
  server_.atomicity().offline(index_);
  reclaim::offline();
}

void Worker::resume_accept() {
  accept_paused_until_ms_ = 0;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &g_listen_tag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
}

void Worker::accept_all() {
  // Bounded per readiness event so that a connection storm cannot starve established clients.
  for (int k = 0; k < 256; ++k) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || accept_error_is_transient(errno)) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listener stays readable, so a level-triggered loop would spin.
        // Stop watching it for 100 ms; pending connections wait in the kernel's backlog.
        std::fprintf(stderr, "kvlab-server: accept: %s; pausing accepts for 100 ms\n",
                     std::strerror(errno));
        epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
        accept_paused_until_ms_ = wall_ms() + 100;
        return;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK)
        std::fprintf(stderr, "kvlab-server: accept: %s\n", std::strerror(errno));
      return;
    }
    auto reject = [&](std::string_view text) {
      std::string line = "-" + std::string(text) + "\r\n";
      [[maybe_unused]] ssize_t w = ::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
      ::close(fd);
    };
    if (!server_.try_admit()) {
      reject(err::kMaxClients);
      continue;
    }
    if (server_.config().protected_mode && !server_.auth_required() && !is_loopback(peer)) {
      server_.release_client();
      reject(err::kDenied);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* c = new Connection;
    c->fd = fd;
    c->id = server_.next_client_id();
    c->authenticated = !server_.auth_required();
    c->info = std::make_shared<ClientInfo>();
    c->info->id = c->id;
    c->info->fd = fd;
    c->info->worker = index_;
    c->info->addr = sockaddr_text(peer);
    sockaddr_storage local{};
    socklen_t llen = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0)
      c->info->laddr = sockaddr_text(local);
    c->info->created_ms = wall_ms();
    c->info->last_ms.store(c->info->created_ms, std::memory_order_relaxed);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      server_.release_client();
      delete c;
      continue;
    }
    c->interest = EPOLLIN;
    server_.clients().add(c->info);
    all_.insert(c);
    by_id_.emplace(c->id, c);
    conns_.store(conns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    bump(server_.stats(index_).connections);
  }
}

void Worker::on_event(Connection* c, std::uint32_t events) {
  const std::int64_t now = wall_ms();
  server_.eviction().tick(now);  // the clock new values and writes' touches use (eviction.hpp)
  if (events & EPOLLOUT) {
    if (!flush(*c)) return;
    resume_if_drained(*c);  // its replies leave in flush_touched(), which resumes it again
  }
  if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !c->paused && !c->close_after_reply) {
    // Size the read: 16 KiB normally; for a large bulk in progress, grow geometrically towards
    // what the parser says the command needs (never trusting the announced length for more).
    std::size_t want = kReadChunk;
    const std::size_t have = c->in.size();
    const std::size_t needed = c->parser.bytes_needed();
    if (needed > have) want = std::max(want, std::min(needed - have, std::max(have, kReadChunk)));
    if (have + want > server_.query_buffer_limit()) {
      std::fprintf(stderr, "kvlab-server: closing client %llu: query buffer limit reached\n",
                   static_cast<unsigned long long>(c->id));
      close_connection(c);
      return;
    }
    c->in.reserve_tail(want);
    const ssize_t n = ::read(c->fd, c->in.tail(), c->in.tail_room());
    if (n > 0) {
      c->in.commit(static_cast<std::size_t>(n));
      bump(server_.stats(index_).net_in, static_cast<std::uint64_t>(n));
      c->info->last_ms.store(now, std::memory_order_relaxed);
      process_input(*c, now);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      close_connection(c);  // peer closed, or a hard error: pending replies cannot be delivered
      return;
    }
    // The replies leave after the whole event batch (flush_touched() in run()), as Redis writes
    // them before it sleeps: a client with many connections then wakes once per batch, not once
    // per connection. flush() also updates the epoll interest and closes after QUIT/errors.
    mark_touched(*c);
    return;
  }
  update_interest(*c);
}

namespace {

// The header line of the value's Object (size, type and the first 48 bytes): GET reads it first.
// Prefetching more lines pays nothing: the hardware prefetcher follows a longer copy, and SET never
// reads the old value at all (papers/server-choices.md).
void prefetch_value(const Value& v) {
  __builtin_prefetch(v.obj.get(), 0, 3);
}

// The key layout of a command with three or more arguments, for the prefetch scan: from its row
// (first_key, last_key, key_step), so that MGET's and MSET's keys are all prefetched, not only
// the first. Rows whose keys start elsewhere or depend on a numkeys argument keep the default
// (the second argument). The scan asks once per run of one command name.
bool key_layout(std::string_view name, KeyLayout* out) {
  const CommandSpec* c = CommandTable::instance().find(name);
  if (c == nullptr || c->first_key != 1 || c->key_step < 1 || c->extra_keys != nullptr)
    return false;
  *out = KeyLayout{1, c->last_key, c->key_step};
  return true;
}

}  // namespace

void Worker::process_input(Connection& c, std::int64_t now_ms) {
  // Online for the atomicity gate only while commands run: an escalation on another worker then
  // waits for this batch's current command, not for this worker's socket I/O around it (measured:
  // experiments/atomicity/README.md).
  Atomicity& gate = server_.atomicity();
  gate.online(index_);
  begin_command_batch(server_.stats(index_).cmd.get());
  // Pipelined commands: before running a window of up to kPrefetchWindow buffered commands, hand
  // their keys to the keyspace's prefetch hint, so that the cache misses of their lookups (bucket,
  // entry, value) overlap instead of stalling one command after another.
  // A window ends after 32 commands or 32 keys (the hash backend's prefetch batch), whichever
  // comes first: eight MGETs of four keys are one window, and all their keys are prefetched.
  constexpr std::size_t kPrefetchWindow = 32;
  constexpr std::size_t kPrefetchKeys = 32;
  std::size_t window = 0;  // commands left in the current prefetched window
  while (!c.close_after_reply && !c.blocked && !c.postponed) {
    if (c.out.size() >= kOutputPauseBytes) {
      c.paused = true;
      break;
    }
    if (window == 0 && prefetch_) {
      std::string_view keys[kPrefetchKeys];
      const KeyScan scan = scan_keys(c.in.view(), kPrefetchWindow, keys, kPrefetchKeys, key_layout);
      window = std::max<std::size_t>(scan.commands, 1);
      if (scan.keys >= 2) {
        server_.keyspace().prefetch(std::span<const std::string_view>(keys, scan.keys),
                                    [](const Value& v) { prefetch_value(v); });
      }
    }
    if (window > 0) --window;
    const auto st = c.parser.parse(c.in.view(), c.authenticated, server_.proto_max_bulk_len());
    if (st == RequestParser::Status::kIncomplete) break;
    if (st == RequestParser::Status::kError) {
      ReplyWriter(c.out).error(c.parser.error());
      c.close_after_reply = true;
      c.in.consume(c.in.size());
      c.parser.reset();
      break;
    }
    if (!c.parser.args().empty()) execute(c, now_ms);
    if (c.postponed) break;  // CLIENT PAUSE: the command stays in `in`, to be parsed again
    c.in.consume(c.parser.consumed());
    // The normal class of client-output-buffer-limit (Redis's default 0 0 0: off); subscribed
    // clients are held to the pubsub class, here as in deliver().
    if (!c.out.empty()) {
      const bool sub = c.subscribed();
      if (enforce_obuf_limit(c, sub ? server_.pubsub_obuf_limit() : server_.normal_obuf_limit(),
                             sub ? "pubsub" : "normal"))
        break;
    }
    if (c.out.size() > kOutputHardLimit) {
      std::fprintf(stderr, "kvlab-server: closing client %llu: output buffer limit reached\n",
                   static_cast<unsigned long long>(c.id));
      c.out.consume(c.out.size());
      c.close_after_reply = true;
    }
  }
  end_command_batch();
  if (c.in.empty()) c.in.shrink_if_idle(kShrinkAbove);
  c.info->qbuf.store(c.in.size(), std::memory_order_relaxed);
  gate.offline(index_);
}

void Worker::execute(Connection& c, std::int64_t now_ms) {
  const auto& args = c.parser.args();
  ReplyWriter reply(c.out, c.resp);
  CommandContext ctx{server_, *this, c, server_.db(), reply, std::span(args), now_ms};
  const std::size_t out_before = c.out.size();
  const Connection* outer = running_;  // restored after, should execute() ever nest
  running_ = &c;
  dispatch(ctx);
  running_ = outer;
  if (c.postponed) return;  // CLIENT PAUSE: not run yet, so nothing to count
  // CLIENT REPLY: a command run under OFF or SKIP loses its replies (everything it appended),
  // unless it was CLIENT REPLY ON, or its replies are pub/sub confirmations, which Redis sends
  // as pushes whatever the mode (RESP2 too); SKIP lasts one command. CLIENT REPLY SKIP itself
  // answers nothing.
  using RM = Connection::ReplyMode;
  if (c.reply_mode == RM::kOff || c.reply_mode == RM::kSkip) {
    const bool keep = ctx.push_reply && reply.errors() == 0;
    if (!keep && c.out.size() > out_before) c.out.truncate(out_before);
    if (c.blocked) c.blocked_reply_dropped = true;
    if (c.reply_mode == RM::kSkip) c.reply_mode = RM::kOn;
  } else if (c.reply_mode == RM::kSkipNext) {
    c.reply_mode = RM::kSkip;
  }
  // CLIENT CACHING YES/NO applies to the next command only; inside MULTI, to the transaction.
  if (c.tracking.caching && !c.tx && !iequals(args[0], "client")) c.tracking.caching = false;
  // Invalidations this command caused leave after its reply (a plain thread-local read).
  if (tracking_pending()) tracking_flush(server_, index_, c.id);
  // Keyspace notifications too, after the reply and any truncation of it (notify.hpp).
  if (notify_pending()) notify_flush(server_, index_);
  WorkerStats& st = server_.stats(index_);
  bump(st.commands);
  if (reply.errors() != 0) {
    count_error_replies(ctx, reply);
    if (!ctx.counted) count_rejected(ctx);
  }
}

bool Worker::flush(Connection& c) {
  if (!c.out.empty()) {
    // A closing client (QUIT, a limit) leaves the registry before its last reply can reach it:
    // once it has read QUIT's OK, a command on another worker must already find it gone (a
    // tracking redirect to it is broken, CLIENT LIST does not show it), as in Redis, where the
    // client is freed in the same event-loop step that writes the reply.
    if (c.close_after_reply && !shutting_down_) [[unlikely]]
      server_.clients().remove(c.id);
    ssize_t n;
    do {
      n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      c.out.consume(static_cast<std::size_t>(n));
      bump(server_.stats(index_).net_out, static_cast<std::uint64_t>(n));
    } else if (errno != EAGAIN && errno != EWOULDBLOCK) {
      close_connection(&c);
      return false;
    }
  }
  if (c.out.empty()) {
    c.out.shrink_if_idle(kShrinkAbove);
    if (c.close_after_reply && !shutting_down_) {
      close_connection(&c);
      return false;
    }
    if (c.close_after_reply && !c.write_shut) {
      // Shutting down: FIN after the replies, but no close() yet (drain_and_close_all says why).
      ::shutdown(c.fd, SHUT_WR);
      c.write_shut = true;
    }
  }
  c.info->obuf.store(c.out.size(), std::memory_order_relaxed);
  account_memory(c);
  update_interest(c);
  return true;
}

namespace {

// A connection's memory as maxmemory-clients counts it (Redis's client memory: query buffer,
// output buffer, the client structure and the queued MULTI arguments). Capacities, not sizes: the
// allocation is what the process holds.
std::size_t connection_memory(const Connection& c) {
  std::size_t mem = sizeof(Connection) + sizeof(ClientInfo) + c.in.capacity() + c.out.capacity();
  if (c.tx) mem += c.tx->bytes + c.tx->queued.size() * sizeof(std::vector<std::string>);
  return mem;
}

}  // namespace

void Worker::account_memory(Connection& c) {
  const std::size_t mem = connection_memory(c);
  c.info->tot_mem.store(mem, std::memory_order_relaxed);  // relaxed: CLIENT LIST only
  WorkerStats& st = server_.stats(index_);
  // Invariant (evict_clients relies on it): largest_evictable is at least the memory of every
  // evictable connection of this worker. Raised here whenever one grows past it; only
  // evict_clients() lowers it, to a value it has just measured.
  if (!c.no_evict && mem > st.largest_evictable.load(std::memory_order_relaxed))
    st.largest_evictable.store(mem, std::memory_order_relaxed);  // single writer; relaxed
  if (mem == c.mem_counted) return;
  // Single writer (this worker): a load and a store, no read-modify-write. relaxed: a gauge that
  // evict_clients() on every worker reads as an estimate.
  st.client_mem.store(st.client_mem.load(std::memory_order_relaxed) + mem - c.mem_counted,
                      std::memory_order_relaxed);
  c.mem_counted = mem;
}

void Worker::update_interest(Connection& c) {
  std::uint32_t want = 0;
  if ((!c.paused && !c.close_after_reply) || c.write_shut) want |= EPOLLIN;
  if (!c.out.empty()) want |= EPOLLOUT;
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.ptr = &c;
  epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.interest = want;
}

void Worker::close_connection(Connection* c) {
  // First out of the registry: CLIENT LIST/KILL must not see it half torn down (no longer a
  // subscriber, say, and so counted as TYPE normal).
  server_.clients().remove(c->id);
  end_client_state(server_, index_, *c);
  if (c->blocked) {
    // A waiter that disconnects leaves nothing behind; if a server took it first, the element
    // it popped was meant for this closed connection (as in Redis, when the reply is written to a
    // socket the client has closed).
    int expected = BlockedClient::kWaiting;
    if (c->blocked->state.compare_exchange_strong(expected, BlockedClient::kDone,
                                                  std::memory_order_acq_rel))
      server_.blocking().remove(*c->blocked);
  }
  if (c->postponed) server_.add_postponed(-1);  // its entry in postponed_ is skipped
  if (c->mem_counted != 0) {                    // single writer, relaxed: see account_memory()
    std::atomic<std::uint64_t>& total = server_.stats(index_).client_mem;
    total.store(total.load(std::memory_order_relaxed) - c->mem_counted, std::memory_order_relaxed);
  }
  ::close(c->fd);  // also removes it from the epoll set
  server_.release_client();
  all_.erase(c);
  by_id_.erase(c->id);
  conns_.store(conns_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  delete c;
}

void Worker::broadcast_tracking() {
  if (tracking_pending()) tracking_flush(server_, index_, 0);  // notes of no command: the sweep's
  if (!server_.tracking().broadcast_pending()) return;
  server_.tracking().broadcast(server_);
  tracking_flush(server_, index_, 0);
}

bool Worker::enforce_obuf_limit(Connection& c, const ObufLimit& lim, const char* cls) {
  const std::size_t used = c.out.size();
  // Whatever the class, a client that must still authenticate may not make the server hold more
  // than a small reply backlog for it (kUnauthOutputLimit).
  if (!c.authenticated && used > kUnauthOutputLimit) cls = "unauthenticated";
  bool over = !c.authenticated && used > kUnauthOutputLimit;
  over = over || (lim.hard != 0 && used >= lim.hard);
  if (!over && lim.soft != 0 && used >= lim.soft) {
    // The soft limit must be passed continuously for more than soft_seconds (Redis: the
    // elapsed time must exceed the setting, so 0 seconds still waits for the next check).
    const std::int64_t now = wall_ms();
    if (c.obuf_soft_since_ms == 0) {
      c.obuf_soft_since_ms = now;
      soft_over_.push_back(c.id);  // checked again by check_soft_limits() without new output
    } else if (now - c.obuf_soft_since_ms > static_cast<std::int64_t>(lim.soft_seconds) * 1000) {
      over = true;
    }
  } else if (!over) {
    c.obuf_soft_since_ms = 0;
  }
  if (!over) return false;
  std::fprintf(stderr,
               "kvlab-server: closing client %llu (%s): %s output buffer limit reached "
               "(%zu bytes pending)\n",
               static_cast<unsigned long long>(c.id), c.info->addr.c_str(), cls, used);
  c.out.consume(c.out.size());
  c.close_after_reply = true;
  bump(server_.stats(index_).obuf_limit_closes);
  return true;
}

void Worker::check_soft_limits() {
  std::vector<std::uint64_t> ids;
  ids.swap(soft_over_);
  for (std::uint64_t id : ids) {
    auto it = by_id_.find(id);
    if (it == by_id_.end()) continue;  // closed meanwhile
    Connection& c = *it->second;
    if (c.obuf_soft_since_ms == 0 || c.close_after_reply) continue;  // drained below it, or closing
    const bool sub = c.subscribed();
    const std::size_t before = soft_over_.size();
    if (enforce_obuf_limit(c, sub ? server_.pubsub_obuf_limit() : server_.normal_obuf_limit(),
                           sub ? "pubsub" : "normal")) {
      flush(c);  // its output was dropped: this closes it
      continue;
    }
    // Still above the soft limit (and not yet for long enough): keep watching it.
    if (c.obuf_soft_since_ms != 0 && soft_over_.size() == before) soft_over_.push_back(id);
  }
}

void Worker::mark_touched(Connection& c) {
  if (c.touched) return;
  c.touched = true;
  touched_.push_back(c.id);
}

void Worker::resume_if_drained(Connection& c) {
  if (!c.paused || c.out.size() >= kOutputPauseBytes / 2) return;
  c.paused = false;
  const std::int64_t now = wall_ms();
  server_.eviction().tick(now);
  process_input(c, now);
  mark_touched(c);
}

void Worker::flush_touched() {
  // flush() may close a connection (and free it): look each one up by id.
  std::vector<std::uint64_t> ids;
  while (!touched_.empty()) {
    ids.clear();
    ids.swap(touched_);
    for (std::uint64_t id : ids) {
      auto it = by_id_.find(id);
      if (it == by_id_.end()) continue;
      Connection& c = *it->second;
      c.touched = false;
      if (!flush(c)) continue;  // closed
      // A connection paused at kOutputPauseBytes (process_input) waits for EPOLLOUT to resume,
      // but when this send took all of its output no EPOLLOUT comes and nothing would resume it:
      // a pipeline whose replies pass 4 MiB stalled for good (found with redis-cli --pipe). Its
      // remaining commands are already in `in`, so this loop ends: each round runs some of them.
      // Delivering to others puts them in touched_ for the next round.
      resume_if_drained(c);
    }
  }
  ids.clear();
  touched_.swap(ids);  // keep the capacity
}

}  // namespace kvlab::server
