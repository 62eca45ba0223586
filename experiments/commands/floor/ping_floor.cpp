// The floor under PING (experiments/commands/README.md, "The floor under PING"): a single-threaded
// server that parses RESP just enough to answer PING with +PONG (and any other command with an
// empty array, so that clients' start-up queries pass), with nothing else on its path. What it
// costs per request is what the kernel's loopback TCP, the system calls and the wake-ups cost;
// kvlab-server cannot do better with the same I/O path. Two I/O paths:
//   epoll: level-triggered epoll_wait, read() per ready connection, the replies sent after the
//          event batch, one send() per connection (kvlab-server's worker loop);
//   uring: one io_uring_enter per loop iteration: multishot recv into a ring of provided
//          buffers, the sends queued as SQEs and submitted with the wait; uring-defer is the same
//          with IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN (completions are run
//          only when the thread enters the kernel to wait, not by interrupting it).
// A benchmark prototype, not a server: no limits, no error replies.
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {
constexpr std::string_view kPing = "*1\r\n$4\r\nPING\r\n";
constexpr std::string_view kPong = "+PONG\r\n";

struct Conn {
  int fd = -1;
  std::string in, out, inflight;
  bool touched = false, sending = false, closing = false;
  int ops = 0;  // uring: operations in flight
};

// Length of the complete multibulk command at the start of v, 0 if it is incomplete.
std::size_t command_length(std::string_view v) {
  auto line = [&](std::size_t at, long& num) -> std::size_t {
    const std::size_t e = v.find("\r\n", at);
    if (e == std::string_view::npos) return 0;
    num = std::strtol(std::string(v.substr(at + 1, e - at - 1)).c_str(), nullptr, 10);
    return e + 2;
  };
  long n = 0;
  std::size_t at = line(0, n);
  if (at == 0) return 0;
  for (long i = 0; i < n; ++i) {
    long len = 0;
    const std::size_t d = line(at, len);
    if (d == 0 || v.size() < d + static_cast<std::size_t>(len) + 2) return 0;
    at = d + static_cast<std::size_t>(len) + 2;
  }
  return at;
}

// Appends a PONG per complete PING (an empty array for any other command); keeps a partial one.
void process(Conn& c, const char* p, std::size_t n) {
  std::string_view v;
  if (c.in.empty()) {
    v = {p, n};
  } else {
    c.in.append(p, n);
    v = c.in;
  }
  std::size_t off = 0;
  while (off < v.size()) {
    if (v.size() - off >= kPing.size() && v.compare(off, kPing.size(), kPing) == 0) {
      c.out.append(kPong);
      off += kPing.size();
      continue;
    }
    const std::size_t len = command_length(v.substr(off));
    if (len == 0) break;
    c.out.append("*0\r\n");
    off += len;
  }
  std::string rest(v.substr(off));
  c.in = std::move(rest);
}

int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 511) != 0) {
    std::perror("listen");
    std::exit(1);
  }
  return fd;
}

void setup_conn(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

[[noreturn]] void run_epoll(int lfd) {
  int ep = epoll_create1(0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::vector<Conn*> touched;
  char buf[16384];
  epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < n; ++i) {
      auto* c = static_cast<Conn*>(evs[i].data.ptr);
      if (c == nullptr) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
        if (fd < 0) continue;
        setup_conn(fd);
        c = new Conn;
        c->fd = fd;
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        continue;
      }
      if (evs[i].events & EPOLLOUT) {
        ssize_t s = send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
        if (s > 0) c->out.erase(0, static_cast<std::size_t>(s));
        if (c->out.empty()) {
          ev.events = EPOLLIN;
          ev.data.ptr = c;
          epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        }
        continue;
      }
      ssize_t r = read(c->fd, buf, sizeof buf);
      if (r <= 0) {
        close(c->fd);  // also leaves the epoll set
        if (c->touched) {
          c->closing = true;  // freed after the batch: touched still points at it
        } else {
          delete c;
        }
        continue;
      }
      process(*c, buf, static_cast<std::size_t>(r));
      if (!c->touched) {
        c->touched = true;
        touched.push_back(c);
      }
    }
    for (Conn* c : touched) {
      c->touched = false;
      if (c->closing) {
        delete c;
        continue;
      }
      if (c->out.empty()) continue;
      ssize_t s = send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL);
      if (s > 0) c->out.erase(0, static_cast<std::size_t>(s));
      if (!c->out.empty()) {
        ev.events = EPOLLIN | EPOLLOUT;
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
      }
    }
    touched.clear();
  }
}

// user_data: pointer | op (low 2 bits; Conn is 8-aligned)
enum Op : std::uintptr_t { kAccept = 0, kRecv = 1, kSend = 2 };
constexpr unsigned kBufs = 256, kBufSize = 16384, kGroup = 0;

