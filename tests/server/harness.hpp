// Test harness for the server suite: start a real kvlab-server on a free loopback port, talk to
// it with hiredis (commands) or a raw socket (protocol edge cases), stop it by pid.
//
// Every wait is bounded in time; every process started here is stopped by pid in a destructor.
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kvtest {

inline std::string server_path() {
  const char* p = std::getenv("KVLAB_SERVER");
  return p != nullptr ? p : "build/server/kvlab-server";
}

// A port that was free a moment ago: bind port 0, read it back, close.
inline int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline void raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

inline int connect_raw(int port, int timeout_ms = 2000) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads until the peer closes or the timeout passes; *closed tells which.
inline std::string read_until_close(int fd, int timeout_ms, bool* closed) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  *closed = false;
  char buf[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      *closed = true;
      break;
    }
    if (n < 0) continue;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// An owned copy of a hiredis reply, easy to compare in CHECKs.
struct Reply {
  int type = 0;  // REDIS_REPLY_*
  std::string str;
  long long integer = 0;
  std::vector<Reply> elements;

  bool is_nil() const { return type == REDIS_REPLY_NIL; }
  bool is_error() const { return type == REDIS_REPLY_ERROR; }
  bool is_status(std::string_view s) const { return type == REDIS_REPLY_STATUS && str == s; }
};

inline Reply copy_reply(const redisReply* r) {
  Reply out;
  if (r == nullptr) {
    out.type = -1;
    return out;
  }
  out.type = r->type;
  out.integer = r->integer;
  if (r->str != nullptr) out.str.assign(r->str, r->len);
  for (std::size_t i = 0; i < r->elements; ++i) out.elements.push_back(copy_reply(r->element[i]));
  return out;
}

class Client {
 public:
  explicit Client(int port, int timeout_ms = 5000) {
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ctx_ = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (ctx_ != nullptr && ctx_->err == 0) redisSetTimeout(ctx_, tv);
  }
  ~Client() {
    if (ctx_ != nullptr) redisFree(ctx_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool ok() const { return ctx_ != nullptr && ctx_->err == 0; }
  redisContext* raw() { return ctx_; }

  Reply cmd(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), lens.data()));
    Reply out = copy_reply(r);
    if (r != nullptr) freeReplyObject(r);
    return out;
  }
  // Convenience: whitespace-separated words, no quoting.
  Reply operator()(std::string_view line) {
    std::vector<std::string> args;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      std::size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) args.emplace_back(line.substr(i, j - i));
      i = j;
    }
    return cmd(args);
  }

  void append(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), lens.data());
  }
  Reply get_reply() {
    void* r = nullptr;
    if (redisGetReply(ctx_, &r) != REDIS_OK) {
      Reply failed;
      failed.type = -1;
      return failed;
    }
    Reply out = copy_reply(static_cast<redisReply*>(r));
    freeReplyObject(r);
    return out;
  }

 private:
  redisContext* ctx_ = nullptr;
};

// A kvlab-server child process on a free loopback port.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> extra = {}, bool quiet = true) {
    raise_fd_limit();
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = free_port();
      std::vector<std::string> args = {server_path(), "--port", std::to_string(port_)};
      args.insert(args.end(), extra.begin(), extra.end());
      // The suite's execution mode (tests/meson.build, server_modes), unless the test picks one.
      const char* mode = std::getenv("KVLAB_SERVER_MODE");
      if (mode != nullptr && *mode != '\0' &&
          std::find(extra.begin(), extra.end(), "--mode") == extra.end()) {
        args.push_back("--mode");
        args.push_back(mode);
      }
      pid_ = ::fork();
      if (pid_ == 0) {
        if (quiet) {
          const int devnull = ::open("/dev/null", O_WRONLY);
          ::dup2(devnull, 2);
          ::dup2(devnull, 1);
        }
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        std::_Exit(127);
      }
      if (!wait_ready()) {
        stop();
        pid_ = -1;
      }
    }
  }
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then wait up to 10 s (SIGKILL after). Returns the exit status (or -1).
  int stop(int sig = SIGTERM) {
    if (pid_ <= 0) return exit_status_;
    ::kill(pid_, sig);
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    exit_status_ = -1;
    return exit_status_;
  }

  // True when the process has exited on its own (within timeout_ms); fills the status.
  bool wait_exit(int timeout_ms, int* exit_code) {
    int status = 0;
    for (int i = 0; i < timeout_ms / 10; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        *exit_code = exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Resident memory of the server in bytes (from /proc).
  std::size_t rss_bytes() const {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/statm", pid_);
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) return 0;
    unsigned long pages = 0, rss = 0;
    if (std::fscanf(f, "%lu %lu", &pages, &rss) != 2) rss = 0;
    std::fclose(f);
    return rss * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  }

 private:
  bool wait_ready() {
    for (int i = 0; i < 500; ++i) {  // up to 10 s
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;  // exited (port taken?)
        return false;
      }
      const int fd = connect_raw(port_);
      if (fd >= 0) {
        ::close(fd);
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
};

// Runs a command line, returns its exit status (the shell's) and output.
inline int run_capture(const std::string& cmdline, std::string* out) {
  FILE* p = ::popen((cmdline + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}


// redis-server's full path from PATH, or empty when it is not installed.
inline std::string find_redis_server() {
  const char* path = std::getenv("PATH");
  std::string p = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t i = 0; i <= p.size();) {
    std::size_t j = p.find(':', i);
    if (j == std::string::npos) j = p.size();
    const std::string cand = p.substr(i, j - i) + "/redis-server";
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    i = j + 1;
  }
  return {};
}

// The oracle: a redis-server child on a free loopback port, persistence off, stopped by pid.
// running() is false when redis-server is not installed (the caller skips its comparison).
class RedisProcess {
 public:
  explicit RedisProcess(std::vector<std::string> extra = {}) {
    const std::string path = find_redis_server();
    if (path.empty()) return;
    for (int attempt = 0; attempt < 5 && pid_ <= 0; ++attempt) {
      port_ = free_port();
      std::vector<std::string> args = {path,     "--port",       std::to_string(port_),
                                       "--bind", "127.0.0.1",    "--save",
                                       "",       "--appendonly", "no",
                                       "--daemonize", "no"};
      args.insert(args.end(), extra.begin(), extra.end());
      pid_ = ::fork();
      if (pid_ == 0) {
        const int devnull = ::open("/dev/null", O_WRONLY);
        ::dup2(devnull, 1);
        ::dup2(devnull, 2);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        std::_Exit(127);
      }
      bool ready = false;
      for (int i = 0; i < 250 && !ready; ++i) {  // up to 5 s
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          break;
        }
        const int fd = connect_raw(port_);
        if (fd >= 0) {
          ::close(fd);
          ready = true;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
      if (!ready) stop();
    }
  }
  ~RedisProcess() { stop(); }
  RedisProcess(const RedisProcess&) = delete;
  RedisProcess& operator=(const RedisProcess&) = delete;
  bool running() const { return pid_ > 0; }
  int port() const { return port_; }

 private:
  void stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace kvtest
