// Client-side caching (CLIENT TRACKING) against a real kvlab-server: RESP3 invalidation pushes,
// RESP2 redirection to a __redis__:invalidate subscriber, BCAST prefixes, NOLOOP, OPTIN/OPTOUT
// with CLIENT CACHING, FLUSHALL's null invalidation, the table bound, a vanished redirect target,
// INFO's figures, Redis's error texts; every scenario's bytes compared with a redis-server child
// when one is installed; and a concurrency test (writers on several workers, a caching reader).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/server/harness.hpp"

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "4"});
  return s;
}

// One parsed RESP2/RESP3 value (enough for the tests: type byte, text, children).
struct Frame {
  char type = 0;
  std::string str;
  std::vector<Frame> elems;
};

// A raw connection: sends commands, returns whole top-level replies (exact bytes) one at a time.
class Conn {
 public:
  explicit Conn(int port) : fd_(kvtest::connect_raw(port)) { REQUIRE(fd_ >= 0); }
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  void close() {
    ::close(fd_);
    fd_ = -1;
  }

  void send(const std::vector<std::string>& args) {
    std::string s = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    REQUIRE(kvtest::send_all(fd_, s));
  }
  // The next complete top-level value, or "" when none arrives within timeout_ms.
  std::string next(int timeout_ms = 2000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool polled = false;  // poll at least once, even with a timeout of 0
    for (;;) {
      std::size_t end = 0;
      if (!buf_.empty() && parse(0, &end, nullptr)) {
        std::string r = buf_.substr(0, end);
        buf_.erase(0, end);
        return r;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left < 0 && polled) return {};
      polled = true;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 0))) <= 0) continue;
      char tmp[65536];
      const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n <= 0) return {};
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }
  std::string call(const std::vector<std::string>& args) {
    send(args);
    return next();
  }
  // Everything that arrives within ms (replies and pushes concatenated).
  std::string drain(int ms) {
    std::string all;
    for (std::string r = next(ms); !r.empty(); r = next(ms)) all += r;
    return all;
  }
  // The next value, parsed.
  bool next_frame(Frame* f, int timeout_ms) {
    const std::string bytes = next(timeout_ms);
    if (bytes.empty()) return false;
    std::size_t end = 0;
    std::string saved;
    saved.swap(buf_);
    buf_ = bytes;
    parse(0, &end, f);
    buf_.swap(saved);
    return true;
  }

 private:
  // Whether a whole value starts at `at` (*end: where it ends); fills *f when given.
  bool parse(std::size_t at, std::size_t* end, Frame* f) {
    const std::size_t eol = buf_.find("\r\n", at);
    if (eol == std::string::npos) return false;
    const char t = buf_[at];
    const std::string line = buf_.substr(at + 1, eol - at - 1);
    std::size_t pos = eol + 2;
    if (f) *f = Frame{t, {}, {}};
    long long kids = 0;
    switch (t) {
      case '$':
      case '=':
      case '!': {
        const long long n = std::stoll(line);
        if (n >= 0) {
          if (buf_.size() < pos + static_cast<std::size_t>(n) + 2) return false;
          if (f) f->str = buf_.substr(pos, static_cast<std::size_t>(n));
          pos += static_cast<std::size_t>(n) + 2;
        } else if (f) {
          f->type = '_';
        }
        break;
      }
      case '*':
      case '~':
      case '>':
        kids = std::max(0LL, std::stoll(line));
        if (f && std::stoll(line) < 0) f->type = '_';
        break;
      case '%':
        kids = 2 * std::stoll(line);
        break;
      default:
        if (f) f->str = line;
        break;
    }
    for (long long i = 0; i < kids; ++i) {
      Frame child;
      if (!parse(pos, &pos, f ? &child : nullptr)) return false;
      if (f) f->elems.push_back(std::move(child));
    }
    *end = pos;
    return true;
  }

  int fd_;
  std::string buf_;
};

