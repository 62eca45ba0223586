// RESP3 (HELLO 3) against a real kvlab-server: every RESP3 reply type checked byte for byte
// (null, map, set, double, boolean, big number, verbatim string, push), the shapes Redis 7.0
// gives in RESP3 only ([member, score] pairs, push confirmations), blocked clients served in
// their own protocol, RESP2 unchanged, and the same commands compared with a redis-server child
// (when installed), also through `redis-cli -3`.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/server/harness.hpp"

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

// A raw connection that returns each reply's exact bytes. The reader knows RESP3's framing (it
// finds where a reply ends) but does not interpret it: the tests compare bytes.
class Raw {
 public:
  explicit Raw(int port) : fd_(kvtest::connect_raw(port)) { REQUIRE(fd_ >= 0); }
  ~Raw() { ::close(fd_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  std::string call(const std::vector<std::string>& args) {
    send(args);
    return read();
  }
  void send(const std::vector<std::string>& args) {
    std::string s = "*" + std::to_string(args.size()) + "\r\n";
    for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
    REQUIRE(kvtest::send_all(fd_, s));
  }
  // One complete reply (with its attribute prefix, if any).
  std::string read() {
    std::size_t end = 0;
    while (!complete(0, &end)) fill();
    std::string r = buf_.substr(0, end);
    buf_.erase(0, end);
    return r;
  }

 private:
  void fill() {
    char tmp[65536];
    const ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
    REQUIRE_MESSAGE(n > 0, "no reply (closed or timed out)");
    buf_.append(tmp, static_cast<std::size_t>(n));
  }
  // Whether a whole reply starts at `at`; *end is where it ends.
  bool complete(std::size_t at, std::size_t* end) {
    const std::size_t eol = buf_.find("\r\n", at);
    if (eol == std::string::npos) return false;
    const char t = buf_[at];
    const std::string line = buf_.substr(at + 1, eol - at - 1);
    std::size_t pos = eol + 2;
    auto children = [&](long long n) {
      for (long long i = 0; i < n; ++i)
        if (!complete(pos, &pos)) return false;
      *end = pos;
      return true;
    };
    switch (t) {
      case '$':
      case '=':
      case '!': {
        const long long n = std::stoll(line);
        if (n < 0) break;
        if (buf_.size() < pos + static_cast<std::size_t>(n) + 2) return false;
        pos += static_cast<std::size_t>(n) + 2;
        break;
      }
      case '*':
      case '~':
      case '>':
        return children(std::max(0LL, std::stoll(line)));
      case '%':
        return children(2 * std::stoll(line));
      case '|':
        return children(2 * std::stoll(line) + 1);
      default:  // + - : _ , # (
        break;
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
    if (i >= line.size()) break;
    if (line[i] == '"') {
      const std::size_t j = line.find('"', i + 1);
      out.emplace_back(line.substr(i + 1, j - i - 1));
      i = j + 1;
    } else {
      std::size_t j = line.find(' ', i);
      if (j == std::string_view::npos) j = line.size();
      out.emplace_back(line.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

std::string bulk(std::string_view s) {
  return "$" + std::to_string(s.size()) + "\r\n" + std::string(s) + "\r\n";
}

// A RESP3 connection to kvlab: HELLO 3 already sent.
struct Resp3 : Raw {
  Resp3() : Raw(server().port()) {
    const std::string h = call({"HELLO", "3"});
    REQUIRE(h.rfind("%7\r\n", 0) == 0);
  }
  std::string operator()(std::string_view line) { return call(words(line)); }
};

// The commands compared with redis-server in RESP3 (every container has at most one element, or
// an order Redis fixes, so the bytes must match exactly).
const char* const kSameAsRedis[] = {
    "SET s v",
    "GET s",
    "GET nokey",
    "MGET s nokey",
    "HSET h f v",
    "HGETALL h",
    "HGETALL nokey",
    "HRANDFIELD h 1 WITHVALUES",
    "HRANDFIELD h -2 WITHVALUES",
    "HKEYS h",
    "SADD st m",
    "SMEMBERS st",
    "SMEMBERS nokey",
    "SINTER st st",
    "SUNION st nokey",
    "SDIFF st nokey",
    "SPOP nokey 3",
    "SRANDMEMBER st 5",
    "ZADD z 1.5 a 2 b 3 c",
    "ZSCORE z a",
    "ZSCORE z nokey",
    "ZMSCORE z a x c",
    "ZINCRBY z 1 a",
    "ZADD z INCR 0.25 b",
    "ZADD z XX INCR 1 nomember",
    "ZRANGE z 0 -1 WITHSCORES",
    "ZRANGE z 0 -1",
    "ZRANGEBYSCORE z -inf +inf WITHSCORES",
    "ZREVRANGEBYLEX z + -",
    "ZRANGE z (1 +inf BYSCORE REV WITHSCORES",
    "ZUNION 1 z WITHSCORES",
    "ZINTER 2 z z WITHSCORES",
    "ZDIFF 1 z WITHSCORES",
    "ZADD z1 7 only",
    "ZRANDMEMBER z1 1 WITHSCORES",
    "ZRANDMEMBER z1 -2 WITHSCORES",
    "ZPOPMIN z",
    "ZPOPMAX z 1",
    "ZPOPMIN z 0",
    "ZMPOP 1 z MIN",
    "ZPOPMIN nokey 2",
    "ZINCRBY z inf c",
    "LPOP nokey 2",
    "LPOS nokey a",
    "BLPOP nokey 0.01",
    "BZPOPMIN nokey 0.01",
    "BZPOPMIN z 0",
    "BLMPOP 0.01 1 nokey LEFT",
    "CONFIG GET maxmemory",
    "CONFIG GET nosuchparameter",
    "SET l1 ohmytext",
    "SET l2 mynewtext",
    "LCS l1 l2 IDX MINMATCHLEN 4 WITHMATCHLEN",
    "COMMAND INFO nosuchcommand",
    "SCRIPT EXISTS 0000000000000000000000000000000000000000",
    "EVAL \"redis.setresp(3) return redis.call('hgetall', KEYS[1])\" 1 h",
    "EVAL \"redis.setresp(3) return redis.call('zscore', KEYS[1], 'c')\" 1 z",
    "EVAL \"redis.setresp(3) return false\" 0",
    "EVAL \"return false\" 0",
    "EVAL \"return {double=0.5}\" 0",
    "EVAL \"return {big_number='123456789012345678901234567890'}\" 0",
    "EVAL \"return {verbatim_string={format='txt', string='hi'}}\" 0",
    "EVAL \"return {map={k='v'}}\" 0",
    "EVAL \"return {set={m=true}}\" 0",
    "EVAL \"redis.setresp(3) return type(redis.call('get', KEYS[1]))\" 1 nokey",
    "MULTI",
    "GET nokey",
    "HGETALL h",
    "EXEC",
    "FUNCTION STATS",
    "HELLO",
    "PUBSUB NUMSUB ch",
    "RESET",
    "HGETALL h",
    "GET nokey",
};

}  // namespace

TEST_CASE("HELLO 3 switches the connection to RESP3 and replies a map") {
  Raw c(server().port());
  const std::string id = c.call({"CLIENT", "ID"});  // ":<id>\r\n"
  const std::string hello = c.call({"HELLO", "3"});
  CHECK(hello == "%7\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.0.0") +
                     bulk("proto") + ":3\r\n" + bulk("id") + id + bulk("mode") +
                     bulk("standalone") + bulk("role") + bulk("master") + bulk("modules") +
                     "*0\r\n");
  CHECK(c.call({"GET", "nokey"}) == "_\r\n");
  // HELLO without a version keeps the connection's.
  CHECK(c.call({"HELLO"}).find(bulk("proto") + ":3\r\n") != std::string::npos);
  CHECK(c.call({"CLIENT", "INFO"}).find(" resp=3 ") != std::string::npos);
  // HELLO 2 goes back: its own reply is already RESP2.
  CHECK(c.call({"HELLO", "2"}).rfind("*14\r\n", 0) == 0);
  CHECK(c.call({"GET", "nokey"}) == "$-1\r\n");
}

TEST_CASE("HELLO refuses unknown versions and bad options with Redis's errors") {
  Raw c(server().port());
  CHECK(c.call({"HELLO", "4"}) == "-NOPROTO unsupported protocol version\r\n");
  CHECK(c.call({"HELLO", "1"}) == "-NOPROTO unsupported protocol version\r\n");
  CHECK(c.call({"HELLO", "x"}) == "-ERR Protocol version is not an integer or out of range\r\n");
  CHECK(c.call({"HELLO", "3", "FOO"}) == "-ERR Syntax error in HELLO option 'FOO'\r\n");
  CHECK(c.call({"HELLO", "3", "SETNAME", "a b"}) ==
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
  CHECK(c.call({"GET", "nokey"}) == "$-1\r\n");  // a refused HELLO leaves RESP2
  CHECK(c.call({"HELLO", "3", "SETNAME", "resp3client"}).rfind("%7\r\n", 0) == 0);
  CHECK(c.call({"CLIENT", "GETNAME"}) == bulk("resp3client"));
}

TEST_CASE("HELLO AUTH without a configured password takes the default user, as Redis's nopass") {
  Raw c(server().port());
  CHECK(c.call({"HELLO", "3", "AUTH", "default", "anything"}).rfind("%7\r\n", 0) == 0);
  CHECK(c.call({"HELLO", "3", "AUTH", "bob", "x"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  kvtest::RedisProcess redis;
  if (redis.running()) {
    Raw r(redis.port());
    CHECK(r.call({"HELLO", "3", "AUTH", "default", "anything"}).rfind("%7\r\n", 0) == 0);
    CHECK(r.call({"HELLO", "3", "AUTH", "bob", "x"}) ==
          "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  }
}

TEST_CASE("HELLO 3 AUTH authenticates and switches in one command") {
  kvtest::ServerProcess s({"--threads", "1", "--requirepass", "pw"});
  REQUIRE(s.running());
  Raw c(s.port());
  const std::string noauth =
      "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO "
      "AUTH <user> <pass> option can be used to authenticate the client and select the RESP "
      "protocol version at the same time\r\n";
  CHECK(c.call({"HELLO", "3"}) == noauth);
  CHECK(c.call({"HELLO", "3", "AUTH", "default", "bad"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(c.call({"HELLO", "3", "AUTH", "default", "pw", "SETNAME", "n1"}).rfind("%7\r\n", 0) == 0);
  CHECK(c.call({"GET", "k"}) == "_\r\n");
  CHECK(c.call({"CLIENT", "GETNAME"}) == bulk("n1"));
  kvtest::RedisProcess redis({"--requirepass", "pw"});
  if (redis.running()) {
    Raw r(redis.port());
    CHECK(r.call({"HELLO", "3"}) == noauth);
  }
}

TEST_CASE("COMMAND INFO of an unknown name answers a null bulk in RESP2 and _ in RESP3") {
  Raw r(server().port());
  CHECK(r.call({"COMMAND", "INFO", "get", "nosuch"}).substr(0, 4) == "*2\r\n");
  CHECK(r.call({"COMMAND", "INFO", "nosuch"}) == "*1\r\n$-1\r\n");
  Resp3 c;
  CHECK(c("COMMAND INFO nosuch") == "*1\r\n_\r\n");
}

TEST_CASE("every RESP3 reply type is encoded byte for byte as Redis 7.0 does") {
  Resp3 c;
  c("DEL h st z s");
  c("HSET h f v");
  c("SADD st m");
  c("ZADD z 1.5 a 2 b");
  // null, map, set, double
  CHECK(c("GET nokey") == "_\r\n");
  CHECK(c("LPOP nokey 2") == "_\r\n");
  CHECK(c("HGETALL h") == "%1\r\n" + bulk("f") + bulk("v"));
  CHECK(c("HGETALL nokey") == "%0\r\n");
  CHECK(c("CONFIG GET maxmemory") == "%1\r\n" + bulk("maxmemory") + bulk("0"));
  CHECK(c("SMEMBERS st") == "~1\r\n" + bulk("m"));
  CHECK(c("SMEMBERS nokey") == "~0\r\n");
  CHECK(c("ZSCORE z a") == ",1.5\r\n");
  CHECK(c("ZINCRBY z inf b") == ",inf\r\n");
  CHECK(c("ZINCRBY z -inf a") == ",-inf\r\n");
  c("ZADD z 1.5 a 2 b");
  // [member, score] pairs in RESP3, flat in RESP2
  CHECK(c("ZRANGE z 0 -1 WITHSCORES") ==
        "*2\r\n*2\r\n" + bulk("a") + ",1.5\r\n*2\r\n" + bulk("b") + ",2\r\n");
  CHECK(c("ZSCAN z 0") ==
        "*2\r\n" + bulk("0") + "*4\r\n" + bulk("a") + bulk("1.5") + bulk("b") + bulk("2"));
  CHECK(c("ZPOPMIN z") == "*2\r\n" + bulk("a") + ",1.5\r\n");
  CHECK(c("ZPOPMIN z 1") == "*1\r\n*2\r\n" + bulk("b") + ",2\r\n");
  CHECK(c("HRANDFIELD h 1 WITHVALUES") == "*1\r\n*2\r\n" + bulk("f") + bulk("v"));
  // boolean, big number, verbatim (from Lua, and INFO / CLIENT INFO)
  CHECK(c("EVAL \"redis.setresp(3) return true\" 0") == "#t\r\n");
  CHECK(c("EVAL \"redis.setresp(3) return false\" 0") == "#f\r\n");
  CHECK(c("EVAL \"return {big_number='12345678901234567890'}\" 0") == "(12345678901234567890\r\n");
  CHECK(c("EVAL \"return {verbatim_string={format='txt', string='hello'}}\" 0") ==
        "=9\r\ntxt:hello\r\n");
  const std::string info = c("INFO server");
  CHECK(info.rfind("=", 0) == 0);
  CHECK(info.find("\r\ntxt:# Server\r\n") != std::string::npos);
  CHECK(c("CLIENT INFO").find("\r\ntxt:id=") != std::string::npos);
  // Lua sees RESP3 types after redis.setresp(3)
  CHECK(c("EVAL \"redis.setresp(3) return redis.call('hgetall', KEYS[1]).map.f\" 1 h") ==
        bulk("v"));
  // EXEC's results and an aborted EXEC
  CHECK(c("MULTI") == "+OK\r\n");
  CHECK(c("HGETALL h") == "+QUEUED\r\n");
  CHECK(c("GET nokey") == "+QUEUED\r\n");
  CHECK(c("EXEC") == "*2\r\n%1\r\n" + bulk("f") + bulk("v") + "_\r\n");
  // RESET goes back to RESP2
  CHECK(c("RESET") == "+RESET\r\n");
  CHECK(c("HGETALL h") == "*2\r\n" + bulk("f") + bulk("v"));
}

TEST_CASE("RESP2 connections keep RESP2's encodings") {
  Raw c(server().port());
  c.call({"DEL", "h2", "z2"});
  c.call({"HSET", "h2", "f", "v"});
  c.call({"ZADD", "z2", "1.5", "a"});
  CHECK(c.call({"HGETALL", "h2"}) == "*2\r\n" + bulk("f") + bulk("v"));
  CHECK(c.call({"SMEMBERS", "nokey"}) == "*0\r\n");
  CHECK(c.call({"ZSCORE", "z2", "a"}) == bulk("1.5"));
  CHECK(c.call({"ZRANGE", "z2", "0", "-1", "WITHSCORES"}) == "*2\r\n" + bulk("a") + bulk("1.5"));
  CHECK(c.call({"GET", "nokey"}) == "$-1\r\n");
  CHECK(c.call({"BLPOP", "nokey", "0.01"}) == "*-1\r\n");
  CHECK(c.call({"EVAL", "return false", "0"}) == "$-1\r\n");
  CHECK(c.call({"EVAL", "redis.setresp(3) return false", "0"}) == ":0\r\n");
}

TEST_CASE("blocked RESP3 clients get their served reply and their timeout in RESP3") {
  Resp3 waiter;
  Raw pusher(server().port());  // RESP2: the served reply follows the waiter's protocol
  pusher.call({"DEL", "bz", "bl"});
  waiter.send({"BZPOPMIN", "bz", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(pusher.call({"ZADD", "bz", "2.5", "m"}) == ":1\r\n");
  CHECK(waiter.read() == "*3\r\n" + bulk("bz") + bulk("m") + ",2.5\r\n");
  CHECK(waiter("BLPOP bl 0.05") == "_\r\n");
  CHECK(waiter("BZMPOP 0.05 1 bz MIN") == "_\r\n");
  // Stream reads woken by XADD answer a map, as their unblocked form does (found with node-redis
  // 5 over RESP3, which handed the array to the application).
  pusher.call({"DEL", "bs"});
  pusher.call({"XADD", "bs", "1-1", "f", "v"});
  const std::string entry = "*1\r\n*2\r\n" + bulk("2-1") + "*2\r\n" + bulk("f") + bulk("w");
  waiter.send({"XREAD", "BLOCK", "5000", "STREAMS", "bs", "$"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pusher.call({"XADD", "bs", "2-1", "f", "w"});
  CHECK(waiter.read() == "%1\r\n" + bulk("bs") + entry);
  pusher.call({"XGROUP", "CREATE", "bs", "g", "$"});
  waiter.send({"XREADGROUP", "GROUP", "g", "c", "BLOCK", "5000", "STREAMS", "bs", ">"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pusher.call({"XADD", "bs", "3-1", "f", "x"});
  CHECK(waiter.read() ==
        "%1\r\n" + bulk("bs") + "*1\r\n*2\r\n" + bulk("3-1") + "*2\r\n" + bulk("f") + bulk("x"));
  CHECK(waiter("XREAD BLOCK 50 STREAMS bs $") == "_\r\n");
}

TEST_CASE("pub/sub in RESP3: push frames, and a subscriber runs any command") {
  Resp3 sub;
  Raw pub(server().port());
  CHECK(sub("SUBSCRIBE ch") == ">3\r\n" + bulk("subscribe") + bulk("ch") + ":1\r\n");
  CHECK(sub("PSUBSCRIBE c*") == ">3\r\n" + bulk("psubscribe") + bulk("c*") + ":2\r\n");
  CHECK(sub("SET k v") == "+OK\r\n");
  CHECK(sub("GET k") == bulk("v"));
  CHECK(sub("PING") == "+PONG\r\n");
  CHECK(pub.call({"PUBLISH", "ch", "hi"}) == ":2\r\n");
  CHECK(sub.read() == ">3\r\n" + bulk("message") + bulk("ch") + bulk("hi"));
  CHECK(sub.read() == ">4\r\n" + bulk("pmessage") + bulk("c*") + bulk("ch") + bulk("hi"));
  CHECK(sub("UNSUBSCRIBE ch") == ">3\r\n" + bulk("unsubscribe") + bulk("ch") + ":1\r\n");
  CHECK(sub("PUNSUBSCRIBE") == ">3\r\n" + bulk("punsubscribe") + bulk("c*") + ":0\r\n");
  CHECK(sub("UNSUBSCRIBE") == ">3\r\n" + bulk("unsubscribe") + "_\r\n:0\r\n");
  // RESP2 subscribers keep subscriber mode
  Raw sub2(server().port());
  CHECK(sub2.call({"SUBSCRIBE", "ch"}) == "*3\r\n" + bulk("subscribe") + bulk("ch") + ":1\r\n");
  CHECK(sub2.call({"GET", "k"}).rfind("-ERR Can't execute 'get'", 0) == 0);
  CHECK(sub2.call({"PING"}) == "*2\r\n" + bulk("pong") + bulk(""));
  CHECK(pub.call({"PUBLISH", "ch", "x"}) == ":1\r\n");
  CHECK(sub2.read() == "*3\r\n" + bulk("message") + bulk("ch") + bulk("x"));
}

TEST_CASE("RESP3 replies equal redis-server's byte for byte") {
  kvtest::RedisProcess redis;
  if (!redis.running()) {
    MESSAGE("redis-server not installed: comparison skipped");
    return;
  }
  Resp3 k;
  Raw r(redis.port());
  REQUIRE(r.call({"HELLO", "3"}).rfind("%7\r\n", 0) == 0);
  k("FLUSHALL");
  r.call({"FLUSHALL"});
  for (const char* line : kSameAsRedis) {
    const std::string cmd = line;
    if (cmd == "HELLO") continue;  // version and id differ
    CAPTURE(cmd);
    CHECK(k.call(words(line)) == r.call(words(line)));
  }
}

TEST_CASE("redis-cli -3 prints the same output for kvlab and redis-server") {
  kvtest::RedisProcess redis;
  std::string which;
  if (!redis.running() || kvtest::run_capture("command -v redis-cli", &which) != 0) {
    MESSAGE("redis-server or redis-cli not installed: comparison skipped");
    return;
  }
  const std::vector<std::string> script = {"FLUSHALL",
                                           "HSET h f v",
                                           "HGETALL h",
                                           "ZADD z 1.5 a 2 b",
                                           "ZRANGE z 0 -1 WITHSCORES",
                                           "ZSCORE z a",
                                           "SADD st m",
                                           "SMEMBERS st",
                                           "GET nokey",
                                           "CONFIG GET maxmemory",
                                           "EVAL \"redis.setresp(3) return true\" 0"};
  for (const auto& line : script) {
    std::string out_k, out_r;
    kvtest::run_capture("redis-cli -3 -p " + std::to_string(server().port()) + " " + line, &out_k);
    kvtest::run_capture("redis-cli -3 -p " + std::to_string(redis.port()) + " " + line, &out_r);
    CAPTURE(line);
    CHECK(out_k == out_r);
  }
  // Piped input (redis-cli's non-interactive mode reading commands from stdin).
  std::string all;
  for (const auto& line : script) all += line + "\n";
  std::string out_k, out_r;
  kvtest::run_capture(
      "printf '%s' '" + all + "' | redis-cli -3 -p " + std::to_string(server().port()), &out_k);
  kvtest::run_capture("printf '%s' '" + all + "' | redis-cli -3 -p " + std::to_string(redis.port()),
                      &out_r);
  CHECK(out_k == out_r);
  CHECK(out_k.find("1.5") != std::string::npos);
}
