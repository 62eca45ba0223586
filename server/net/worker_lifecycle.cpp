// A worker's life outside its loop: opening the listening socket (SO_REUSEPORT, one per worker),
// starting the thread with its placement, the in-process mode the tests use, and the shutdown that
// drains and closes every connection.

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

namespace {

// Fills *sa for bind:port; false for an unparsable address.
bool make_sockaddr(const std::string& bind, int port, sockaddr_storage* sa, socklen_t* len) {
  std::memset(sa, 0, sizeof *sa);
  auto* in = reinterpret_cast<sockaddr_in*>(sa);
  if (bind == "*" || bind == "0.0.0.0") {
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (inet_pton(AF_INET, bind.c_str(), &in->sin_addr) == 1) {
    in->sin_family = AF_INET;
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(sa);
    std::string host = bind;
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
      host = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, host.c_str(), &in6->sin6_addr) != 1) return false;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<std::uint16_t>(port));
    *len = sizeof(sockaddr_in6);
    return true;
  }
  in->sin_port = htons(static_cast<std::uint16_t>(port));
  *len = sizeof(sockaddr_in);
  return true;
}

}  // namespace

Worker::Worker(Server& server, unsigned index) : server_(server), index_(index) {}

Worker::~Worker() {
  join();
  // The thread has ended: this is now the inbox's only consumer. Undelivered messages are freed.
  if (inbox_) {
    while (void* p = inbox_->try_pop()) PubSubBatch::destroy(static_cast<PubSubBatch*>(p), true);
  }
  {
    std::lock_guard<std::mutex> lock(overflow_mu_);
    for (void* p : overflow_) PubSubBatch::destroy(static_cast<PubSubBatch*>(p), true);
    overflow_.clear();
  }
  for (Connection* c : all_) {
    end_client_state(server_, index_, *c);
    ::close(c->fd);
    if (c->info) server_.clients().remove(c->id);
    server_.release_client();
    delete c;
  }
  all_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epfd_ >= 0) ::close(epfd_);
}

