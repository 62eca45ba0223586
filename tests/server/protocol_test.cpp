// The connection layer under stress: pipelines, protocol errors, large values, binary keys, many
// connections and concurrent writers, against a real kvlab-server with 2 workers.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>

#include "tests/server/checks.hpp"
#include "tests/server/harness.hpp"

using kvtest::check_error;
using kvtest::Client;
using kvtest::Reply;

namespace {

kvtest::ServerProcess& server() {
  static kvtest::ServerProcess s({"--threads", "2"});
  return s;
}

std::string mbulk(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

// Sends `bytes` on a fresh raw connection and returns everything the server sends back before it
// closes the connection (or 3 s pass).
std::string exchange_until_close(std::string_view bytes, bool* closed) {
  const int fd = kvtest::connect_raw(server().port());
  REQUIRE(fd >= 0);
  kvtest::send_all(fd, bytes);
  std::string out = kvtest::read_until_close(fd, 3000, closed);
  ::close(fd);
  return out;
}

// Reads from fd until `want` bytes came or timeout_ms passed; then waits a further 100 ms for
// anything extra (a reply that should have been dropped), so the result may be longer than want.
std::string read_for(int fd, std::size_t want, int timeout_ms = 3000) {
  std::string out;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto extra_until = std::chrono::steady_clock::time_point::max();
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || now >= extra_until) break;
    if (out.size() >= want && extra_until == std::chrono::steady_clock::time_point::max())
      extra_until = now + std::chrono::milliseconds(100);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// One raw connection's "CLIENT ID" answer.
long long raw_client_id(int fd) {
  kvtest::send_all(fd, mbulk({"CLIENT", "ID"}));
  const std::string r = read_for(fd, 4);
  REQUIRE(r.size() > 3);
  REQUIRE(r[0] == ':');
  return std::stoll(r.substr(1));
}

}  // namespace

// CLIENT REPLY and CLIENT KILL, with the bytes Redis 7.0 sends (compared with a real redis-server
// when one is on PATH) and the effect on other connections: a killed client, blocked or not,
// sees its connection closed and takes nothing with it.
TEST_SUITE("client reply and kill") {
  // The pipeline and the bytes Redis answers to it: SKIP drops the next command's reply, OFF all
  // replies until ON (SKIP while OFF changes nothing), a bad mode is a syntax error; a SKIP run
  // under SKIP skips the command after it too.
  const std::vector<std::vector<std::string>> kReplyPipeline = {{"CLIENT", "REPLY", "SKIP"},
                                                                {"SET", "rk", "1"},
                                                                {"GET", "rk"},
                                                                {"CLIENT", "REPLY", "OFF"},
                                                                {"SET", "rk", "2"},
                                                                {"INCR", "nokey-num"},
                                                                {"CLIENT", "REPLY", "SKIP"},
                                                                {"GET", "rk"},
                                                                {"CLIENT", "REPLY", "ON"},
                                                                {"GET", "rk"},
                                                                {"CLIENT", "REPLY", "maybe"},
                                                                {"GET", "nokey-num"},
                                                                {"CLIENT", "REPLY", "SKIP"},
                                                                {"CLIENT", "REPLY", "SKIP"},
                                                                {"PING"},
                                                                {"PING"},
                                                                {"CLIENT", "REPLY", "OFF"},
                                                                {"RESET"}};
  const std::string kReplyBytes =
      "$1\r\n1\r\n+OK\r\n$1\r\n2\r\n-ERR syntax error\r\n$1\r\n1\r\n+PONG\r\n+RESET\r\n";

  std::string reply_pipeline_answer(int port) {
    const int fd = kvtest::connect_raw(port);
    REQUIRE(fd >= 0);
    std::string bytes;
    for (const auto& c : kReplyPipeline) bytes += mbulk(c);
    kvtest::send_all(fd, bytes);
    std::string out = read_for(fd, kReplyBytes.size());
    ::close(fd);
    return out;
  }

  TEST_CASE("CLIENT REPLY OFF, SKIP and ON drop exactly the replies Redis drops") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    CHECK(reply_pipeline_answer(s.port()) == kReplyBytes);
    kvtest::RedisProcess redis;
    if (redis.running()) CHECK(reply_pipeline_answer(redis.port()) == kReplyBytes);
  }

