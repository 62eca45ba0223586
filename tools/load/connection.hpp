// One RESP client connection of kvlab load: a non-blocking TCP socket, an output buffer that
// batches every request due in one loop iteration into one send(), and a hiredis reader.
//
// The reader is created with our own object functions: they build no reply objects (every
// create* returns a sentinel) and only note, in the connection's ReplyState, what the load
// generator needs: the top-level type, error replies, an integer value, and for pub/sub
// "message" arrays the timestamps stamped into the payload. hiredis calls them synchronously
// from redisReaderGetReply on the thread that owns the connection; a thread-local pointer tells
// them which connection is being parsed. Elements of one array may be created across several
// GetReply calls (the array arrived in pieces), so the state lives in the connection and is reset
// only after a complete reply has been consumed.
//
// Thread safety: a connection belongs to one thread.
#pragma once

#include <hiredis/read.h>
#include <poll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>

namespace kvlab::load {

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct ReplyState {
  int top_type = 0;  // REDIS_REPLY_*
  bool error = false;
  long long integer = 0;
  long long elements = -1;  // top-level array: its length (0 = empty, a miss for HGETALL)
  bool is_message = false;  // pub/sub "message" array
  bool stamped = false;     // its payload carried our timestamps
  std::int64_t intended_ns = 0;
  std::int64_t sent_ns = 0;
  std::string error_text;  // first error reply seen (for messages), capped
};

// Pub/sub payload: "KV" + 16 hex digits intended send + 16 hex digits actual send, padded.
inline constexpr std::size_t kStampSize = 34;
void write_stamp(char* out, std::int64_t intended_ns, std::int64_t sent_ns);

class Connection {
 public:
  Connection();
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  Connection(Connection&& o) noexcept;

  // Blocking connect with a timeout, then non-blocking mode and TCP_NODELAY.
  bool connect(const std::string& host, std::uint16_t port, double timeout_s, std::string* error);
  int fd() const { return fd_; }
  void close();

  std::string& out() { return out_; }
  bool has_output() const { return out_off_ < out_.size(); }
  // Sends as much of out() as the socket takes. Returns false on a socket error.
  bool flush();

  // Reads what is available (bounded). Returns false on EOF/error.
  bool read_some(char* buf, std::size_t cap);
  // Next complete reply: 1 = got one (see state()), 0 = need more bytes, -1 = protocol error.
  int next_reply();
  ReplyState& state() { return state_; }

  // Blocking helpers for set-up: send out(), then wait for n complete replies (until timeout).
  // Returns false on timeout/error; every reply is passed to on_reply (may be empty).
  template <typename F>
  bool roundtrip(std::size_t n, double timeout_s, std::string* error, F&& on_reply);

 private:
  bool wait_io(short events, std::int64_t deadline_ns);

  int fd_ = -1;
  redisReader* reader_ = nullptr;
  std::string out_;
  std::size_t out_off_ = 0;
  ReplyState state_;
};

template <typename F>
bool Connection::roundtrip(std::size_t n, double timeout_s, std::string* error, F&& on_reply) {
  const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(timeout_s * 1e9);
  char buf[16384];
  while (has_output()) {
    if (!flush()) return *error = "send failed", false;
    if (has_output() && !wait_io(POLLOUT, deadline)) return *error = "send timed out", false;
  }
  std::size_t got = 0;
  while (got < n) {
    const int r = next_reply();
    if (r < 0) return *error = "protocol error in reply", false;
    if (r == 1) {
      ++got;
      on_reply(state_);
      state_ = ReplyState{};
      continue;
    }
    if (!wait_io(POLLIN, deadline)) return *error = "timed out waiting for a reply", false;
    if (!read_some(buf, sizeof buf)) return *error = "connection closed by the server", false;
  }
  return true;
}

}  // namespace kvlab::load