std::vector<std::string> words(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    if (j > i) out.emplace_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string id_of(Conn& c) {
  const std::string r = c.call({"CLIENT", "ID"});
  REQUIRE(r.size() > 3);
  return r.substr(1, r.size() - 3);
}

std::string push_invalidate(std::vector<std::string> keys) {
  std::string s = ">2\r\n$10\r\ninvalidate\r\n*" + std::to_string(keys.size()) + "\r\n";
  for (const auto& k : keys) s += "$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
  return s;
}

constexpr int kQuietMs = 150;  // how long "nothing more arrives" is waited for

// ---- scenarios: each returns a transcript; run against kvlab and (when installed) Redis ----

// Client ids differ between servers: the transcript replaces them by names.
std::string scrub(std::string s, const std::map<std::string, std::string>& ids) {
  for (const auto& [id, name] : ids) {
    for (const std::string& pat :
         {":" + id + "\r\n", "$" + std::to_string(id.size()) + "\r\n" + id + "\r\n"}) {
      for (std::size_t p = s.find(pat); p != std::string::npos; p = s.find(pat, p + 1))
        s.replace(p, pat.size(), "<" + name + ">");
    }
  }
  return s;
}

std::string errors_scenario(int port) {
  Conn a(port), b(port);
  std::string t;
  const std::string bid = id_of(b);
  for (const char* line : {"CLIENT TRACKING",
                           "CLIENT TRACKING on PREFIX a",
                           "CLIENT TRACKING on OPTIN OPTOUT",
                           "CLIENT TRACKING on REDIRECT 999999",
                           "CLIENT TRACKING on REDIRECT abc",
                           "CLIENT TRACKING on REDIRECT -1",
                           "CLIENT TRACKING on BCAST OPTIN",
                           "CLIENT TRACKING on BCAST OPTOUT",
                           "CLIENT TRACKING maybe",
                           "CLIENT TRACKING on foo",
                           "CLIENT TRACKING on REDIRECT",
                           "CLIENT TRACKING on BCAST PREFIX a PREFIX ab",
                           "CLIENT TRACKING on BCAST PREFIX ab PREFIX a",
                           "CLIENT TRACKING on BCAST PREFIX x PREFIX x",
                           "CLIENT TRACKING off PREFIX a",
                           "CLIENT CACHING yes",
                           "CLIENT CACHING maybe",
                           "CLIENT CACHING",
                           "CLIENT GETREDIR",
                           "CLIENT GETREDIR x",
                           "CLIENT TRACKINGINFO",
                           "CLIENT TRACKINGINFO x",
                           "CLIENT TRACKING on OPTIN",
                           "CLIENT CACHING no",
                           "CLIENT CACHING maybe",
                           "CLIENT TRACKING on OPTOUT",
                           "CLIENT CACHING yes",
                           "CLIENT TRACKINGINFO",
                           "GET k",
                           "CLIENT TRACKINGINFO",
                           "CLIENT TRACKING on BCAST",
                           "CLIENT TRACKING off",
                           "CLIENT TRACKING on OPTOUT NOLOOP",
                           "CLIENT CACHING no",
                           "CLIENT TRACKINGINFO",
                           "CLIENT TRACKING off",
                           "CLIENT TRACKING on BCAST PREFIX a",
                           "CLIENT TRACKING on BCAST PREFIX ab",
                           "CLIENT TRACKING on BCAST PREFIX b PREFIX c",
                           "CLIENT TRACKING on",
                           "CLIENT TRACKINGINFO",
                           "CLIENT TRACKING off",
                           "CLIENT TRACKING on REDIRECT 0",
                           "CLIENT TRACKINGINFO",
                           "CLIENT TRACKING on OPTIN NOLOOP",
                           "RESET",
                           "CLIENT TRACKINGINFO"}) {
    t += std::string(line) + " -> " + a.call(words(line));
  }
  a.call({"CLIENT", "TRACKING", "on", "REDIRECT", bid, "REDIRECT", bid});
  t +=
      "redirect twice -> " + a.call({"CLIENT", "TRACKING", "on", "REDIRECT", bid, "REDIRECT", bid});
  t += "redirect -> " + a.call({"CLIENT", "TRACKING", "on", "REDIRECT", bid});
  t += "getredir -> " + a.call({"CLIENT", "GETREDIR"});
  return scrub(t, {{bid, "b"}});
}

// Default mode over RESP3: one push per key read, after the reply, then nothing until read again.
// Writes and reads of one key inside one EXEC: a read after the write leaves the key tracked and
// sends nothing about that write (Redis invalidates at the write, before the read registers); a
// write after the read invalidates, after EXEC's reply.
std::string exec_scenario(int port) {
  Conn a(port), w(port);
  std::string t;
  a.call({"HELLO", "3"});
  t += a.call({"CLIENT", "TRACKING", "on"});
  t += a.call({"MULTI"});
  t += a.call({"SET", "k", "1"});
  t += a.call({"GET", "k"});
  t += a.call({"EXEC"});
  t += "|exec " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"SET", "k", "2"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += a.call({"MULTI"});
  t += a.call({"GET", "j"});
  t += a.call({"SET", "j", "x"});
  t += a.call({"EXEC"});
  t += "|exec2 " + a.drain(kQuietMs) + "|";
  return t;
}

// A tracking client blocked in BLMOVE that a push serves: its reply, then the invalidation of
// the destination the move wrote, then the reply of the command it pipelined behind BLMOVE
// (Redis sends the served command's own invalidations right after its reply).
std::string blmove_scenario(int port) {
  Conn a(port), w(port);
  std::string t;
  w.call({"DEL", "src", "dst"});
  w.call({"RPUSH", "dst", "a"});
  a.call({"HELLO", "3"});
  t += a.call({"CLIENT", "TRACKING", "on"});
  t += a.call({"LRANGE", "dst", "0", "-1"});
  a.send({"BLMOVE", "src", "dst", "LEFT", "LEFT", "0"});
  a.send({"PING"});
  for (int i = 0; i < 500; ++i) {  // bounded: 5 s
    if (w.call({"INFO", "clients"}).find("\r\nblocked_clients:1\r\n") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  t += "|w " + w.call({"RPUSH", "src", "foo"});
  t += "|a " + a.drain(kQuietMs) + "|";
  return t;
}

std::string resp3_scenario(int port) {
  Conn a(port), w(port);
  std::string t;
  a.call({"HELLO", "3"});
  t += a.call({"CLIENT", "TRACKING", "on"});
  t += a.call({"GET", "k"});
  t += a.call({"MGET", "m1", "m2"});
  t += a.call({"HGET", "h", "f"});
  t += "|w " + w.call({"SET", "k", "1"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"SET", "k", "2"});
  t += "|again " + a.drain(kQuietMs) + "|";  // forgotten: nothing
  t += "|w " + w.call({"MSET", "m1", "x", "m2", "y", "zz", "z"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"HSET", "h", "f", "v"});
  t += "|a " + a.drain(kQuietMs) + "|";
  // The client's own write (no NOLOOP): the push follows the reply.
  t += a.call({"GET", "k"});
  a.send({"SET", "k", "3"});
  t += "|self " + a.drain(kQuietMs) + "|";
  t += a.call({"GET", "gone"});
  t += "|w " + w.call({"SET", "gone", "v", "PX", "50"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += a.call({"GET", "gone"});
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  t += "|w " + w.call({"GET", "gone"});  // expired: the deletion invalidates
  t += "|expired " + a.drain(300) + "|";
  t += a.call({"GET", "k"});
  t += "|w " + w.call({"FLUSHALL"});
  t += "|flush " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"SET", "k", "4"});
  t += "|after flush " + a.drain(kQuietMs) + "|";  // the table was emptied
  return t;
}

// RESP2 tracking client redirecting to a RESP2 subscriber of __redis__:invalidate.
std::string redirect_scenario(int port) {
  Conn sub(port), a(port), w(port);
  std::string t;
  const std::string sid = id_of(sub);
  t += sub.call({"SUBSCRIBE", "__redis__:invalidate"});
  t += a.call({"CLIENT", "TRACKING", "on", "REDIRECT", sid});
  t += a.call({"CLIENT", "GETREDIR"});
  t += a.call({"GET", "r1"});
  t += a.call({"GET", "r2"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"MSET", "r1", "1", "r2", "2"});
  t += "|sub " + sub.drain(kQuietMs) + "|";
  t += "|w " + w.call({"FLUSHDB"});
  t += "|sub flush " + sub.drain(kQuietMs) + "|";
  // A RESP2 redirect target not subscribed receives nothing.
  Conn plain(port);
  const std::string pid = id_of(plain);
  t += a.call({"CLIENT", "TRACKING", "on", "REDIRECT", pid});
  t += a.call({"GET", "r3"});
  t += "|w " + w.call({"SET", "r3", "1"});
  t += "|plain " + plain.drain(kQuietMs) + "|";
  // The target goes away: a RESP3 tracking client is told at the next invalidation.
  Conn b(port);
  b.call({"HELLO", "3"});
  t += b.call({"CLIENT", "TRACKING", "on", "REDIRECT", sid});
  t += b.call({"GET", "r4"});
  sub.close();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  t += "|w " + w.call({"SET", "r4", "1"});
  t += "|broken " + b.drain(kQuietMs) + "|";
  t += b.call({"CLIENT", "TRACKINGINFO"});
  return scrub(t, {{sid, "sub"}, {pid, "plain"}});
}

// A redirect target that QUITs is gone once it has read the OK: the next invalidation, written
// at once by a client that may be on another worker, reports the redirect broken (the Redis
// suite's "tracking redir broken" test relies on it). Repeated, because the window between the
// reply and the close is short. Returns how many rounds did not see the broken redirect.
int quit_redirect_misses(int port, int rounds) {
  Conn b(port), w(port);
  b.call({"HELLO", "3"});
  int misses = 0;
  for (int i = 0; i < rounds; ++i) {
    Conn target(port);
    const std::string tid = id_of(target);
    b.call({"CLIENT", "TRACKING", "on", "REDIRECT", tid});
    b.call({"GET", "qkey"});
    if (target.call({"QUIT"}) != "+OK\r\n") return rounds;
    w.call({"SET", "qkey", std::to_string(i)});
    if (b.next(2000).find("tracking-redir-broken") == std::string::npos) ++misses;
    b.drain(0);
    b.call({"CLIENT", "TRACKING", "off"});
  }
  return misses;
}

// BCAST with prefixes and NOLOOP; OPTIN and OPTOUT with CLIENT CACHING.
std::string modes_scenario(int port) {
  Conn a(port), b(port), w(port);
  std::string t;
  a.call({"HELLO", "3"});
  b.call({"HELLO", "3"});
  t += a.call({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "obj:"});
  t += "|w " + w.call({"MSET", "user:2", "a", "x", "b", "user:1", "c", "obj:9", "d"});
  t += "|bcast " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"SET", "nomatch", "1"});
  t += "|none " + a.drain(kQuietMs) + "|";
  t += a.call({"CLIENT", "TRACKING", "off"});
  t += a.call({"CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"});  // every key (prefix "")
  t += a.call({"SET", "mine", "1"});
  t += "|noloop " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"SET", "theirs", "1"});
  t += "|all " + a.drain(kQuietMs) + "|";
  t += a.call({"CLIENT", "TRACKINGINFO"});
  t += a.call({"CLIENT", "TRACKING", "off"});
  // Default mode with NOLOOP: own writes are not reported.
  t += a.call({"CLIENT", "TRACKING", "on", "NOLOOP"});
  t += a.call({"GET", "n1"});
  t += a.call({"SET", "n1", "x"});
  t += "|own " + a.drain(kQuietMs) + "|";
  t += a.call({"GET", "n1"});
  t += "|w " + w.call({"SET", "n1", "y"});
  t += "|other " + a.drain(kQuietMs) + "|";
  t += a.call({"CLIENT", "TRACKING", "off"});
  // OPTIN: only the read right after CACHING YES is remembered.
  t += b.call({"CLIENT", "TRACKING", "on", "OPTIN"});
  t += b.call({"GET", "o1"});
  t += b.call({"CLIENT", "CACHING", "yes"});
  t += b.call({"GET", "o2"});
  t += b.call({"GET", "o3"});
  t += "|w " + w.call({"MSET", "o1", "1", "o2", "2", "o3", "3"});
  t += "|optin " + b.drain(kQuietMs) + "|";
  t += b.call({"CLIENT", "TRACKING", "off"});
  // OPTOUT: every read except the one right after CACHING NO.
  t += b.call({"CLIENT", "TRACKING", "on", "OPTOUT"});
  t += b.call({"GET", "p1"});
  t += b.call({"CLIENT", "CACHING", "no"});
  t += b.call({"GET", "p2"});
  t += b.call({"GET", "p3"});
  t += "|w " + w.call({"MSET", "p1", "1", "p2", "2", "p3", "3"});
  t += "|optout " + b.drain(kQuietMs) + "|";
  return t;
}

