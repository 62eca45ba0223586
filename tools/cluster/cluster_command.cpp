// kvlab cluster: the manager of kvlab-server clusters (server/features/cluster.hpp). Nodes do not gossip;
// this tool computes one configuration and pushes it to every node with KVLAB CLUSTER CONFIG.
//
//   kvlab cluster create HOST:PORT...    even slot split over the nodes, pushed to all
//   kvlab cluster show HOST:PORT         the slot map, keys and ops/s per node
//   kvlab cluster check HOST:PORT        every node holds the same configuration
//   kvlab cluster reshard HOST:PORT --from ID --to ID --slots N|START-END
//                                        live migration of slots (server/features/cluster_migration.hpp)
//   kvlab cluster local N                start N nodes on loopback, create, run until Ctrl-C
#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tools/cli/subcommands.hpp"

namespace kvlab::cli {
namespace {

constexpr int kSlots = 16384;

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "kvlab cluster: %s\n", msg.c_str());
  throw CLI::RuntimeError(1);
}

struct Addr {
  std::string host;
  int port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

Addr parse_addr(const std::string& s) {
  const auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) fail("'" + s + "' is not HOST:PORT");
  Addr a{s.substr(0, colon), std::atoi(s.c_str() + colon + 1)};
  if (a.port < 1 || a.port > 65535) fail("'" + s + "': bad port");
  return a;
}

using Conn = std::unique_ptr<redisContext, decltype(&redisFree)>;
using Reply = std::unique_ptr<redisReply, decltype(&freeReplyObject)>;

Conn connect(const Addr& a, bool must = true) {
  const timeval tv{2, 0};
  Conn c(redisConnectWithTimeout(a.host.c_str(), a.port, tv), &redisFree);
  if (c == nullptr || c->err) {
    if (!must) return Conn(nullptr, &redisFree);
    fail("cannot connect to " + a.text() + (c ? std::string(": ") + c->errstr : ""));
  }
  redisSetTimeout(c.get(), tv);
  return c;
}

Reply command(redisContext* c, const std::vector<std::string>& args, const Addr& a) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lens;
  for (const auto& s : args) argv.push_back(s.data()), lens.push_back(s.size());
  Reply r(static_cast<redisReply*>(
              redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())),
          &freeReplyObject);
  if (r == nullptr) fail(a.text() + ": no reply (" + std::string(c->errstr) + ")");
  if (r->type == REDIS_REPLY_ERROR) fail(a.text() + ": " + std::string(r->str, r->len));
  return r;
}

std::string text_of(const Reply& r) {
  return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS
             ? std::string(r->str, r->len)
             : std::string();
}

// The configuration a node holds (null when it has none).
nlohmann::json get_config(const Addr& a) {
  Conn c = connect(a);
  Reply r = command(c.get(), {"KVLAB", "CLUSTER", "GETCONFIG"}, a);
  if (r->type == REDIS_REPLY_NIL) return nullptr;
  return nlohmann::json::parse(text_of(r));
}

int create(const std::vector<Addr>& nodes) {
  if (nodes.empty()) fail("name at least one node");
  std::vector<std::string> ids;
  std::uint64_t epoch = 0;
  for (const auto& a : nodes) {
    Conn c = connect(a);
    ids.push_back(text_of(command(c.get(), {"CLUSTER", "MYID"}, a)));
    Reply r = command(c.get(), {"KVLAB", "CLUSTER", "GETCONFIG"}, a);
    if (r->type != REDIS_REPLY_NIL)
      epoch = std::max(epoch, nlohmann::json::parse(text_of(r)).value("epoch", std::uint64_t{0}));
  }
  nlohmann::json cfg;
  cfg["epoch"] = epoch + 1;
  cfg["shards"] = nlohmann::json::array();
  const int n = static_cast<int>(nodes.size());
  for (int i = 0; i < n; ++i) {
    const int start = kSlots * i / n, end = kSlots * (i + 1) / n - 1;
    cfg["shards"].push_back(
        {{"slot_ranges", {{{"start", start}, {"end", end}}}},
         {"master", {{"id", ids[i]}, {"ip", nodes[i].host}, {"port", nodes[i].port}}},
         {"replicas", nlohmann::json::array()}});
  }
  const std::string json = cfg.dump();
  for (const auto& a : nodes) {
    Conn c = connect(a);
    command(c.get(), {"KVLAB", "CLUSTER", "CONFIG", json}, a);
  }
  std::printf("cluster configured: %d nodes, epoch %llu\n", n,
              static_cast<unsigned long long>(epoch + 1));
  for (int i = 0; i < n; ++i)
    std::printf("  %s  %s  slots %d-%d\n", ids[i].c_str(), nodes[i].text().c_str(), kSlots * i / n,
                kSlots * (i + 1) / n - 1);
  return 0;
}

