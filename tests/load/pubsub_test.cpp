// Pub/sub latency mode against real servers started here on a free loopback port and stopped by
// pid: Debian's redis-server (KVLAB_REDIS_SERVER) and kvlab-server (KVLAB_SERVER_BIN) when built;
// the same assertions hold for both.
// Exit 77 (skipped) when neither is available.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/load/test_server.hpp"
#include "tools/load/connection.hpp"
#include "tools/load/load.hpp"

extern char** environ;

using namespace kvlab::load;

namespace {

std::string g_redis_server;
std::string g_kvlab_server;

// A server child on 127.0.0.1:port; stopped (TERM, then KILL) and reaped on destruction.
class ServerProcess {
 public:
  enum Kind { kRedis, kKvlab };
  explicit ServerProcess(Kind kind = kRedis) {
    {
      testing::TestServer probe;  // the kernel picks a free port; released when probe ends
      port_ = probe.port();
    }
    const std::string port = std::to_string(port_);
    std::vector<const char*> argv;
    if (kind == kRedis) {
      argv = {
          g_redis_server.c_str(), "--port", port.c_str(), "--bind",  "127.0.0.1", "--save",   "",
          "--appendonly",         "no",     "--loglevel", "warning", "--logfile", "/dev/null"};
    } else {
      argv = {g_kvlab_server.c_str(), "--bind",    "127.0.0.1", "--port",
              port.c_str(),           "--threads", "2"};
    }
    argv.push_back(nullptr);
    if (argv[0][0] == '\0' || posix_spawn(&pid_, argv[0], nullptr, nullptr,
                                          const_cast<char**>(argv.data()), environ) != 0)
      pid_ = -1;
  }
  ~ServerProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {  // up to 2 s
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  // Waits (bounded) until the server accepts connections.
  bool ready() const {
    if (pid_ <= 0) return false;
    for (int i = 0; i < 100; ++i) {  // up to 5 s
      Connection c;
      std::string error;
      if (c.connect("127.0.0.1", port_, 0.5, &error)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  std::uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  std::uint16_t port_ = 0;
};

}  // namespace

TEST_SUITE("server") {
  // Property: every message a PUBLISH reply says was delivered reaches a subscriber, and each
  // delivery's latency (from the intended publish time) is recorded.
  TEST_CASE("pub/sub mode against redis-server delivers every message and records latencies") {
    if (g_redis_server.empty()) {
      MESSAGE("redis-server not installed: case skipped");
      return;
    }
    ServerProcess server;
    REQUIRE(server.ready());
    LoadConfig c;
    c.port = server.port();
    c.pubsub = true;
    c.threads = 2;
    c.publishers = 2;
    c.subscribers = 4;
    c.channels = 2;
    c.payload = 128;
    c.duration_s = 1.5;
    StepResult r;
    std::string error;
    REQUIRE_MESSAGE(run_step(c, 2000.0, &r, &error), error);
    const auto l = summarize_us(r.latency);
    MESSAGE("published " << r.published << ", delivered " << r.delivered << ", p50 " << l.p50
                         << " us, p99 " << l.p99 << " us");
    CHECK(r.sustained);
    CHECK(r.published >= 2800);
    // Two subscribers per channel: each publish reaches two.
    CHECK(r.promised == 2 * r.published);
    CHECK(r.delivered == r.promised);
    CHECK(r.lost() == 0);
    CHECK(r.errors() == 0);
    CHECK(r.latency.count() > 0);
    CHECK(r.latency.count() <= r.delivered);
    CHECK(l.p50 > 0);
    CHECK(l.p99 < 1e6);
  }

  // Property: as above, against kvlab-server (2 workers: publishers and subscribers may sit on
  // different workers, so deliveries cross the pub/sub inboxes).
  TEST_CASE("pub/sub mode against kvlab-server delivers every message and records latencies") {
    if (g_kvlab_server.empty()) {
      MESSAGE("kvlab-server not built: case skipped");
      return;
    }
    ServerProcess server(ServerProcess::kKvlab);
    REQUIRE(server.ready());
    LoadConfig c;
    c.port = server.port();
    c.pubsub = true;
    c.threads = 2;
    c.publishers = 2;
    c.subscribers = 4;
    c.channels = 2;
    c.payload = 128;
    c.duration_s = 1.5;
    StepResult r;
    std::string error;
    REQUIRE_MESSAGE(run_step(c, 2000.0, &r, &error), error);
    const auto l = summarize_us(r.latency);
    MESSAGE("published " << r.published << ", delivered " << r.delivered << ", p50 " << l.p50
                         << " us, p99 " << l.p99 << " us");
    CHECK(r.published >= 2800);
    CHECK(r.promised == 2 * r.published);
    CHECK(r.delivered == r.promised);
    CHECK(r.lost() == 0);
    CHECK(r.errors() == 0);
    CHECK(r.latency.count() > 0);
  }

  TEST_CASE("closed-loop GET and SET against redis-server answer without errors") {
    if (g_redis_server.empty()) {
      MESSAGE("redis-server not installed: case skipped");
      return;
    }
    ServerProcess server;
    REQUIRE(server.ready());
    LoadConfig c;
    c.port = server.port();
    c.keys = 500;
    c.connections = 4;
    c.pipeline = 2;
    c.requests = 4000;
    REQUIRE(parse_ratio("1:10", &c.commands));
    std::string error;
    REQUIRE_MESSAGE(prefill(c, &error), error);
    std::map<std::string, std::string> info;
    REQUIRE_MESSAGE(fetch_info(c, "server", &info, &error), error);
    CHECK(info.count("redis_version") == 1);
    StepResult r;
    REQUIRE_MESSAGE(run_step(c, std::nullopt, &r, &error), error);
    CHECK(r.requests == 4000);
    CHECK(r.errors() == 0);
  }
}

int main(int argc, char** argv) {
  auto executable = [](const char* var) -> std::string {
    const char* path = std::getenv(var);
    return path != nullptr && *path != '\0' && ::access(path, X_OK) == 0 ? path : "";
  };
  g_redis_server = executable("KVLAB_REDIS_SERVER");
  g_kvlab_server = executable("KVLAB_SERVER_BIN");
  if (g_redis_server.empty() && g_kvlab_server.empty()) {
    std::fprintf(stderr, "neither redis-server nor kvlab-server available: skipping\n");
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