// Scripts: a read command a script runs remembers the keys the script declared (KEYS), not the
// keys it reads; a script that runs no read command (a write, PING) remembers nothing, EVAL_RO
// and FCALL_RO included.
std::string scripts_scenario(int port) {
  Conn a(port), w(port);
  std::string t;
  a.call({"HELLO", "3"});
  t += a.call({"FUNCTION", "LOAD", "REPLACE",
               "#!lua name=tracklib\nredis.register_function{function_name='rd', "
               "callback=function(k) return redis.call('get', 'sk3') end, flags={'no-writes'}}"});
  t += a.call({"CLIENT", "TRACKING", "on"});
  t += a.call({"EVAL", "redis.call('set', 'sk3', 'bar')", "2", "sk1", "sk2"});
  t += "|w " + w.call({"MSET", "sk1", "1", "sk2", "1", "sk3", "1"});
  t += "|write " + a.drain(kQuietMs) + "|";
  t += a.call({"EVAL", "return redis.call('get', 'sk3')", "2", "sk1", "sk2"});
  t += "|w " + w.call({"SET", "sk3", "2"});
  t += "|read key " + a.drain(kQuietMs) + "|";
  t += "|w " + w.call({"MSET", "sk2", "2", "sk1", "2"});
  t += "|declared " + a.drain(kQuietMs) + "|";
  t += a.call({"EVAL_RO", "return redis.call('ping')", "2", "sk1", "sk2"});
  t += "|w " + w.call({"MSET", "sk2", "3", "sk1", "3"});
  t += "|ro ping " + a.drain(kQuietMs) + "|";
  t += a.call({"EVAL_RO", "return redis.call('get', KEYS[1])", "2", "sk1", "sk2"});
  t += "|w " + w.call({"MSET", "sk2", "4", "sk1", "4"});
  t += "|ro read " + a.drain(kQuietMs) + "|";
  t += a.call({"FCALL_RO", "rd", "1", "sk2"});
  t += "|w " + w.call({"MSET", "sk3", "5", "sk2", "5"});
  t += "|fcall " + a.drain(kQuietMs) + "|";
  return t;
}

