#include "tools/load/connection.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvlab::load {
namespace {

// The connection being parsed on this thread (set around redisReaderGetReply).
thread_local ReplyState* t_state = nullptr;
char g_sentinel;  // every object we "create"; never dereferenced

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool parse_hex16(const char* p, std::int64_t* out) {
  std::uint64_t v = 0;
  for (int i = 0; i < 16; ++i) {
    const int d = hex_value(p[i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  *out = static_cast<std::int64_t>(v);
  return true;
}

void* create_string(const redisReadTask* task, char* str, size_t len) {
  ReplyState& s = *t_state;
  if (task->parent == nullptr) {
    s.top_type = task->type;
    if (task->type == REDIS_REPLY_ERROR) {
      s.error = true;
      s.error_text.assign(str, len < 200 ? len : 200);
    }
  } else if (task->parent->parent == nullptr) {
    if (task->idx == 0) {
      s.is_message = len == 7 && std::memcmp(str, "message", 7) == 0;
    } else if (task->idx == 2 && s.is_message && len >= kStampSize && str[0] == 'K' &&
               str[1] == 'V') {
      s.stamped = parse_hex16(str + 2, &s.intended_ns) && parse_hex16(str + 18, &s.sent_ns);
    }
  }
  return &g_sentinel;
}

void* create_array(const redisReadTask* task, int elements) {
  if (task->parent == nullptr) {
    t_state->top_type = REDIS_REPLY_ARRAY;
    t_state->elements = elements;
  }
  return &g_sentinel;
}

void* create_integer(const redisReadTask* task, long long v) {
  if (task->parent == nullptr) {
    t_state->top_type = REDIS_REPLY_INTEGER;
    t_state->integer = v;
  }
  return &g_sentinel;
}

void* create_nil(const redisReadTask* task) {
  if (task->parent == nullptr) t_state->top_type = REDIS_REPLY_NIL;
  return &g_sentinel;
}

void free_object(void*) {}

redisReplyObjectFunctions g_functions = {create_string, create_array, create_integer, create_nil,
                                         free_object};

}  // namespace

void write_stamp(char* out, std::int64_t intended_ns, std::int64_t sent_ns) {
  static constexpr char kHex[] = "0123456789abcdef";
  out[0] = 'K';
  out[1] = 'V';
  auto put = [&](char* p, std::uint64_t v) {
    for (int i = 15; i >= 0; --i, v >>= 4) p[i] = kHex[v & 15];
  };
  put(out + 2, static_cast<std::uint64_t>(intended_ns));
  put(out + 18, static_cast<std::uint64_t>(sent_ns));
}

Connection::Connection() : reader_(redisReaderCreateWithFunctions(&g_functions)) {}

Connection::~Connection() {
  close();
  if (reader_) redisReaderFree(reader_);
}

Connection::Connection(Connection&& o) noexcept
    : fd_(o.fd_),
      reader_(o.reader_),
      out_(std::move(o.out_)),
      out_off_(o.out_off_),
      state_(std::move(o.state_)) {
  o.fd_ = -1;
  o.reader_ = nullptr;
}

void Connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Connection::connect(const std::string& host, std::uint16_t port, double timeout_s,
                         std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res); rc != 0) {
    *error = "cannot resolve " + host + ": " + gai_strerror(rc);
    return false;
  }
  std::string last = "no address";
  const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_s * 1e9);
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd_ < 0) {
      last = std::strerror(errno);
      continue;
    }
    int rc = ::connect(fd_, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      if (wait_io(POLLOUT, deadline)) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::freeaddrinfo(res);
      return true;
    }
    last = std::strerror(errno);
    close();
  }
  ::freeaddrinfo(res);
  *error = "cannot connect to " + host + ":" + port_text + ": " + last;
  return false;
}

bool Connection::wait_io(short events, std::int64_t deadline_ns) {
  for (;;) {
    const std::int64_t left = deadline_ns - now_ns();
    if (left <= 0) return false;
    pollfd p{fd_, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left / 1000000 + 1));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

bool Connection::flush() {
  while (out_off_ < out_.size()) {
    const ssize_t n = ::send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
    if (n > 0) {
      out_off_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return false;
  }
  if (out_off_ == out_.size()) {
    out_.clear();
    out_off_ = 0;
  } else if (out_off_ > (1u << 20)) {
    out_.erase(0, out_off_);
    out_off_ = 0;
  }
  return true;
}

bool Connection::read_some(char* buf, std::size_t cap) {
  for (int rounds = 0; rounds < 8; ++rounds) {
    const ssize_t n = ::recv(fd_, buf, cap, 0);
    if (n > 0) {
      redisReaderFeed(reader_, buf, static_cast<size_t>(n));
      if (static_cast<std::size_t>(n) < cap) return true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
  return true;
}

int Connection::next_reply() {
  t_state = &state_;
  void* reply = nullptr;
  const int rc = redisReaderGetReply(reader_, &reply);
  t_state = nullptr;
  if (rc != REDIS_OK) return -1;
  return reply != nullptr ? 1 : 0;
}

}  // namespace kvlab::load