std::string info_field(const std::string& info, const std::string& name) {
  const auto at = info.find(name + ":");
  if (at == std::string::npos) return "?";
  const auto end = info.find("\r\n", at);
  return info.substr(at + name.size() + 1, end - at - name.size() - 1);
}

int show(const Addr& entry) {
  const nlohmann::json cfg = get_config(entry);
  if (cfg.is_null()) fail(entry.text() + " has no cluster configuration yet");
  std::printf("epoch %llu, %zu nodes\n", static_cast<unsigned long long>(cfg.value("epoch", 0ull)),
              cfg["shards"].size());
  std::printf("%-40s  %-21s  %-16s  %10s  %10s\n", "node", "address", "slots", "keys", "ops/s");
  for (const auto& s : cfg["shards"]) {
    const Addr a{s["master"]["ip"].get<std::string>(), s["master"]["port"].get<int>()};
    std::string slots;
    for (const auto& r : s["slot_ranges"])
      slots += (slots.empty() ? "" : ",") + std::to_string(r["start"].get<int>()) + "-" +
               std::to_string(r["end"].get<int>());
    std::string keys = "down", ops = "-";
    if (Conn c = connect(a, false); c != nullptr) {
      Reply k(static_cast<redisReply*>(redisCommand(c.get(), "DBSIZE")), &freeReplyObject);
      if (k && k->type == REDIS_REPLY_INTEGER) keys = std::to_string(k->integer);
      Reply i(static_cast<redisReply*>(redisCommand(c.get(), "INFO stats")), &freeReplyObject);
      if (i) ops = info_field(text_of(i), "instantaneous_ops_per_sec");
    }
    std::printf("%-40s  %-21s  %-16s  %10s  %10s\n", s["master"]["id"].get<std::string>().c_str(),
                a.text().c_str(), slots.c_str(), keys.c_str(), ops.c_str());
  }
  return 0;
}

int check(const Addr& entry) {
  const nlohmann::json cfg = get_config(entry);
  if (cfg.is_null()) fail(entry.text() + " has no cluster configuration yet");
  std::vector<int> owners(kSlots, 0);
  int problems = 0;
  for (const auto& s : cfg["shards"])
    for (const auto& r : s["slot_ranges"])
      for (int x = r["start"].get<int>(); x <= r["end"].get<int>(); ++x) ++owners[x];
  for (int x = 0; x < kSlots; ++x)
    if (owners[x] != 1) {
      std::printf("slot %d is owned %d times\n", x, owners[x]);
      ++problems;
      break;
    }
  for (const auto& s : cfg["shards"]) {
    const Addr a{s["master"]["ip"].get<std::string>(), s["master"]["port"].get<int>()};
    const nlohmann::json other = get_config(a);
    if (other != cfg) {
      std::printf("%s holds a different configuration (epoch %s)\n", a.text().c_str(),
                  other.is_null() ? "none" : std::to_string(other.value("epoch", 0ull)).c_str());
      ++problems;
    }
  }
  if (problems == 0)
    std::printf("ok: %zu nodes agree on epoch %llu; every slot is owned once\n",
                cfg["shards"].size(), static_cast<unsigned long long>(cfg.value("epoch", 0ull)));
  return problems == 0 ? 0 : 1;
}