std::string info_field(Conn& c, const std::string& section, const std::string& name) {
  const std::string r = c.call({"INFO", section});
  const std::size_t p = r.find(name + ":");
  if (p == std::string::npos) return "?";
  return r.substr(p + name.size() + 1, r.find("\r\n", p) - p - name.size() - 1);
}

}  // namespace

TEST_CASE("CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO answer as Redis, errors included") {
  const std::string mine = errors_scenario(server().port());
  CHECK(mine.find("CLIENT TRACKING on PREFIX a -> -ERR PREFIX option requires BCAST mode to be "
                  "enabled\r\n") != std::string::npos);
  CHECK(mine.find("CLIENT TRACKING on OPTIN OPTOUT -> -ERR You can't specify both OPTIN mode and "
                  "OPTOUT mode\r\n") != std::string::npos);
  CHECK(mine.find("CLIENT TRACKING on REDIRECT 999999 -> -ERR The client ID you want redirect to "
                  "does not exist\r\n") != std::string::npos);
  CHECK(mine.find("CLIENT CACHING yes -> -ERR CLIENT CACHING can be called only when the client "
                  "is in tracking mode with OPTIN or OPTOUT mode enabled\r\n") !=
        std::string::npos);
  // RESET turns tracking off, as Redis 7.0's clearClientConnectionState does.
  CHECK(mine.find("RESET -> +RESET\r\nCLIENT TRACKINGINFO -> *6\r\n$5\r\nflags\r\n*1\r\n$3\r\n"
                  "off\r\n") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;  // the oracle is optional
  CHECK(mine == errors_scenario(redis.port()));
}

TEST_CASE("A RESP3 tracking client gets one invalidate push per key it read, then nothing") {
  const std::string mine = resp3_scenario(server().port());
  CHECK(mine.find("|a " + push_invalidate({"k"}) + "|") != std::string::npos);
  CHECK(mine.find("|again |") != std::string::npos);
  CHECK(mine.find("|self +OK\r\n" + push_invalidate({"k"})) != std::string::npos);
  CHECK(mine.find("|flush >2\r\n$10\r\ninvalidate\r\n_\r\n|") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == resp3_scenario(redis.port()));
}

// Property: whichever workers the two clients land on, the served client's reply, its
// invalidation and the reply of its next command arrive in that order (the reply and the
// invalidation travel together to its worker; its next command runs after both).
TEST_CASE("An unblocked BLMOVE's client gets its reply, then the invalidation, then the next") {
  const std::string want = "|a $3\r\nfoo\r\n" + push_invalidate({"dst"}) + "+PONG\r\n|";
  int ok = 0;
  for (int i = 0; i < 25; ++i) {
    const std::string mine = blmove_scenario(server().port());
    if (mine.find(want) != std::string::npos) {
      ++ok;
    } else {
      CAPTURE(mine);
      FAIL_CHECK("out of order in run " << i);
    }
  }
  CHECK(ok == 25);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(blmove_scenario(server().port()) == blmove_scenario(redis.port()));
}

TEST_CASE("A key written then read in one EXEC stays tracked, with no message about the write") {
  const std::string mine = exec_scenario(server().port());
  CHECK(mine.find("|exec |") != std::string::npos);
  CHECK(mine.find("|a " + push_invalidate({"k"}) + "|") != std::string::npos);
  CHECK(mine.find("|exec2 " + push_invalidate({"j"}) + "|") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == exec_scenario(redis.port()));
}

TEST_CASE("A RESP2 client redirects invalidations to a __redis__:invalidate subscriber") {
  const std::string mine = redirect_scenario(server().port());
  CHECK(mine.find("|sub *3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\nr1") !=
        std::string::npos);
  CHECK(mine.find("|plain |") != std::string::npos);
  CHECK(mine.find("|broken >2\r\n$21\r\ntracking-redir-broken\r\n<sub>") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == redirect_scenario(redis.port()));
}

TEST_CASE("After QUIT's OK the client is gone: a redirect to it is broken at once") {
  CHECK(quit_redirect_misses(server().port(), 40) == 0);
}

// Expired keys under NOLOOP: the expiry's invalidation names no client, so the client that wrote
// the key still hears of its expiry, whether the active sweep removes it (with no command running
// afterwards: also after an EXEC, whose commands all see the time it started) or a read of the
// same client finds it expired.
std::string expiry_scenario(int port) {
  Conn a(port), r(port);
  std::string t;
  r.call({"HELLO", "3"});
  a.call({"HELLO", "3"});
  const std::string rid = id_of(r);
  const std::map<std::string, std::string> ids{{rid, "redirect"}};
  t += a.call({"CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", rid, "NOLOOP"});
  t += a.call({"SET", "ekey", "v", "PX", "1"});
  t += a.call({"SET", "ekeyother", "v"});
  // The sweep's message comes on its own: nothing else is sent until it has (or 3 s passed).
  t += "|active " + r.next(3000) + "|";
  t += a.call({"CLIENT", "TRACKING", "off"});
  t += a.call({"CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", rid, "NOLOOP"});
  t += a.call({"MULTI"});
  t += a.call({"SET", "lkey", "v", "PX", "1"});
  t += a.call({"SET", "lkeyother", "v"});
  t += a.call({"DEBUG", "SLEEP", "0.05"});
  t += a.call({"GET", "lkey"});
  t += a.call({"EXEC"});
  t += "|exec " + r.next(3000) + r.drain(kQuietMs) + "|";
  // With the active sweep off, only the writer's own read removes the key.
  t += a.call({"DEBUG", "SET-ACTIVE-EXPIRE", "0"});
  t += a.call({"SET", "lkey", "v", "PX", "1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t += a.call({"GET", "lkey"});
  t += "|lazy " + r.next(3000) + r.drain(kQuietMs) + "|";
  t += a.call({"DEBUG", "SET-ACTIVE-EXPIRE", "1"});
  t += a.call({"CLIENT", "TRACKING", "off"});
  return scrub(t, ids);
}

TEST_CASE("BCAST prefixes, NOLOOP, OPTIN and OPTOUT select what is sent as in Redis") {
  const std::string mine = modes_scenario(server().port());
  const bool bcast_ok =
      mine.find("|bcast " + push_invalidate({"user:1", "user:2"}) + push_invalidate({"obj:9"})) !=
          std::string::npos ||
      mine.find("|bcast " + push_invalidate({"obj:9"}) + push_invalidate({"user:1", "user:2"})) !=
          std::string::npos;
  CHECK(bcast_ok);
  CHECK(mine.find("|noloop |") != std::string::npos);
  CHECK(mine.find("|own |") != std::string::npos);
  CHECK(mine.find("|optin " + push_invalidate({"o2"}) + "|") != std::string::npos);
  CHECK(mine.find("|optout " + push_invalidate({"p1"}) + push_invalidate({"p3"}) + "|") !=
        std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == modes_scenario(redis.port()));
}

TEST_CASE("Under NOLOOP, a client hears of the expiry of keys it wrote, actively or lazily") {
  kvtest::ServerProcess kv({"--threads", "2", "--enable-debug-command", "yes"});
  REQUIRE(kv.running());
  const std::string mine = expiry_scenario(kv.port());
  CHECK(mine.find("|active " + push_invalidate({"ekey"}) + "|") != std::string::npos);
  CHECK(mine.find("|exec " + push_invalidate({"lkey"}) + "|") != std::string::npos);
  CHECK(mine.find("|lazy " + push_invalidate({"lkey"}) + "|") != std::string::npos);
  kvtest::RedisProcess redis({"--enable-debug-command", "yes"});
  if (!redis.running()) return;
  CHECK(mine == expiry_scenario(redis.port()));
}

TEST_CASE("A script's read remembers the keys the script declared, not the keys it read") {
  const std::string mine = scripts_scenario(server().port());
  CHECK(mine.find("|write |") != std::string::npos);
  CHECK(mine.find("|read key |") != std::string::npos);
  CHECK(mine.find("|declared " + push_invalidate({"sk2"}) + push_invalidate({"sk1"}) + "|") !=
        std::string::npos);
  CHECK(mine.find("|ro ping |") != std::string::npos);
  CHECK(mine.find("|ro read " + push_invalidate({"sk2"}) + push_invalidate({"sk1"}) + "|") !=
        std::string::npos);
  CHECK(mine.find("|fcall " + push_invalidate({"sk2"}) + "|") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == scripts_scenario(redis.port()));
}

TEST_CASE("INFO counts tracking clients, keys, items and prefixes; the table is bounded") {
  Conn a(server().port()), b(server().port()), w(server().port());
  a.call({"HELLO", "3"});
  a.call({"CLIENT", "TRACKING", "on"});
  b.call({"CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "q:", "PREFIX", "r:"});
  w.call({"FLUSHALL"});
  a.drain(kQuietMs) + "|";
  CHECK(info_field(w, "clients", "tracking_clients") == "2");
  a.call({"MGET", "i1", "i2", "i3"});
  CHECK(info_field(w, "stats", "tracking_total_keys") == "3");
  CHECK(info_field(w, "stats", "tracking_total_items") == "3");
  CHECK(info_field(w, "stats", "tracking_total_prefixes") == "2");
  // Bound: lowering tracking-table-max-keys invalidates keys until the table fits, and reading
  // more keys than it holds invalidates keys to make room.
  auto count = [](const std::string& pushes) {
    std::size_t n = 0;
    for (std::size_t p = pushes.find("invalidate"); p != std::string::npos;
         p = pushes.find("invalidate", p + 1))
      ++n;
    return n;
  };
  CHECK(w.call({"CONFIG", "SET", "tracking-table-max-keys", "2"}) == "+OK\r\n");
  CHECK(count(a.drain(kQuietMs)) == 1);  // 3 keys read, 2 kept
  a.send({"MGET", "j1", "j2", "j3", "j4"});
  CHECK(info_field(w, "stats", "tracking_total_keys") == "2");
  CHECK(count(a.drain(kQuietMs)) == 4);  // 2 + 4 keys, 2 kept
  CHECK(w.call({"CONFIG", "SET", "tracking-table-max-keys", "1000000"}) == "+OK\r\n");
  a.close();
  b.call({"CLIENT", "TRACKING", "off"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(info_field(w, "clients", "tracking_clients") == "0");
  CHECK(info_field(w, "stats", "tracking_total_prefixes") == "0");
}

// A tracked key that eviction removes is invalidated: CONFIG SET maxmemory below the memory in
// use evicts at once, as in Redis 7.0, and the tracking client gets its push while it sends
// nothing (from another worker the push arrives through the inbox, so it is waited for before
// the client's next command).
std::string eviction_scenario(int port) {
  Conn a(port), w(port);
  std::string t;
  w.call({"FLUSHALL"});
  a.call({"HELLO", "3"});
  t += a.call({"CLIENT", "TRACKING", "on"});
  t += a.call({"SETEX", "volatile-key", "10000", "x"});
  t += a.call({"GET", "volatile-key"});
  t += w.call({"CONFIG", "SET", "maxmemory-policy", "volatile-random"});
  t += w.call({"CONFIG", "SET", "maxmemory", "1"});
  t += "|a " + a.drain(kQuietMs) + "|";
  t += a.call({"GET", "other"});
  t += w.call({"CONFIG", "SET", "maxmemory", "0"});
  t += w.call({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
  return t;
}

TEST_CASE("A tracked key evicted by CONFIG SET maxmemory is invalidated at once") {
  const std::string mine = eviction_scenario(server().port());
  CHECK(mine.find("|a " + push_invalidate({"volatile-key"}) + "|_\r\n") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == eviction_scenario(redis.port()));
}

// The number of invalidate pushes a client gets when another lowers the table's bound below the
// keys it tracks (which keys go is the server's choice).
int lowered_bound_pushes(int port) {
  Conn a(port), w(port);
  w.call({"FLUSHALL"});  // an empty table: keys other tests' clients read would be evicted too
  a.call({"HELLO", "3"});
  a.call({"CLIENT", "TRACKING", "on"});
  a.call({"MGET", "lb1", "lb2", "lb3"});
  CHECK(w.call({"CONFIG", "SET", "tracking-table-max-keys", "1"}) == "+OK\r\n");
  const std::string pushes = a.drain(kQuietMs);
  CHECK(w.call({"CONFIG", "SET", "tracking-table-max-keys", "1000000"}) == "+OK\r\n");
  w.call({"FLUSHALL"});
  int n = 0;
  for (std::size_t p = pushes.find("invalidate"); p != std::string::npos;
       p = pushes.find("invalidate", p + 1))
    ++n;
  return n;
}

TEST_CASE("Lowering tracking-table-max-keys invalidates the keys over it at once") {
  CHECK(lowered_bound_pushes(server().port()) == 2);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(lowered_bound_pushes(redis.port()) == 2);
}

// A client that tracked a key leaves; its table entry stays (lazily dropped) until a FLUSHALL,
// which reclaims it although nobody tracks any more.
std::string flush_scenario(int port) {
  Conn w(port);
  std::string t;
  w.call({"FLUSHALL"});
  {
    Conn a(port);
    t += a.call({"CLIENT", "TRACKING", "on"});
    t += a.call({"GET", "fk"});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  t += "|keys " + info_field(w, "stats", "tracking_total_keys");
  t += "|flush " + w.call({"FLUSHALL"});
  t += "|keys " + info_field(w, "stats", "tracking_total_keys");
  return t;
}

TEST_CASE("FLUSHALL empties the tracking table also when no client tracks any more") {
  const std::string mine = flush_scenario(server().port());
  CHECK(mine.find("|keys 1|") != std::string::npos);
  CHECK(mine.find("+OK\r\n|keys 0") != std::string::npos);
  kvtest::RedisProcess redis;
  if (!redis.running()) return;
  CHECK(mine == flush_scenario(redis.port()));
}

// Property: writers on several workers modify keys while a RESP3 tracking reader caches every
// value it reads and drops a key on its invalidation push. After quiescence, every value left in
// the reader's cache equals the key's current value: every key written after the reader read it
// was invalidated (no invalidation lost, none delivered before the reply it concerns).
TEST_CASE("Under concurrent writers on every worker, no cached value is stale after quiescence") {
  constexpr int kWriters = 6, kKeys = 200;
  const auto budget = std::chrono::milliseconds(2500);
  std::atomic<bool> stop{false};
  std::atomic<long> writes{0};  // relaxed: a count read after join()
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      kvtest::Client c(server().port());
      if (!c.ok()) return;
      std::mt19937 rng(static_cast<unsigned>(w) * 7919u + 1);
      for (long i = 0; !stop.load(std::memory_order_relaxed) && i < 200000; ++i) {
        const std::string key = "c" + std::to_string(rng() % kKeys);
        const std::string value = std::to_string(w) + ":" + std::to_string(i);
        switch (rng() % 8) {
          case 0:
            c.cmd({"DEL", key});
            break;
          case 1:
            c.cmd({"MSET", key, value, "c" + std::to_string(rng() % kKeys), value});
            break;
          default:
            c.cmd({"SET", key, value});
        }
        // Paced, so that the reader's cache fills between writes (most keys stay cached for a
        // while, and the final check has values to compare); every 8th write runs unpaced.
        writes.fetch_add(1, std::memory_order_relaxed);
        if (i % 8 != 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  std::map<std::string, Frame> cache;  // key → cached reply (bulk or null)
  std::size_t reads = 0, invalidations = 0;
  {
    Conn r(server().port());
    r.call({"HELLO", "3"});
    REQUIRE(r.call({"CLIENT", "TRACKING", "on"}) == "+OK\r\n");
    // A reply is matched with its GET; push frames in between drop keys.
    auto handle = [&](const Frame& f, std::string* got_key, const std::string& expecting) {
      if (f.type == '>') {
        REQUIRE(f.elems.size() == 2);
        ++invalidations;
        if (f.elems[1].type == '_') {
          cache.clear();
        } else {
          for (const Frame& k : f.elems[1].elems) cache.erase(k.str);
        }
        return false;
      }
      if (got_key == nullptr) return false;  // PONG
      cache[expecting] = f;
      *got_key = expecting;
      return true;
    };
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < budget) {
      // One pass: read every key not cached (pushes in between drop keys), then take the pushes
      // that are already there.
      for (int k = 0; k < kKeys; ++k) {
        const std::string key = "c" + std::to_string(k);
        if (cache.count(key)) continue;
        r.send({"GET", key});
        ++reads;
        std::string got;
        Frame f;
        while (got.empty()) {
          REQUIRE(r.next_frame(&f, 5000));
          handle(f, &got, key);
        }
      }
      Frame f;
      while (r.next_frame(&f, 1)) handle(f, nullptr, "");
    }
    stop.store(true, std::memory_order_relaxed);
    for (auto& t : writers) t.join();
    // Quiescence: every write has been answered; let the pushes arrive.
    Frame f;
    r.send({"PING"});
    while (r.next_frame(&f, 500)) {
      if (f.type == '>') handle(f, nullptr, "");
    }
    kvtest::Client check(server().port());
    std::size_t stale = 0;
    for (const auto& [key, cached] : cache) {
      const kvtest::Reply now = check.cmd({"GET", key});
      const bool same =
          cached.type == '_' ? now.is_nil() : (!now.is_nil() && now.str == cached.str);
      if (!same) {
        ++stale;
        MESSAGE("stale: " << key << " cached '" << cached.str << "' now '" << now.str << "'");
      }
    }
    CHECK(stale == 0);
    r.call({"CLIENT", "TRACKING", "off"});
  }
  MESSAGE("writes " << writes.load(std::memory_order_relaxed) << ", reads " << reads
                    << ", invalidation pushes " << invalidations << ", cached at the end "
                    << cache.size());
  CHECK(reads > 100);
  CHECK(invalidations > 10);
  CHECK(cache.size() > 10);
}
