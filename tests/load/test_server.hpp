// A tiny RESP server for the load generator's tests: one thread on 127.0.0.1 (port chosen by the
// kernel), answering every multibulk command with +OK at once. It can stall: after
// `pause_after_ms` from the first command it sleeps `pause_ms` once, reading and answering
// nothing meanwhile — the "server hiccup" coordinated omission hides.
//
// Every loop is bounded: poll() waits at most 20 ms, and the destructor stops and joins the
// thread (a pause is cut short when stopping).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace kvlab::load::testing {

class TestServer {
 public:
  explicit TestServer(int pause_after_ms = -1, int pause_ms = 0)
      : pause_after_ms_(pause_after_ms), pause_ms_(pause_ms) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 128) != 0)
      std::abort();
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~TestServer() {
    stop_.store(true, std::memory_order_relaxed);  // relaxed: polled; join() synchronizes
    thread_.join();
    for (auto& c : clients_) ::close(c.fd);
    ::close(listen_fd_);
  }
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Commands answered so far. Relaxed: a statistic read after the load run has joined.
  std::uint64_t commands() const { return commands_.load(std::memory_order_relaxed); }

 private:
  struct Client {
    int fd;
    std::string in, out;
  };

  // Counts the complete multibulk commands at the front of buf and erases them.
  static std::size_t take_commands(std::string& buf) {
    std::size_t pos = 0, count = 0;
    for (;;) {
      std::size_t p = pos;
      if (p >= buf.size() || buf[p] != '*') break;
      std::size_t eol = buf.find("\r\n", p);
      if (eol == std::string::npos) break;
      const long argc = std::strtol(buf.c_str() + p + 1, nullptr, 10);
      p = eol + 2;
      bool complete = true;
      for (long i = 0; i < argc; ++i) {
        if (p >= buf.size() || buf[p] != '$') {
          complete = false;
          break;
        }
        eol = buf.find("\r\n", p);
        if (eol == std::string::npos) {
          complete = false;
          break;
        }
        const long len = std::strtol(buf.c_str() + p + 1, nullptr, 10);
        p = eol + 2 + static_cast<std::size_t>(len) + 2;
        if (p > buf.size()) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      pos = p;
      ++count;
    }
    buf.erase(0, pos);
    return count;
  }

  void maybe_pause() {
    if (pause_after_ms_ < 0 || paused_ || first_command_.time_since_epoch().count() == 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - first_command_ < std::chrono::milliseconds(pause_after_ms_)) return;
    paused_ = true;
    const auto until = now + std::chrono::milliseconds(pause_ms_);
    while (std::chrono::steady_clock::now() < until && !stop_.load(std::memory_order_relaxed))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  void loop() {
    std::vector<pollfd> fds;
    char buf[65536];
    while (!stop_.load(std::memory_order_relaxed)) {
      maybe_pause();
      fds.clear();
      fds.push_back({listen_fd_, POLLIN, 0});
      for (auto& c : clients_)
        fds.push_back({c.fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        for (int i = 0; i < 64; ++i) {
          const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) break;
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_.push_back({fd, {}, {}});
        }
      }
      for (std::size_t i = 1; i < fds.size() && i - 1 < clients_.size(); ++i) {
        Client& c = clients_[i - 1];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
          if (n > 0) {
            c.in.append(buf, static_cast<std::size_t>(n));
            const std::size_t k = take_commands(c.in);
            if (k > 0 && first_command_.time_since_epoch().count() == 0)
              first_command_ = std::chrono::steady_clock::now();
            for (std::size_t j = 0; j < k; ++j) c.out += "+OK\r\n";
            commands_.fetch_add(k, std::memory_order_relaxed);
          } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            ::close(c.fd);
            c.fd = -1;
            continue;
          }
        }
        if (!c.out.empty()) {
          const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
          if (n > 0) c.out.erase(0, static_cast<std::size_t>(n));
        }
      }
      std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
    }
  }

  int pause_after_ms_, pause_ms_;
  bool paused_ = false;
  std::chrono::steady_clock::time_point first_command_{};
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> commands_{0};
  std::vector<Client> clients_;
  std::thread thread_;
};

}  // namespace kvlab::load::testing