[[noreturn]] void run_uring(int lfd, unsigned flags) {
  io_uring ring;
  io_uring_params p{};
  p.flags = flags;
  int rc = io_uring_queue_init_params(1024, &ring, &p);
  if (rc < 0) {
    std::fprintf(stderr, "io_uring_queue_init: %s\n", std::strerror(-rc));
    std::exit(1);
  }
  auto* br = static_cast<io_uring_buf_ring*>(aligned_alloc(4096, kBufs * sizeof(io_uring_buf)));
  io_uring_buf_ring_init(br);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uintptr_t>(br);
  reg.ring_entries = kBufs;
  reg.bgid = kGroup;
  if ((rc = io_uring_register_buf_ring(&ring, &reg, 0)) != 0) {
    std::fprintf(stderr, "register_buf_ring: %s\n", std::strerror(-rc));
    std::exit(1);
  }
  std::vector<char> mem(std::size_t{kBufs} * kBufSize);
  const int mask = io_uring_buf_ring_mask(kBufs);
  for (unsigned i = 0; i < kBufs; ++i)
    io_uring_buf_ring_add(br, &mem[i * kBufSize], kBufSize, static_cast<unsigned short>(i), mask,
                          static_cast<int>(i));
  io_uring_buf_ring_advance(br, kBufs);

  auto sqe_get = [&] {
    io_uring_sqe* s = io_uring_get_sqe(&ring);
    if (s == nullptr) {
      io_uring_submit(&ring);
      s = io_uring_get_sqe(&ring);
    }
    return s;
  };
  auto arm_recv = [&](Conn* c) {
    io_uring_sqe* s = sqe_get();
    io_uring_prep_recv_multishot(s, c->fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = kGroup;
    io_uring_sqe_set_data64(s, reinterpret_cast<std::uintptr_t>(c) | kRecv);
    ++c->ops;
  };
  auto start_send = [&](Conn* c) {
    c->inflight.swap(c->out);
    c->out.clear();
    io_uring_sqe* s = sqe_get();
    io_uring_prep_send(s, c->fd, c->inflight.data(), c->inflight.size(), MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, reinterpret_cast<std::uintptr_t>(c) | kSend);
    c->sending = true;
    ++c->ops;
  };
  {
    io_uring_sqe* s = sqe_get();
    io_uring_prep_multishot_accept(s, lfd, nullptr, nullptr, 0);
    io_uring_sqe_set_data64(s, kAccept);
  }
  std::vector<Conn*> touched;
  for (;;) {
    for (Conn* c : touched) {
      c->touched = false;
      if (c->closing) {
        if (c->ops == 0) delete c;
        continue;
      }
      if (!c->sending && !c->out.empty()) start_send(c);
    }
    touched.clear();
    io_uring_submit_and_wait(&ring, 1);
    io_uring_cqe* cqe;
    unsigned head, seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      const std::uint64_t ud = cqe->user_data;
      const auto op = static_cast<Op>(ud & 3);
      auto* c = reinterpret_cast<Conn*>(ud & ~std::uint64_t{3});
      if (op == kAccept) {
        if (cqe->res >= 0) {
          setup_conn(cqe->res);
          auto* n = new Conn;
          n->fd = cqe->res;
          arm_recv(n);
        }
        if (!(cqe->flags & IORING_CQE_F_MORE)) {
          io_uring_sqe* s = sqe_get();
          io_uring_prep_multishot_accept(s, lfd, nullptr, nullptr, 0);
          io_uring_sqe_set_data64(s, kAccept);
        }
        continue;
      }
      if (op == kRecv) {
        const bool more = cqe->flags & IORING_CQE_F_MORE;
        if (!more) --c->ops;
        if (cqe->res > 0) {
          const unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
          process(*c, &mem[bid * kBufSize], static_cast<std::size_t>(cqe->res));
          io_uring_buf_ring_add(br, &mem[bid * kBufSize], kBufSize,
                                static_cast<unsigned short>(bid), mask, 0);
          io_uring_buf_ring_advance(br, 1);
          if (!c->touched) {
            c->touched = true;
            touched.push_back(c);
          }
          if (!more && !c->closing) arm_recv(c);
        } else if (cqe->res == -ENOBUFS && !c->closing) {
          if (!more) arm_recv(c);
        } else if (!c->closing) {
          c->closing = true;  // EOF or an error: the multishot recv has ended
          close(c->fd);
        }
        if (c->closing && c->ops == 0 && !c->touched) delete c;
        continue;
      }
      // kSend
      --c->ops;
      c->sending = false;
      if (cqe->res > 0 && !c->closing) {
        c->inflight.erase(0, static_cast<std::size_t>(cqe->res));
        if (!c->inflight.empty()) {
          // short send: the rest first, then whatever came since
          c->inflight.append(c->out);
          c->out.swap(c->inflight);
          c->inflight.clear();
        }
        if (!c->out.empty() && !c->touched) {
          c->touched = true;
          touched.push_back(c);
        }
      }
      if (c->closing && c->ops == 0 && !c->touched) delete c;
    }
    io_uring_cq_advance(&ring, seen);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: ping_floor PORT epoll|uring|uring-defer\n");
    return 2;
  }
  const int lfd = listen_on(std::atoi(argv[1]));
  const std::string mode = argv[2];
  if (mode == "epoll") run_epoll(lfd);
  if (mode == "uring") run_uring(lfd, 0);
  if (mode == "uring-defer")
    run_uring(lfd, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  std::fprintf(stderr, "unknown mode\n");
  return 2;
}