// The ranges of a set of slots.
nlohmann::json ranges_of(const std::vector<bool>& in) {
  nlohmann::json r = nlohmann::json::array();
  for (int s = 0; s < kSlots;) {
    if (!in[s]) {
      ++s;
      continue;
    }
    int e = s;
    while (e + 1 < kSlots && in[e + 1]) ++e;
    r.push_back({{"start", s}, {"end", e}});
    s = e + 1;
  }
  return r;
}

// Pushes cfg to every node: `first` first, `last` last (a migration's target, then its source:
// cluster_migration.hpp says why).
void push(const nlohmann::json& cfg, const std::string& first, const std::string& last) {
  const std::string json = cfg.dump();
  std::vector<nlohmann::json> order;
  for (const auto& s : cfg["shards"])
    if (s["master"]["id"] == first) order.push_back(s["master"]);
  for (const auto& s : cfg["shards"])
    if (s["master"]["id"] != first && s["master"]["id"] != last) order.push_back(s["master"]);
  for (const auto& s : cfg["shards"])
    if (s["master"]["id"] == last) order.push_back(s["master"]);
  for (const auto& m : order) {
    const Addr a{m["ip"].get<std::string>(), m["port"].get<int>()};
    Conn c = connect(a);
    command(c.get(), {"KVLAB", "CLUSTER", "CONFIG", json}, a);
  }
}