  // Subscription confirmations are pushes in Redis: CLIENT REPLY OFF does not drop them (the
  // Redis suite's keyspace-notification tests subscribe that way); an error still is dropped.
  TEST_CASE("(P)(UN)SUBSCRIBE confirmations arrive under CLIENT REPLY OFF, errors do not") {
    const std::vector<std::vector<std::string>> pipeline = {
        {"CLIENT", "REPLY", "OFF"}, {"SUBSCRIBE", "a"},
        {"PSUBSCRIBE", "b*"},       {"SUBSCRIBE"},
        {"UNSUBSCRIBE", "a"},       {"PUNSUBSCRIBE", "b*"},
        {"CLIENT", "REPLY", "ON"},  {"PING"}};
    const std::string want =
        "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"
        "*3\r\n$10\r\npsubscribe\r\n$2\r\nb*\r\n:2\r\n"
        "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n"
        "*3\r\n$12\r\npunsubscribe\r\n$2\r\nb*\r\n:0\r\n"
        "+OK\r\n+PONG\r\n";
    auto answer = [&](int port) {
      const int fd = kvtest::connect_raw(port);
      REQUIRE(fd >= 0);
      std::string bytes;
      for (const auto& c : pipeline) bytes += mbulk(c);
      kvtest::send_all(fd, bytes);
      std::string out = read_for(fd, want.size());
      ::close(fd);
      return out;
    };
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    CHECK(answer(s.port()) == want);
    kvtest::RedisProcess redis;
    if (redis.running()) CHECK(answer(redis.port()) == want);
  }

  TEST_CASE("a command that blocked under CLIENT REPLY OFF still runs but answers nothing") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    const int fd = kvtest::connect_raw(s.port());
    REQUIRE(fd >= 0);
    kvtest::send_all(fd, mbulk({"CLIENT", "REPLY", "OFF"}) + mbulk({"BLPOP", "bq", "0"}));
    Client other(s.port());
    // Wait until the BLPOP is registered, then feed it.
    for (int i = 0; i < 200; ++i) {
      if (other("INFO clients").str.find("blocked_clients:1") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(other("RPUSH bq a").integer == 1);
    kvtest::send_all(fd, mbulk({"CLIENT", "REPLY", "ON"}) + mbulk({"LLEN", "bq"}));
    CHECK(read_for(fd, 9) == "+OK\r\n:0\r\n");  // the element was taken, its reply dropped
    ::close(fd);
  }

  TEST_CASE("CLIENT KILL closes the client by ID, by address and by type, not the caller") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    Client admin(s.port());
    const long long admin_id = admin("CLIENT ID").integer;
    // By ID; the victim's next read sees the connection closed.
    int v = kvtest::connect_raw(s.port());
    REQUIRE(v >= 0);
    const long long vid = raw_client_id(v);
    CHECK(admin("CLIENT KILL ID " + std::to_string(vid)).integer == 1);
    bool closed = false;
    kvtest::read_until_close(v, 2000, &closed);
    CHECK(closed);
    ::close(v);
    CHECK(admin("CLIENT KILL ID " + std::to_string(vid)).integer == 0);  // gone
    // The old form by address: OK, then "No such client".
    v = kvtest::connect_raw(s.port());
    REQUIRE(v >= 0);
    kvtest::send_all(v, mbulk({"CLIENT", "INFO"}));
    const std::string info = read_for(v, 40);
    const std::size_t a = info.find("addr=");
    REQUIRE(a != std::string::npos);
    const std::string addr = info.substr(a + 5, info.find(' ', a) - a - 5);
    CHECK(admin("CLIENT KILL " + addr).is_status("OK"));
    kvtest::read_until_close(v, 2000, &closed);
    CHECK(closed);
    ::close(v);
    check_error(admin("CLIENT KILL " + addr), "ERR No such client");
    CHECK(admin("CLIENT KILL ADDR " + addr).integer == 0);
    // By type: the subscriber goes, the plain client and the caller (SKIPME yes) stay.
    Client sub(s.port());
    sub("SUBSCRIBE news");
    Client plain(s.port());
    CHECK(admin("CLIENT KILL TYPE pubsub").integer == 1);
    CHECK(admin("CLIENT KILL TYPE master").integer == 0);
    CHECK(plain("PING").is_status("PONG"));
    CHECK(admin("CLIENT KILL TYPE normal").integer == 1);  // plain, not admin itself
    CHECK(admin("PING").is_status("PONG"));
    CHECK(admin("CLIENT KILL ID " + std::to_string(admin_id)).integer == 0);  // SKIPME yes
  }