bool Worker::open(std::string* error) {
  const Config& cfg = server_.config();
  sockaddr_storage sa{};
  socklen_t len = 0;
  if (!make_sockaddr(cfg.bind, cfg.port, &sa, &len)) {
    *error = "cannot parse --bind address '" + cfg.bind + "'";
    return false;
  }
  const std::string where = cfg.bind + ":" + std::to_string(cfg.port);
  if (index_ == 0) {
    // SO_REUSEPORT would let us share the port with another running server without noticing:
    // probe it first without SO_REUSEPORT, as a plain server would bind.
    int probe = ::socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (probe < 0 || ::bind(probe, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
      *error = "cannot listen on " + where + ": " + std::strerror(errno);
      if (probe >= 0) ::close(probe);
      return false;
    }
    ::close(probe);
  }
  listen_fd_ = ::socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int one = 1;
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    *error = "cannot listen on " + where + ": " + std::strerror(errno);
    return false;
  }
  inbox_ = make_message_queue(cfg.queue, cfg.queue_capacity);
  if (!inbox_) {
    *error = "cannot create the pub/sub inbox on queue backend '" + cfg.queue + "'";
    return false;
  }
  inbox_bounded_ = inbox_->traits().bounded;
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epfd_ < 0 || wake_fd_ < 0) {
    *error = std::string("epoll/eventfd: ") + std::strerror(errno);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &g_listen_tag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.ptr = &g_wake_tag;
  epoll_ctl(epfd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  return true;
}

bool Worker::listen(std::string* error) {
  if (::listen(listen_fd_, 511) == 0) return true;
  const Config& cfg = server_.config();
  *error = "cannot listen on " + cfg.bind + ":" + std::to_string(cfg.port) + ": " +
           std::strerror(errno);
  return false;
}

void Worker::start(std::vector<unsigned> cpus) {
  thread_ = std::thread([this, cpus = std::move(cpus)] {
    if (!cpus.empty()) {
#ifdef KVLAB_SERVER_HAVE_TOPO
      topo::WorkerPlacement p;
      p.worker = index_;
      p.cpus = cpus;
      std::string error;
      if (!topo::bind_current_thread(p, &error))
        std::fprintf(stderr, "kvlab-server: worker %u: binding failed: %s\n", index_,
                     error.c_str());
#else
      cpu_set_t set;
      CPU_ZERO(&set);
      for (unsigned c : cpus) CPU_SET(c, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0)
        std::fprintf(stderr, "kvlab-server: worker %u: sched_setaffinity failed: %s\n", index_,
                     std::strerror(errno));
#endif
    }
    // Release: pairs with the acquire load in Server::start() that waits for the start-up log.
    server_.stats(index_).cpu.store(sched_getcpu(), std::memory_order_release);
    run();
  });
}

bool Worker::open_in_process(std::string* error) {
  const Config& cfg = server_.config();
  inbox_ = make_message_queue(cfg.queue, cfg.queue_capacity);
  if (!inbox_) {
    *error = "cannot create the pub/sub inbox on queue backend '" + cfg.queue + "'";
    return false;
  }
  inbox_bounded_ = inbox_->traits().bounded;
  prefetch_ = cfg.prefetch && server_.keyspace().prefetch({}, [](const Value&) {});  // as run()
  return true;
}

Connection& Worker::connect_in_process() {
  server_.try_admit();  // counted as accept_all() counts it; the destructor releases it
  auto* c = new Connection;
  c->id = server_.next_client_id();
  c->authenticated = !server_.auth_required();
  c->info = std::make_shared<ClientInfo>();
  c->info->id = c->id;
  c->info->worker = index_;
  c->info->addr = "in-process:0";
  c->info->laddr = "in-process:0";
  c->info->created_ms = wall_ms();
  c->info->last_ms.store(c->info->created_ms, std::memory_order_relaxed);
  server_.clients().add(c->info);
  all_.insert(c);
  by_id_.emplace(c->id, c);
  conns_.store(conns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  return *c;
}

void Worker::run_in_process(Connection& c, std::int64_t now_ms) {
  reclaim::online();
  process_input(c, now_ms);
  broadcast_tracking();
  drain_inbox();
  reclaim::offline();
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::drain_and_close_all() {
  // Stop accepting; execute what is already buffered; let pending replies leave (see below).
  if (accept_paused_until_ms_ == 0) epoll_ctl(epfd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  ::close(listen_fd_);
  listen_fd_ = -1;
  shutting_down_ = true;
  const std::int64_t now = wall_ms();
  std::vector<Connection*> conns(all_.begin(), all_.end());
  for (Connection* c : conns) {
    c->paused = false;
    process_input(*c, now);
    c->close_after_reply = true;
    flush(*c);  // half-closes it when everything was written
  }
  // A connection whose replies are all written is half-closed (FIN after the replies) and closed
  // only once the client has acknowledged every byte (SIOCOUTQ is 0) or closed its side. close()
  // earlier loses replies: with input the server never read (a pipelining client still sending),
  // or input arriving afterwards, the kernel answers with a reset and drops what the send buffer
  // still holds (tests/soak/faults_test.py saw streams cut mid-reply that way). Meanwhile input
  // is read and discarded.
  //
  // Pending replies get 2 s without progress, not 2 s in all: a client that keeps reading
  // receives every reply whole, however long its backlog (tests/soak/faults_test.py cut replies
  // in half with a fixed 2 s while 50 pipelining clients drained 16 MiB). A client that stops
  // reading is closed 2 s later, mid-reply if need be; 30 s bound the whole shutdown.
  const std::int64_t hard_deadline = wall_ms() + 30000;
  std::int64_t deadline = wall_ms() + 2000;
  epoll_event events[kMaxEvents];
  char scratch[16384];
  while (!all_.empty() && wall_ms() < deadline && wall_ms() < hard_deadline) {
    const int n = epoll_wait(epfd_, events, kMaxEvents, 50);
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &g_listen_tag || tag == &g_wake_tag) continue;
      auto* c = static_cast<Connection*>(tag);
      if (!all_.contains(c)) continue;  // closed earlier in this batch
      if (events[i].events & EPOLLERR) {
        close_connection(c);
        deadline = wall_ms() + 2000;
        continue;
      }
      if (c->write_shut && (events[i].events & (EPOLLIN | EPOLLHUP))) {
        ssize_t got;
        while ((got = ::recv(c->fd, scratch, sizeof scratch, 0)) > 0) {
        }
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          close_connection(c);  // the client closed its side: it has read what it wanted
          deadline = wall_ms() + 2000;
        }
        continue;
      }
      if (events[i].events & EPOLLHUP) {
        close_connection(c);
      } else if (events[i].events & EPOLLOUT) {
        const std::size_t before = c->out.size();
        if (!flush(*c) || c->out.size() < before) deadline = wall_ms() + 2000;
      }
    }
    conns.assign(all_.begin(), all_.end());
    for (Connection* c : conns) {
      if (!c->write_shut) continue;
      int unacked = 0;
      if (::ioctl(c->fd, SIOCOUTQ, &unacked) != 0 || unacked == 0) {
        while (::recv(c->fd, scratch, sizeof scratch, 0) > 0) {
        }
        close_connection(c);
        deadline = wall_ms() + 2000;
      } else if (c->unacked < 0 || unacked < c->unacked) {
        c->unacked = unacked;
        deadline = wall_ms() + 2000;
      }
    }
  }
  conns.assign(all_.begin(), all_.end());
  for (Connection* c : conns) close_connection(c);
}

}  // namespace kvlab::server