// Moves slots from one node to another while clients keep using them: pushes the configuration
// with the migration, waits until the source has streamed every key (CLUSTER INFO's
// kvlab_migration_* lines), then pushes the configuration with the slots owned by the target.
int reshard(const Addr& entry, const std::string& from, const std::string& to,
            const std::string& slots_arg) {
  nlohmann::json cfg = get_config(entry);
  if (cfg.is_null()) fail(entry.text() + " has no cluster configuration yet");
  int src = -1, dst = -1;
  for (int i = 0; i < static_cast<int>(cfg["shards"].size()); ++i) {
    const std::string id = cfg["shards"][i]["master"]["id"].get<std::string>();
    if (id == from) src = i;
    if (id == to) dst = i;
  }
  if (src < 0) fail("no node " + from + " in the configuration");
  if (dst < 0) fail("no node " + to + " in the configuration");
  if (src == dst) fail("--from and --to name the same node");
  std::vector<bool> owned(kSlots, false), moving(kSlots, false);
  for (const auto& r : cfg["shards"][src]["slot_ranges"])
    for (int x = r["start"].get<int>(); x <= r["end"].get<int>(); ++x) owned[x] = true;
  int count = 0;
  if (const auto dash = slots_arg.find('-'); dash != std::string::npos) {
    char* end = nullptr;
    const long a = std::strtol(slots_arg.c_str(), &end, 10);
    const long b = std::strtol(slots_arg.c_str() + dash + 1, &end, 10);
    if (a < 0 || b >= kSlots || a > b) fail("--slots " + slots_arg + ": not a slot range");
    for (long x = a; x <= b; ++x) {
      if (!owned[x]) fail("slot " + std::to_string(x) + " is not owned by " + from);
      moving[x] = true;
      ++count;
    }
  } else {
    const int n = std::atoi(slots_arg.c_str());
    if (n <= 0) fail("--slots needs a positive count or START-END");
    for (int x = kSlots - 1; x >= 0 && count < n; --x)  // the source's highest slots
      if (owned[x]) moving[x] = true, ++count;
    if (count < n) fail(from + " owns only " + std::to_string(count) + " slots");
  }
  for (auto& s : cfg["shards"]) s.erase("migrations");  // a failed earlier reshard's
  const std::uint64_t epoch = cfg.value("epoch", std::uint64_t{0});
  const Addr source{cfg["shards"][src]["master"]["ip"].get<std::string>(),
                    cfg["shards"][src]["master"]["port"].get<int>()};
  // 1. The migration.
  cfg["epoch"] = epoch + 1;
  cfg["shards"][src]["migrations"] = {{{"slot_ranges", ranges_of(moving)}, {"node_id", to}}};
  push(cfg, to, from);
  std::printf("epoch %llu: migrating %d slots from %s to %s\n",
              static_cast<unsigned long long>(epoch + 1), count, from.c_str(), to.c_str());
  std::fflush(stdout);
  // 2. Wait for the source to stream every key.
  const auto t0 = std::chrono::steady_clock::now();
  auto last_print = t0;
  for (;;) {
    Conn c = connect(source);
    const std::string info = text_of(command(c.get(), {"CLUSTER", "INFO"}, source));
    const std::string state = info_field(info, "kvlab_migration_state");
    const bool mine = info_field(info, "kvlab_migration_epoch") == std::to_string(epoch + 1);
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - t0).count();
    if (mine && (state == "failed" || state == "cancelled"))
      fail("migration " + state + ": " + info_field(info, "kvlab_migration_error") +
           " (the source still owns the slots; the keys not moved are on it)");
    if (mine && state == "done") {
      std::printf("streamed %s keys in %.2f s\n",
                  info_field(info, "kvlab_migration_keys_moved").c_str(), secs);
      break;
    }
    if (now - last_print >= std::chrono::seconds(1)) {
      std::printf("  %.0f s: %s keys moved\n", secs,
                  mine ? info_field(info, "kvlab_migration_keys_moved").c_str() : "0");
      std::fflush(stdout);
      last_print = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // 3. The flip: the target owns the slots.
  cfg["epoch"] = epoch + 2;
  cfg["shards"][src].erase("migrations");
  std::vector<bool> dst_owned(kSlots, false);
  for (const auto& r : cfg["shards"][dst]["slot_ranges"])
    for (int x = r["start"].get<int>(); x <= r["end"].get<int>(); ++x) dst_owned[x] = true;
  for (int x = 0; x < kSlots; ++x) {
    if (moving[x]) owned[x] = false, dst_owned[x] = true;
  }
  cfg["shards"][src]["slot_ranges"] = ranges_of(owned);
  cfg["shards"][dst]["slot_ranges"] = ranges_of(dst_owned);
  push(cfg, to, from);
  std::printf("epoch %llu: %s owns the %d slots\n", static_cast<unsigned long long>(epoch + 2),
              to.c_str(), count);
  return 0;
}

// A port nothing listens on now: the kernel's pick for a socket bound to port 0.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    if (fd >= 0) ::close(fd);
    fail("no free port found");
  }
  ::close(fd);
  return ntohs(sa.sin_port);
}

std::string default_server() {
  // The build tree's server next to the CLI (build/tools/cli/kvlab -> build/server/kvlab-server),
  // else the one on PATH.
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto p = self.parent_path().parent_path().parent_path() / "server" / "kvlab-server";
    if (std::filesystem::exists(p)) return p.string();
  }
  return "kvlab-server";
}

volatile sig_atomic_t g_stop = 0;