  // Redis frees a killed client inside CLIENT KILL, so a command right behind it (pipelined on
  // the same connection) no longer finds it; a subscriber being torn down never counts as TYPE
  // normal. Twenty victims over two workers, so a kill and its worker's close do race.
  TEST_CASE("a killed client is gone for the very next command") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    Client admin(s.port());
    int gone_at_once = 0;
    for (int i = 0; i < 20; ++i) {
      const int v = kvtest::connect_raw(s.port());
      REQUIRE(v >= 0);
      const std::string vid = std::to_string(raw_client_id(v));
      admin.append({"CLIENT", "KILL", "ID", vid});
      admin.append({"CLIENT", "KILL", "ID", vid});
      admin.append({"CLIENT", "LIST", "ID", vid});
      const bool first = admin.get_reply().integer == 1;
      const bool second = admin.get_reply().integer == 0;
      const bool listed = !admin.get_reply().str.empty();
      if (first && second && !listed) ++gone_at_once;
      ::close(v);
      // A subscriber killed by type, then a TYPE normal kill right behind it: only `plain`.
      Client sub(s.port());
      sub("SUBSCRIBE news");
      Client plain(s.port());
      REQUIRE(plain("PING").is_status("PONG"));  // accepted and registered
      admin.append({"CLIENT", "KILL", "TYPE", "pubsub"});
      admin.append({"CLIENT", "KILL", "TYPE", "normal"});
      CHECK(admin.get_reply().integer == 1);
      CHECK(admin.get_reply().integer == 1);
    }
    CHECK(gone_at_once == 20);
  }

  TEST_CASE("a killed blocked client takes no element and its own kill closes after the reply") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    Client admin(s.port());
    const int v = kvtest::connect_raw(s.port());
    REQUIRE(v >= 0);
    const long long vid = raw_client_id(v);
    kvtest::send_all(v, mbulk({"BLPOP", "kq", "0"}));
    for (int i = 0; i < 200; ++i) {
      if (admin("INFO clients").str.find("blocked_clients:1") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(admin("CLIENT KILL ID " + std::to_string(vid)).integer == 1);
    bool closed = false;
    CHECK(kvtest::read_until_close(v, 2000, &closed).empty());
    CHECK(closed);
    ::close(v);
    CHECK(admin("RPUSH kq x").integer == 1);
    CHECK(admin("LLEN kq").integer == 1);
    CHECK(admin("INFO clients").str.find("blocked_clients:0") != std::string::npos);
    // SKIPME no with its own ID: the caller gets its count, then the server closes it.
    const int self = kvtest::connect_raw(s.port());
    REQUIRE(self >= 0);
    const long long self_id = raw_client_id(self);
    kvtest::send_all(
        self,
        mbulk({"CLIENT", "KILL", "ID", std::to_string(self_id), "SKIPME", "no"}) + mbulk({"PING"}));
    CHECK(kvtest::read_until_close(self, 2000, &closed) == ":1\r\n");
    CHECK(closed);
    ::close(self);
  }

  TEST_CASE("CLIENT KILL and CLIENT REPLY errors are Redis's") {
    kvtest::ServerProcess s;
    REQUIRE(s.running());
    Client c(s.port());
    check_error(c("CLIENT KILL ID 0"), "ERR client-id should be greater than 0");
    check_error(c("CLIENT KILL ID x"), "ERR client-id should be greater than 0");
    check_error(c("CLIENT KILL TYPE foo"), "ERR Unknown client type 'foo'");
    check_error(c("CLIENT KILL USER bob"), "ERR No such user 'bob'");
    check_error(c("CLIENT KILL ID"), "ERR No such client");
    check_error(c("CLIENT KILL FOO bar"), "ERR syntax error");
    check_error(c("CLIENT KILL SKIPME maybe"), "ERR syntax error");
    check_error(c("CLIENT KILL ID 5 TYPE"), "ERR syntax error");
    check_error(c("CLIENT KILL"), "ERR wrong number of arguments for 'client|kill' command");
    check_error(c("CLIENT REPLY"), "ERR wrong number of arguments for 'client|reply' command");
    CHECK(c("CLIENT KILL USER default TYPE normal").integer == 0);
  }
}

