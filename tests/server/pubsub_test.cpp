// Pub/sub against a real kvlab-server: every command's replies and errors (Redis 7 RESP2 texts),
// subscriber-mode restrictions, glob patterns, cross-worker delivery over every kind of --queue
// backend (unbounded MPSC/MPMC, mutex, bounded with overflow), the slow-subscriber output limit,
// and --queue start-up errors. Every wait is bounded; every server is stopped by pid.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <poll.h>

#include <atomic>
#include <map>
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

// Checks a (p)(un)subscribe confirmation: [kind, name|nil, count].
void check_sub(const Reply& r, std::string_view kind, std::optional<std::string_view> name,
               long long count) {
  REQUIRE(r.type == REDIS_REPLY_ARRAY);
  REQUIRE(r.elements.size() == 3);
  CHECK(r.elements[0].str == kind);
  if (name) {
    CHECK(r.elements[1].str == *name);
  } else {
    CHECK(r.elements[1].is_nil());
  }
  CHECK(r.elements[2].integer == count);
}

// Reads pushes until a `message` on channel "sync" arrives (the publisher sends it last; one
// publisher's messages arrive in order), returning what came before it as "kind pattern? channel
// payload" lines.
// Publishes the sync marker once exactly one connection listens on "sync": a subscriber of an
// earlier test case that has disconnected may still be registered for a moment (its worker closes
// it asynchronously), and would make PUBLISH count 2 (seen once in six runs). Waits at most 2 s.
long long publish_sync(Client& pub) {
  for (int i = 0; i < 200; ++i) {
    const Reply n = pub("PUBSUB NUMSUB sync");
    if (n.elements.size() == 2 && n.elements[1].integer == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pub("PUBLISH sync end").integer;
}

std::vector<std::string> read_until_sync(Client& c) {
  std::vector<std::string> out;
  for (int i = 0; i < 1000; ++i) {
    const Reply r = c.get_reply();
    if (r.type != REDIS_REPLY_ARRAY) {
      out.push_back("<no reply>");
      return out;
    }
    std::string line;
    for (const auto& e : r.elements) line += (line.empty() ? "" : " ") + e.str;
    if (line == "message sync end") return out;
    out.push_back(line);
  }
  return out;
}

// Everything that arrives on fd within ms of quiet (raw bytes).
std::string read_for(int fd, int ms) {
  std::string out;
  char buf[4096];
  for (int i = 0; i < 100; ++i) {  // bounded
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string resp_command(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

// CLIENT REPLY OFF (and SKIP) drop replies but not the (P|S)(UN)SUBSCRIBE confirmations nor the
// messages, which Redis 7.0 sends as pushes whatever the mode, in RESP2 and RESP3 alike.
std::string reply_off_scenario(int port, int resp) {
  const int fd = kvtest::connect_raw(port);
  REQUIRE(fd >= 0);
  Client pub(port);
  std::string t;
  auto run = [&](const std::vector<std::vector<std::string>>& cmds) {
    std::string all;
    for (const auto& c : cmds) all += resp_command(c);
    REQUIRE(kvtest::send_all(fd, all));
    t += read_for(fd, 100) + "|";
  };
  if (resp == 3) run({{"HELLO", "3"}});
  t.clear();
  run({{"CLIENT", "REPLY", "OFF"}, {"SUBSCRIBE", "ch"}, {"PSUBSCRIBE", "c*"}, {"PING"}});
  t += std::to_string(pub("PUBLISH ch hi").integer);
  t += read_for(fd, 100) + "|";
  run({{"UNSUBSCRIBE", "ch"}, {"PUNSUBSCRIBE"}, {"UNSUBSCRIBE"}, {"PING"}, {"GET", "k"}});
  run({{"SSUBSCRIBE", "sx"}, {"SUNSUBSCRIBE", "sx"}, {"ECHO", "dropped"}});
  run({{"CLIENT", "REPLY", "ON"}, {"CLIENT", "REPLY", "SKIP"}, {"SUBSCRIBE", "x"}, {"PING"}});
  ::close(fd);
  return t;
}

constexpr std::string_view kSubscriberModeError =
    "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";

std::map<std::string, std::string> info_map(Client& c, std::string_view section) {
  std::map<std::string, std::string> out;
  const Reply r = c.cmd({"INFO", std::string(section)});
  std::size_t i = 0;
  while (i < r.str.size()) {
    std::size_t j = r.str.find("\r\n", i);
    if (j == std::string::npos) j = r.str.size();
    const std::string line = r.str.substr(i, j - i);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos && line[0] != '#')
      out[line.substr(0, colon)] = line.substr(colon + 1);
    i = j + 2;
  }
  return out;
}

// Waits (bounded) until PUBSUB NUMSUB channel reports `want`.
bool wait_numsub(Client& c, const std::string& channel, long long want) {
  for (int i = 0; i < 250; ++i) {
    const Reply r = c.cmd({"PUBSUB", "NUMSUB", channel});
    if (r.elements.size() == 2 && r.elements[1].integer == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace

TEST_SUITE("server") {
  TEST_CASE("SUBSCRIBE confirms each channel with the running count and PUBLISH delivers") {
    REQUIRE(server().running());
    Client sub(server().port()), pub(server().port());
    REQUIRE(sub.ok());
    REQUIRE(pub.ok());
    sub.append({"SUBSCRIBE", "c1", "c2", "c1", "sync"});
    check_sub(sub.get_reply(), "subscribe", "c1", 1);
    check_sub(sub.get_reply(), "subscribe", "c2", 2);
    check_sub(sub.get_reply(), "subscribe", "c1", 2);  // already subscribed: count unchanged
    check_sub(sub.get_reply(), "subscribe", "sync", 3);
    CHECK(pub("PUBLISH c1 hello").integer == 1);
    CHECK(pub("PUBLISH c2 world").integer == 1);
    CHECK(pub("PUBLISH nobody x").integer == 0);
    CHECK(pub.cmd({"PUBLISH", "c1", std::string("bin\0\r\nary", 9)}).integer == 1);
    CHECK(publish_sync(pub) == 1);
    const auto got = read_until_sync(sub);
    REQUIRE(got.size() == 3);
    CHECK(got[0] == "message c1 hello");
    CHECK(got[1] == "message c2 world");
    CHECK(got[2] == "message c1 " + std::string("bin\0\r\nary", 9));
  }

  TEST_CASE("CLIENT REPLY OFF keeps subscription confirmations and messages, in RESP2 and 3") {
    const std::string resp2 = reply_off_scenario(server().port(), 2);
    CHECK(resp2.find("*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n*3\r\n$10\r\n"
                     "psubscribe\r\n$2\r\nc*\r\n:2\r\n|") == 0);
    const std::string resp3 = reply_off_scenario(server().port(), 3);
    CHECK(resp3.find(">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n") == 0);
    CHECK(resp3.find("ECHO") == std::string::npos);
    kvtest::RedisProcess redis;
    if (!redis.running()) return;  // the oracle is optional
    CHECK(resp2 == reply_off_scenario(redis.port(), 2));
    CHECK(resp3 == reply_off_scenario(redis.port(), 3));
  }

  TEST_CASE("UNSUBSCRIBE and PUNSUBSCRIBE without subscriptions reply a nil name and 0") {
    Client c(server().port());
    check_sub(c("UNSUBSCRIBE"), "unsubscribe", std::nullopt, 0);
    check_sub(c("PUNSUBSCRIBE"), "punsubscribe", std::nullopt, 0);
    check_sub(c("UNSUBSCRIBE nothere"), "unsubscribe", "nothere", 0);
    check_sub(c("PUNSUBSCRIBE nothere*"), "punsubscribe", "nothere*", 0);
    CHECK(c("PING").is_status("PONG"));  // still a normal connection
  }

  TEST_CASE("UNSUBSCRIBE without arguments leaves every channel and ends subscriber mode") {
    Client c(server().port());
    c.append({"SUBSCRIBE", "u1", "u2", "u3"});
    c.append({"PSUBSCRIBE", "p*"});
    for (int i = 0; i < 4; ++i) CHECK(c.get_reply().type == REDIS_REPLY_ARRAY);
    c.append({"UNSUBSCRIBE"});
    std::set<std::string> names;
    long long last = -1;
    for (int i = 0; i < 3; ++i) {
      const Reply r = c.get_reply();
      REQUIRE(r.elements.size() == 3);
      CHECK(r.elements[0].str == "unsubscribe");
      names.insert(r.elements[1].str);
      last = r.elements[2].integer;
    }
    CHECK(names == std::set<std::string>{"u1", "u2", "u3"});
    CHECK(last == 1);  // the pattern remains
    check_sub(c("UNSUBSCRIBE"), "unsubscribe", std::nullopt, 1);
    check_error(c("GET k"),
                std::string("ERR Can't execute 'get") + std::string(kSubscriberModeError));
    check_sub(c("PUNSUBSCRIBE"), "punsubscribe", "p*", 0);
    CHECK(c("GET k").is_nil());
    CHECK(c("PING").is_status("PONG"));
  }

  TEST_CASE("subscriber mode allows only (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PING, QUIT and RESET") {
    Client c(server().port());
    check_sub(c("SUBSCRIBE m1"), "subscribe", "m1", 1);
    check_error(c("GET k"),
                std::string("ERR Can't execute 'get") + std::string(kSubscriberModeError));
    check_error(c("PUBLISH m1 x"),
                std::string("ERR Can't execute 'publish") + std::string(kSubscriberModeError));
    check_error(c("CLIENT ID"),
                std::string("ERR Can't execute 'client|id") + std::string(kSubscriberModeError));
    check_error(c("PUBSUB NUMPAT"), std::string("ERR Can't execute 'pubsub|numpat") +
                                        std::string(kSubscriberModeError));
    // Arity and unknown commands are checked first, as in Redis.
    check_error(c("GET"), "ERR wrong number of arguments for 'get' command");
    check_error(c("NOSUCH"), "ERR unknown command 'NOSUCH', with args beginning with: ");
    Reply pong = c("PING");
    REQUIRE(pong.elements.size() == 2);
    CHECK(pong.elements[0].str == "pong");
    CHECK(pong.elements[1].type == REDIS_REPLY_STRING);
    CHECK(pong.elements[1].str.empty());
    pong = c("PING hi");
    REQUIRE(pong.elements.size() == 2);
    CHECK(pong.elements[1].str == "hi");
    check_sub(c("PSUBSCRIBE m*"), "psubscribe", "m*", 2);
    CHECK(c("RESET").is_status("RESET"));
    CHECK(c("GET k").is_nil());  // RESET left subscriber mode
    Client probe(server().port());
    CHECK(wait_numsub(probe, "m1", 0));
    CHECK(probe("PUBSUB NUMPAT").integer == 0);
    check_sub(c("SUBSCRIBE m1"), "subscribe", "m1", 1);
    CHECK(c("QUIT").is_status("OK"));
  }

  TEST_CASE("pub/sub commands check arity and subcommands with Redis's texts") {
    Client c(server().port());
    check_error(c("SUBSCRIBE"), "ERR wrong number of arguments for 'subscribe' command");
    check_error(c("PSUBSCRIBE"), "ERR wrong number of arguments for 'psubscribe' command");
    check_error(c("PUBLISH ch"), "ERR wrong number of arguments for 'publish' command");
    check_error(c("PUBLISH ch a b"), "ERR wrong number of arguments for 'publish' command");
    check_error(c("PUBSUB"), "ERR wrong number of arguments for 'pubsub' command");
    check_error(c("PUBSUB NUMPAT x"), "ERR wrong number of arguments for 'pubsub|numpat' command");
    check_error(c("PUBSUB FOO"), "ERR unknown subcommand 'FOO'. Try PUBSUB HELP.");
    const Reply help = c("PUBSUB HELP");
    REQUIRE(help.type == REDIS_REPLY_ARRAY);
    CHECK(help.elements.at(0).str.starts_with("PUBSUB <subcommand>"));
    check_error(c("RESET x"), "ERR wrong number of arguments for 'reset' command");
  }

  TEST_CASE(
      "PSUBSCRIBE matches channels with Redis's glob rules and PUBLISH counts pattern receivers") {
    Client sub(server().port()), pub(server().port());
    const std::vector<std::string> patterns = {"h?llo",    "h*llo",     "h[ae]llo",
                                               "h[^e]llo", "h[a-b]llo", "h\\*llo"};
    std::vector<std::string> args = {"PSUBSCRIBE"};
    args.insert(args.end(), patterns.begin(), patterns.end());
    sub.append(args);
    for (std::size_t i = 0; i < patterns.size(); ++i)
      check_sub(sub.get_reply(), "psubscribe", patterns[i], static_cast<long long>(i + 1));
    check_sub(sub("SUBSCRIBE sync"), "subscribe", "sync", 7);
    // Expected receivers per channel.
    CHECK(pub("PUBLISH hello 1").integer == 3);    // h?llo h*llo h[ae]llo
    CHECK(pub("PUBLISH hallo 2").integer == 5);    // + h[^e]llo h[a-b]llo
    CHECK(pub("PUBLISH heeello 3").integer == 1);  // h*llo
    CHECK(pub("PUBLISH h*llo 4").integer == 4);    // h?llo h*llo h[^e]llo h\*llo
    CHECK(pub("PUBLISH hxllo 5").integer == 3);    // h?llo h*llo h[^e]llo
    CHECK(pub("PUBLISH other 6").integer == 0);
    CHECK(publish_sync(pub) == 1);
    auto got = read_until_sync(sub);
    std::multiset<std::string> lines(got.begin(), got.end());
    const std::multiset<std::string> want = {
        "pmessage h?llo hello 1",    "pmessage h*llo hello 1",     "pmessage h[ae]llo hello 1",
        "pmessage h?llo hallo 2",    "pmessage h*llo hallo 2",     "pmessage h[ae]llo hallo 2",
        "pmessage h[^e]llo hallo 2", "pmessage h[a-b]llo hallo 2", "pmessage h*llo heeello 3",
        "pmessage h?llo h*llo 4",    "pmessage h*llo h*llo 4",     "pmessage h[^e]llo h*llo 4",
        "pmessage h\\*llo h*llo 4",  "pmessage h?llo hxllo 5",     "pmessage h*llo hxllo 5",
        "pmessage h[^e]llo hxllo 5",
    };
    CHECK(lines == want);
    check_sub(sub("PUNSUBSCRIBE h?llo"), "punsubscribe", "h?llo", 6);
  }

  TEST_CASE("a connection on both a channel and a matching pattern gets message and pmessage") {
    Client sub(server().port()), pub(server().port());
    sub.append({"SUBSCRIBE", "both", "sync"});
    sub.append({"PSUBSCRIBE", "bo*"});
    for (int i = 0; i < 3; ++i) CHECK(sub.get_reply().type == REDIS_REPLY_ARRAY);
    CHECK(pub("PUBLISH both x").integer == 2);
    CHECK(publish_sync(pub) == 1);
    const auto got = read_until_sync(sub);
    REQUIRE(got.size() == 2);
    CHECK(got[0] == "message both x");
    CHECK(got[1] == "pmessage bo* both x");  // channel subscribers first, as in Redis
  }

  TEST_CASE("PUBSUB CHANNELS, NUMSUB and NUMPAT report the registry") {
    Client a(server().port()), b(server().port()), c(server().port());
    check_sub(a("SUBSCRIBE news.1"), "subscribe", "news.1", 1);
    check_sub(b("SUBSCRIBE news.1"), "subscribe", "news.1", 1);
    check_sub(b("SUBSCRIBE news.2"), "subscribe", "news.2", 2);
    check_sub(a("PSUBSCRIBE news.*"), "psubscribe", "news.*", 2);
    check_sub(b("PSUBSCRIBE news.*"), "psubscribe", "news.*", 3);
    check_sub(b("PSUBSCRIBE other.*"), "psubscribe", "other.*", 4);
    Reply ch = c("PUBSUB CHANNELS news.*");
    std::set<std::string> names;
    for (const auto& e : ch.elements) names.insert(e.str);
    CHECK(names == std::set<std::string>{"news.1", "news.2"});
    ch = c("PUBSUB CHANNELS news.[2]");
    REQUIRE(ch.elements.size() == 1);
    CHECK(ch.elements[0].str == "news.2");
    // Found by tests/compat: Redis 7.0 takes at most one pattern.
    ch = c("PUBSUB channels a b");
    CHECK(ch.type == REDIS_REPLY_ERROR);
    CHECK(ch.str ==
          "ERR unknown subcommand or wrong number of arguments for 'channels'. Try PUBSUB HELP.");
    const Reply ns = c("PUBSUB NUMSUB news.1 news.2 none");
    REQUIRE(ns.elements.size() == 6);
    CHECK(ns.elements[0].str == "news.1");
    CHECK(ns.elements[1].integer == 2);
    CHECK(ns.elements[3].integer == 1);
    CHECK(ns.elements[4].str == "none");
    CHECK(ns.elements[5].integer == 0);
    CHECK(c("PUBSUB NUMSUB").elements.empty());
    CHECK(c("PUBSUB NUMPAT").integer == 2);  // unique patterns
    auto info = info_map(c, "stats");
    CHECK(info["pubsub_channels"] == "2");
    CHECK(info["pubsub_patterns"] == "2");
    CHECK(c("PUBLISH news.1 x").integer == 4);  // 2 channel + 2 pattern subscriptions
    // Channels without subscribers disappear; closing a connection drops its subscriptions.
    for (int i = 0; i < 2; ++i) CHECK(b.get_reply().type == REDIS_REPLY_ARRAY);  // its pushes
    check_sub(b("UNSUBSCRIBE news.2"), "unsubscribe", "news.2", 3);
    CHECK(c("PUBSUB NUMSUB news.2").elements.at(1).integer == 0);
    ::shutdown(b.raw()->fd, SHUT_RDWR);
    CHECK(wait_numsub(c, "news.1", 1));
    CHECK(c("PUBSUB NUMPAT").integer == 1);
    CHECK(c("PUBLISH news.1 y").integer == 2);
  }

  TEST_CASE("INFO, CLIENT LIST, COMMAND and CONFIG know about pub/sub") {
    Client sub(server().port()), c(server().port());
    check_sub(sub("SUBSCRIBE listed"), "subscribe", "listed", 1);
    auto kv = info_map(c, "kvlab");
    CHECK(kv["kvlab_queue"] == "queue/kvlab-mpsc");
    CHECK(kv.count("kvlab_pubsub_delivered") == 1);
    CHECK(info_map(c, "clients").count("pubsub_clients") == 1);
    const std::string list = c("CLIENT LIST TYPE pubsub").str;
    CHECK(list.find("flags=P") != std::string::npos);
    CHECK(list.find("sub=1 psub=0") != std::string::npos);
    CHECK(c("CLIENT LIST TYPE normal").str.find("flags=P") == std::string::npos);
    const Reply docs =
        c("COMMAND DOCS subscribe publish pubsub psubscribe unsubscribe punsubscribe");
    REQUIRE(docs.elements.size() == 12);
    for (std::size_t i = 1; i < docs.elements.size(); i += 2) {
      const Reply& d = docs.elements[i];
      REQUIRE(d.elements.size() >= 8);
      CHECK(d.elements[0].str == "summary");
      CHECK(!d.elements[1].str.empty());
      CHECK(d.elements[5].str == "pubsub");  // group
    }
    const Reply info = c("COMMAND INFO publish");
    REQUIRE(info.elements.size() == 1);
    bool pubsub_flag = false;
    for (const auto& f : info.elements[0].elements.at(2).elements) pubsub_flag |= f.str == "pubsub";
    CHECK(pubsub_flag);
    CHECK(info.elements[0].elements.at(1).integer == 3);
    const Reply cfg = c("CONFIG GET client-output-buffer-limit");
    REQUIRE(cfg.elements.size() == 2);
    CHECK(cfg.elements[1].str ==
          "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
    CHECK(c.cmd({"CONFIG", "SET", "client-output-buffer-limit", "pubsub 64mb 16mb 30"})
              .is_status("OK"));
    CHECK(c("CONFIG GET client-output-buffer-limit")
              .elements.at(1)
              .str.ends_with("pubsub 67108864 16777216 30"));
    check_error(c.cmd({"CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb"}),
                "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') "
                "- Wrong number of arguments in buffer limit configuration.");
    check_error(c.cmd({"CONFIG", "SET", "client-output-buffer-limit", "bogus 1 1 1"}),
                "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') "
                "- Invalid client class specified in buffer limit configuration.");
    CHECK(c.cmd({"CONFIG", "SET", "client-output-buffer-limit", "pubsub 32mb 8mb 60"})
              .is_status("OK"));
  }

  TEST_CASE("--queue rejects unknown names, map backends and non-FIFO queues at start-up") {
    std::string out;
    int rc = kvtest::run_capture(
        "timeout 20 " + kvtest::server_path() + " --port 1 --queue queue/nope", &out);
    CHECK(rc == 2);
    CHECK(out.find("unknown queue backend 'queue/nope'") != std::string::npos);
    out.clear();
    rc = kvtest::run_capture(
        "timeout 20 " + kvtest::server_path() + " --port 1 --queue hash/locked", &out);
    CHECK(rc == 2);
    CHECK(out.find("'hash/locked' is a hash backend, not a queue") != std::string::npos);
    out.clear();
    rc = kvtest::run_capture(
        "timeout 20 " + kvtest::server_path() + " --port 1 --queue queue/cds-segmented", &out);
    CHECK(rc == 2);  // quasi-FIFO: would reorder one publisher's messages
    CHECK(out.find("lacks the fifo capability") != std::string::npos);
  }
}

// ---- cross-worker delivery, parameterized over queue backends ----

namespace {

struct CrossRun {
  std::vector<std::string> flags;
  std::string name;
};

// One subscriber connection on its own thread: subscribes (channel or pattern), then reads
// `expect` pushes and checks that payloads are 0, 1, 2, … in order.
struct Subscriber {
  std::thread thread;
  std::atomic<bool> ready{false};
  bool ok = false;
  std::atomic<long> received{0};  // read by the pacing publisher
  std::atomic<bool> done{false};  // set when the thread stops reading, success or not
  std::string failure;
};

void read_subscription(Subscriber& s, int port, bool pattern, long expect);

void run_subscriber(Subscriber& s, int port, bool pattern, long expect) {
  read_subscription(s, port, pattern, expect);
  s.done.store(true);
}

void read_subscription(Subscriber& s, int port, bool pattern, long expect) {
  Client c(port, 15000);
  if (!c.ok()) {
    s.failure = "connect failed";
    s.ready.store(true);
    return;
  }
  const Reply conf = pattern ? c("PSUBSCRIBE fe?d") : c("SUBSCRIBE feed");
  s.ready.store(true);  // seq_cst: the main thread waits for every subscriber
  if (conf.type != REDIS_REPLY_ARRAY) {
    s.failure = "subscribe failed";
    return;
  }
  for (long i = 0; i < expect; ++i) {
    const Reply r = c.get_reply();
    const std::size_t want = pattern ? 4 : 3;
    if (r.type != REDIS_REPLY_ARRAY || r.elements.size() != want) {
      s.failure = "no message " + std::to_string(i);
      return;
    }
    if (pattern && (r.elements[0].str != "pmessage" || r.elements[1].str != "fe?d")) {
      s.failure = "bad pmessage " + r.elements[0].str;
      return;
    }
    if (!pattern && r.elements[0].str != "message") {
      s.failure = "bad message " + r.elements[0].str;
      return;
    }
    const std::string& payload = r.elements.back().str;  // "i" or "i:padding"
    if (payload.substr(0, payload.find(':')) != std::to_string(i)) {
      s.failure = "out of order at " + std::to_string(i) + ": " + payload.substr(0, 20);
      return;
    }
    ++s.received;
  }
  s.ok = true;
}

// Publishes 0..n-1 on "feed" in pipelined windows; returns false on any unexpected count.
bool publish_sequence(Client& pub, long n, long long receivers, std::string* why) {
  constexpr long kWindow = 100;
  for (long i = 0; i < n; i += kWindow) {
    const long end = std::min(n, i + kWindow);
    for (long k = i; k < end; ++k) pub.append({"PUBLISH", "feed", std::to_string(k)});
    for (long k = i; k < end; ++k) {
      const Reply r = pub.get_reply();
      if (r.type != REDIS_REPLY_INTEGER || r.integer != receivers) {
        *why = "PUBLISH " + std::to_string(k) + " returned type " + std::to_string(r.type) +
               " value " + std::to_string(r.integer);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

TEST_SUITE("server") {
  // Property: with 4 workers and the publisher and 50 subscribers spread over them by
  // SO_REUSEPORT, every subscriber receives every message exactly once and in publish order,
  // pattern subscribers get pmessage with their pattern, and PUBLISH counts every receiver —
  // for every FIFO queue backend behind the inboxes (queue/cds-segmented, quasi-FIFO, is refused
  // at start-up), including a bounded one small enough to spill into the overflow list.
  TEST_CASE("1 publisher and 50 subscribers on 4 workers receive every message in order") {
    const std::vector<CrossRun> runs = {
        {{"--queue", "queue/kvlab-mpsc"}, "queue/kvlab-mpsc"},
        {{"--queue", "queue/mutex"}, "queue/mutex"},
        {{"--queue", "queue/kvlab"}, "queue/kvlab"},
        {{"--queue", "queue/cds-vyukov"}, "queue/cds-vyukov"},
        {{"--queue", "queue/cds-vyukov", "--queue-capacity", "2"}, "queue/cds-vyukov (capacity 2)"},
        {{"--queue", "queue/cds-ms"}, "queue/cds-ms"},
        {{"--queue", "queue/cds-basket"}, "queue/cds-basket"},
        {{"--queue", "queue/tbb"}, "queue/tbb"},
    };
    constexpr int kSubscribers = 50, kPatternSubscribers = 10;
    constexpr long kMessages = 2000;
    for (const CrossRun& run : runs) {
      CAPTURE(run.name);
      std::vector<std::string> flags = {"--threads", "4"};
      flags.insert(flags.end(), run.flags.begin(), run.flags.end());
      kvtest::ServerProcess srv(flags);
      REQUIRE(srv.running());
      std::vector<Subscriber> subs(kSubscribers);
      for (int i = 0; i < kSubscribers; ++i) {
        const bool pattern = i < kPatternSubscribers;
        subs[i].thread = std::thread(
            [&, i, pattern] { run_subscriber(subs[i], srv.port(), pattern, kMessages); });
      }
      for (int t = 0; t < 500; ++t) {  // up to 10 s
        bool all = true;
        for (auto& s : subs) all = all && s.ready.load();
        if (all) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      Client pub(srv.port(), 15000);
      REQUIRE(pub.ok());
      CHECK(wait_numsub(pub, "feed", kSubscribers - kPatternSubscribers));
      CHECK(pub("PUBSUB NUMPAT").integer == 1);
      // More than one worker holds subscribers (50 connections over 4 listeners).
      auto kv = info_map(pub, "kvlab");
      int workers_with_subs = 0;
      for (int w = 0; w < 4; ++w) {
        const std::string line = kv["kvlab_worker" + std::to_string(w)];
        if (line.find("pubsub_clients=0,") == std::string::npos) ++workers_with_subs;
      }
      CHECK(workers_with_subs > 1);
      CHECK(kv["kvlab_queue"] == run.flags[1]);
      std::string why;
      const auto t0 = std::chrono::steady_clock::now();
      CHECK_MESSAGE(publish_sequence(pub, kMessages, kSubscribers, &why), why);
      for (auto& s : subs) s.thread.join();  // each stops after kMessages or a 15 s timeout
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      int complete = 0;
      for (auto& s : subs) {
        if (s.ok) ++complete;
        if (!s.ok) MESSAGE("subscriber failed: " << s.failure << " after " << s.received);
      }
      CHECK(complete == kSubscribers);
      kv = info_map(pub, "kvlab");
      long overflows = 0;
      for (int w = 0; w < 4; ++w) {
        const std::string line = kv["kvlab_worker" + std::to_string(w)];
        const auto p = line.find("inbox_overflows=");
        if (p != std::string::npos) overflows += std::stol(line.substr(p + 16));
      }
      MESSAGE(run.name << ": " << kMessages << " messages x " << kSubscribers
                       << " subscribers delivered in " << secs << " s, workers with subscribers "
                       << workers_with_subs << ", inbox overflows " << overflows);
      CHECK(srv.stop() == 0);  // graceful shutdown frees whatever is still queued
    }
  }

  // Property: a subscriber that never reads is disconnected once its unsent output passes the
  // pubsub output-buffer limit; the publisher is never blocked and the other subscribers still
  // receive every message in order. (The publisher paces itself so that the reading subscribers,
  // threads on a 2-core machine, stay within the limit; the one that never reads cannot.)
  TEST_CASE("a subscriber that never reads is disconnected and the others keep receiving") {
    kvtest::ServerProcess srv({"--threads", "4"});
    REQUIRE(srv.running());
    Client admin(srv.port());
    REQUIRE(admin.cmd({"CONFIG", "SET", "client-output-buffer-limit", "pubsub 2mb 0 0"})
                .is_status("OK"));
    // The slow subscriber: a tiny receive buffer, subscribes, never reads again.
    const int slow = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int small = 4096;
    setsockopt(slow, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(srv.port()));
    REQUIRE(::connect(slow, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(kvtest::send_all(slow, "*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nfeed\r\n"));
    constexpr int kReaders = 5;
    constexpr long kMessages = 4000;
    std::vector<Subscriber> subs(kReaders);
    for (int i = 0; i < kReaders; ++i)
      subs[i].thread =
          std::thread([&, i] { run_subscriber(subs[i], srv.port(), false, kMessages); });
    for (int t = 0; t < 500; ++t) {
      bool all = true;
      for (auto& s : subs) all = all && s.ready.load();
      if (all) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Client pub(srv.port(), 15000);
    REQUIRE(wait_numsub(pub, "feed", kReaders + 1));
    // 4000 x 4 KiB = 16 MiB: far beyond 2 MiB plus what the kernel buffers hold.
    const std::string pad(4096, 'x');
    const auto t0 = std::chrono::steady_clock::now();
    long long last = kReaders + 1;
    bool counts_ok = true;
    for (long i = 0; i < kMessages; i += 50) {
      for (long k = i; k < i + 50; ++k)
        pub.append({"PUBLISH", "feed", std::to_string(k) + ":" + pad});
      for (long k = i; k < i + 50; ++k) {
        const Reply r = pub.get_reply();
        // kReaders + 1 until the slow one is cut off, kReaders after; never blocked (timeout).
        if (r.type != REDIS_REPLY_INTEGER || r.integer > last || r.integer < kReaders)
          counts_ok = false;
        last = r.integer;
      }
      // Pacing: let the readers come within 100 messages (400 KiB) before the next window.
      for (int t = 0; t < 1000; ++t) {  // up to 10 s
        bool close_enough = true;
        for (auto& s : subs)
          close_enough = close_enough && (s.received.load() + 100 >= i + 50 || s.done.load());
        if (close_enough) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(counts_ok);
    CHECK(last == kReaders);
    CHECK(secs < 60);
    for (auto& s : subs) s.thread.join();
    for (auto& s : subs) CHECK_MESSAGE(s.ok, s.failure << " after " << s.received);
    bool closed = false;
    const std::string drained = kvtest::read_until_close(slow, 5000, &closed);
    CHECK(closed);
    CHECK(drained.size() < 16u * 1024 * 1024);
    CHECK(std::stol(info_map(admin, "kvlab")["kvlab_client_output_buffer_limit_disconnections"]) >=
          1);
    MESSAGE("slow subscriber cut off after " << drained.size() << " bytes reached it; " << kMessages
                                             << " publishes took " << secs << " s");
    ::close(slow);
  }
}