int local(int n, const std::string& server, int threads) {
  if (n < 1 || n > 64) fail("N must be 1 to 64");
  std::vector<pid_t> pids;
  std::vector<Addr> nodes;
  auto stop_all = [&] {
    for (pid_t p : pids) kill(p, SIGTERM);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
  };
  for (int i = 0; i < n; ++i) {
    const int port = free_port();
    const pid_t pid = fork();
    if (pid == 0) {
      // The nodes' start-up logs would drown the address line; CLUSTER INFO and INFO tell more.
      if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {
        ::dup2(null, 1);
        ::dup2(null, 2);
      }
      const std::string p = std::to_string(port), t = std::to_string(threads);
      execlp(server.c_str(), server.c_str(), "--port", p.c_str(), "--threads", t.c_str(),
             "--cluster-mode", "yes", static_cast<char*>(nullptr));
      std::perror(("kvlab cluster: cannot run " + server).c_str());
      _exit(127);
    }
    pids.push_back(pid);
    nodes.push_back({"127.0.0.1", port});
  }
  for (const auto& a : nodes) {  // wait until every node answers
    bool up = false;
    for (int t = 0; t < 200 && !up; ++t) {
      up = connect(a, false) != nullptr;
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!up) {
      stop_all();
      fail("node " + a.text() + " did not start (is " + server + " built?)");
    }
  }
  try {
    create(nodes);
  } catch (...) {
    stop_all();
    throw;
  }
  std::printf("cluster ready: %s (%d nodes); Ctrl-C stops it\n", nodes[0].text().c_str(), n);
  std::fflush(stdout);
  signal(SIGINT, [](int) { g_stop = 1; });
  signal(SIGTERM, [](int) { g_stop = 1; });
  while (!g_stop) {
    int status = 0;
    for (pid_t p : pids)
      if (waitpid(p, &status, WNOHANG) == p) {
        std::fprintf(stderr, "kvlab cluster: a node (pid %d) exited; stopping the others\n", p);
        g_stop = 1;
      }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  stop_all();
  return 0;
}

}  // namespace

void add_cluster(CLI::App& app) {
  auto* cl = app.add_subcommand("cluster", "manage kvlab-server clusters (KVLAB CLUSTER CONFIG)");
  cl->require_subcommand(1);
  static std::vector<std::string> create_nodes;
  auto* cr = cl->add_subcommand("create", "split the 16384 slots evenly over the nodes");
  cr->add_option("nodes", create_nodes, "HOST:PORT of each node (kvlab-server --cluster-mode yes)")
      ->required();
  cr->callback([] {
    std::vector<Addr> nodes;
    for (const auto& s : create_nodes) nodes.push_back(parse_addr(s));
    if (create(nodes) != 0) throw CLI::RuntimeError(1);
  });
  static std::string show_node, check_node;
  auto* sh = cl->add_subcommand("show", "the slot map, keys and ops/s of every node");
  sh->add_option("node", show_node, "HOST:PORT of any node")->required();
  sh->callback([] {
    if (show(parse_addr(show_node)) != 0) throw CLI::RuntimeError(1);
  });
  auto* ck = cl->add_subcommand("check", "every node holds the same configuration");
  ck->add_option("node", check_node, "HOST:PORT of any node")->required();
  ck->callback([] {
    if (check(parse_addr(check_node)) != 0) throw CLI::RuntimeError(1);
  });
  static std::string rs_node, rs_from, rs_to, rs_slots;
  auto* rs = cl->add_subcommand("reshard", "move slots between nodes while clients use them");
  rs->add_option("node", rs_node, "HOST:PORT of any node")->required();
  rs->add_option("--from", rs_from, "node id of the source")->required();
  rs->add_option("--to", rs_to, "node id of the target")->required();
  rs->add_option("--slots", rs_slots, "how many slots (the source's highest), or START-END")
      ->required();
  rs->callback([] {
    if (reshard(parse_addr(rs_node), rs_from, rs_to, rs_slots) != 0) throw CLI::RuntimeError(1);
  });
  static int local_n = 3, local_threads = 1;
  static std::string local_server;
  auto* lo = cl->add_subcommand("local", "start N nodes on loopback ports and configure them");
  lo->add_option("n", local_n, "number of nodes")->capture_default_str();
  lo->add_option("--server", local_server, "kvlab-server binary (default: the build's)");
  lo->add_option("--threads", local_threads, "worker threads per node")->capture_default_str();
  lo->callback([] {
    const int rc =
        local(local_n, local_server.empty() ? default_server() : local_server, local_threads);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace kvlab::cli