TEST_SUITE("server") {
  TEST_CASE("ten thousand pipelined commands sent in one write all get replies, in order") {
    REQUIRE(server().running());
    std::string batch;
    for (int i = 0; i < 10000; ++i)
      batch += mbulk({"SET", "pipe" + std::to_string(i), std::to_string(i)});
    for (int i = 0; i < 10000; ++i) batch += mbulk({"GET", "pipe" + std::to_string(i)});
    const int fd = kvtest::connect_raw(server().port(), 10000);
    REQUIRE(fd >= 0);
    REQUIRE(kvtest::send_all(fd, batch));
    redisReader* reader = redisReaderCreate();
    int got = 0;
    bool in_order = true;
    char buf[65536];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (got < 20000 && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      redisReaderFeed(reader, buf, static_cast<std::size_t>(n));
      void* r = nullptr;
      while (redisReaderGetReply(reader, &r) == REDIS_OK && r != nullptr) {
        auto* rep = static_cast<redisReply*>(r);
        if (got < 10000) {
          in_order = in_order && rep->type == REDIS_REPLY_STATUS;
        } else {
          in_order = in_order && rep->type == REDIS_REPLY_STRING &&
                     std::string(rep->str, rep->len) == std::to_string(got - 10000);
        }
        ++got;
        freeReplyObject(r);
        r = nullptr;
      }
    }
    redisReaderFree(reader);
    ::close(fd);
    CHECK(got == 20000);
    CHECK(in_order);
  }

  // Found with redis-cli --pipe: a connection whose unsent replies pass kOutputPauseBytes (4 MiB)
  // stops running its buffered commands until the output drains; when one send took all of it,
  // nothing resumed the connection and the pipeline stalled for good.
  TEST_CASE("a pipeline whose replies pass the 4 MiB output pause is answered in full") {
    REQUIRE(server().running());
    const std::string big(100 * 1024, 'b');
    std::string batch = mbulk({"SET", "bigpipe", big});
    constexpr int kGets = 1000;  // 100 MB of replies: about 25 pauses
    for (int i = 0; i < kGets; ++i) batch += mbulk({"GET", "bigpipe"});
    batch += mbulk({"PING"});
    const int fd = kvtest::connect_raw(server().port(), 5000);
    REQUIRE(fd >= 0);
    REQUIRE(kvtest::send_all(fd, batch));
    redisReader* reader = redisReaderCreate();
    int got = 0;
    bool right = true;
    std::vector<char> buf(1 << 20);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (got < kGets + 2 && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
      if (n <= 0) break;  // the 5 s receive timeout: stalled
      redisReaderFeed(reader, buf.data(), static_cast<std::size_t>(n));
      void* r = nullptr;
      while (redisReaderGetReply(reader, &r) == REDIS_OK && r != nullptr) {
        auto* rep = static_cast<redisReply*>(r);
        if (got == 0 || got == kGets + 1)
          right = right && rep->type == REDIS_REPLY_STATUS;
        else
          right = right && rep->type == REDIS_REPLY_STRING && rep->len == big.size();
        ++got;
        freeReplyObject(r);
        r = nullptr;
      }
    }
    redisReaderFree(reader);
    ::close(fd);
    CHECK(got == kGets + 2);
    CHECK(right);
    Client c(server().port());
    c("DEL bigpipe");
  }

  TEST_CASE("inline commands work, including PING without arguments") {
    const int fd = kvtest::connect_raw(server().port());
    REQUIRE(fd >= 0);
    kvtest::send_all(fd, "PING\r\nSET inl \"a b\"\r\nGET inl\n");
    std::string out;
    char buf[256];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (out.size() < 20 && std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    CHECK(out == "+PONG\r\n+OK\r\n$3\r\na b\r\n");
  }

  // Property: a protocol error gets exactly the Redis error line, the connection is closed after
  // it, and a second client on the same server is unaffected.
  TEST_CASE("protocol errors reply and close while another client keeps working") {
    Client other(server().port());
    REQUIRE(other.ok());
    struct Case {
      std::string input, reply;
    } cases[] = {
        {"*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
        {"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
        {"*1\r\n$abc\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
        {"*2\r\n$3\r\nGET\r\n$600000000\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
        {"*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
        {"SET k \"unbalanced\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
        {std::string(70000, 'x'), "-ERR Protocol error: too big inline request\r\n"},
        {"PING\r\n*x\r\n", "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n"},
    };
    for (const auto& c : cases) {
      CAPTURE(c.reply);
      bool closed = false;
      CHECK(exchange_until_close(c.input, &closed) == c.reply);
      CHECK(closed);
      CHECK(other("PING").is_status("PONG"));
    }
  }

  // Property: announcing the maximum bulk (512 MiB) and never sending it costs no memory up front,
  // blocks nobody, and the connection can simply go away.
  TEST_CASE("a huge length announced but never sent does not allocate or block others") {
    const std::size_t rss_before = server().rss_bytes();
    std::vector<int> fds;
    for (int i = 0; i < 8; ++i) {
      const int fd = kvtest::connect_raw(server().port());
      REQUIRE(fd >= 0);
      kvtest::send_all(fd, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870912\r\nabc");
      fds.push_back(fd);
    }
    Client other(server().port());
    CHECK(other("PING").is_status("PONG"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::size_t rss_after = server().rss_bytes();
    CHECK(rss_after < rss_before + 64u * 1024 * 1024);
    for (int fd : fds) ::close(fd);
    CHECK(other("PING").is_status("PONG"));
  }

  TEST_CASE("1 MiB and 64 MiB values round-trip intact") {
    Client c(server().port(), 30000);
    for (std::size_t size : {std::size_t{1} << 20, std::size_t{64} << 20}) {
      std::string value(size, '\0');
      for (std::size_t i = 0; i < size; ++i) value[i] = static_cast<char>((i * 131 + 7) & 0xff);
      CHECK(c.cmd({"SET", "big", value}).is_status("OK"));
      Reply r = c.cmd({"GET", "big"});
      CHECK(r.str.size() == size);
      CHECK(r.str == value);
      CHECK(c("STRLEN big").integer == static_cast<long long>(size));
    }
    c("DEL big");
  }

  TEST_CASE("keys and values with NUL bytes are binary safe") {
    Client c(server().port());
    const std::string k1("nul\0key", 7), k2("nul\0kez", 7), v("va\0\r\nlue", 8);
    CHECK(c.cmd({"SET", k1, v}).is_status("OK"));
    CHECK(c.cmd({"SET", k2, "other"}).is_status("OK"));
    CHECK(c.cmd({"GET", k1}).str == v);
    CHECK(c.cmd({"GET", k2}).str == "other");
    CHECK(c.cmd({"GET", std::string("nul", 3)}).is_nil());
    CHECK(c.cmd({"DEL", k1, k2}).integer == 2);
  }

  TEST_CASE("a thousand concurrent connections are all served") {
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 1000; ++i) {
      clients.push_back(std::make_unique<Client>(server().port()));
      REQUIRE(clients.back()->ok());
    }
    for (int i = 0; i < 1000; ++i)
      clients[i]->append({"SET", "conn" + std::to_string(i), std::to_string(i)});
    int ok = 0;
    for (int i = 0; i < 1000; ++i) ok += clients[i]->get_reply().is_status("OK") ? 1 : 0;
    CHECK(ok == 1000);
    int right = 0;
    for (int i = 0; i < 1000; ++i)
      right += (*clients[(i + 1) % 1000]).cmd({"GET", "conn" + std::to_string(i)}).str ==
                       std::to_string(i)
                   ? 1
                   : 0;
    CHECK(right == 1000);
    Client probe(server().port());
    const std::string info = probe("INFO clients").str;
    CHECK(info.find("connected_clients:1001") != std::string::npos);
  }

  // Property: INCR is an atomic read-modify-write: 4 clients × 10,000 increments of one key, on
  // connections spread over both workers, end at exactly 40,000.
  TEST_CASE("four clients times ten thousand INCR on one key give exactly forty thousand") {
    Client setup(server().port());
    setup("DEL counter");
    std::vector<std::thread> threads;
    std::atomic<int> errors{0};
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        Client c(server().port());
        for (int batch = 0; batch < 100; ++batch) {
          for (int i = 0; i < 100; ++i) c.append({"INCR", "counter"});
          for (int i = 0; i < 100; ++i)
            if (c.get_reply().type != REDIS_REPLY_INTEGER) errors.fetch_add(1);
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(errors.load() == 0);
    CHECK(setup("GET counter").str == "40000");
  }

  // Property: under concurrent SET/GET/DEL of a few keys, every GET returns either nil or a value
  // some client wrote to that very key (values encode their key), never a torn or foreign value;
  // every DEL returns 0 or 1; and at the end a GET agrees with EXISTS.
  TEST_CASE("SET, GET and DEL races keep every reply consistent with some order") {
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        Client c(server().port());
        for (int i = 0; i < 3000; ++i) {
          const std::string key = "race" + std::to_string(i % 4);
          switch ((i + t) % 3) {
            case 0: {
              Reply r =
                  c.cmd({"SET", key, key + ":" + std::to_string(t) + ":" + std::to_string(i)});
              if (!r.is_status("OK")) bad.fetch_add(1);
              break;
            }
            case 1: {
              Reply r = c.cmd({"GET", key});
              if (!r.is_nil() && r.str.rfind(key + ":", 0) != 0) bad.fetch_add(1);
              break;
            }
            default: {
              Reply r = c.cmd({"DEL", key});
              if (r.type != REDIS_REPLY_INTEGER || r.integer < 0 || r.integer > 1) bad.fetch_add(1);
            }
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    CHECK(bad.load() == 0);
    Client c(server().port());
    for (int k = 0; k < 4; ++k) {
      const std::string key = "race" + std::to_string(k);
      CHECK(c.cmd({"GET", key}).is_nil() == (c.cmd({"EXISTS", key}).integer == 0));
    }
  }

  // Property: a client that pipelines without reading is throttled (the server stops reading it)
  // instead of growing the server's memory without bound, and other clients are unaffected.
  TEST_CASE("a client that never reads its replies does not grow server memory") {
    Client setup(server().port());
    setup.cmd({"SET", "fat", std::string(64 * 1024, 'f')});
    const std::size_t rss_before = server().rss_bytes();
    const int fd = kvtest::connect_raw(server().port(), 200);
    REQUIRE(fd >= 0);
    const std::string get = mbulk({"GET", "fat"});
    std::string burst;
    for (int i = 0; i < 256; ++i) burst += get;
    // Up to 64 MiB of requests (~256 MiB of replies) until the socket stops accepting them.
    for (int i = 0; i < 16000; ++i)
      if (::send(fd, burst.data(), burst.size(), MSG_NOSIGNAL | MSG_DONTWAIT) <= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(setup("PING").is_status("PONG"));
    const std::size_t rss_after = server().rss_bytes();
    CHECK(rss_after < rss_before + 128u * 1024 * 1024);
    ::close(fd);
    CHECK(setup("PING").is_status("PONG"));
  }

  TEST_CASE("SIGTERM stops the server gracefully with exit status 0") {
    kvtest::ServerProcess s({"--threads", "2"});
    REQUIRE(s.running());
    Client c(s.port());
    CHECK(c("SET x y").is_status("OK"));
    CHECK(s.stop(SIGTERM) == 0);
  }
}
