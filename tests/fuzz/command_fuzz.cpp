// Fuzz target: random command sequences through the command table, over an in-process keyspace.
//
// Input: byte 0 chooses the keyspace backend (kBackends[byte % 4]: two hash maps, the skip list
// and one libcds map, so that ordered and unordered, locked and lock-free keyspaces all run). The
// rest is a list of commands, one per line ('\n'), arguments separated by one blank (two blanks
// give an empty argument); a backslash takes the next byte literally, so any byte can be in an
// argument. Each command goes to the server as a RESP multibulk through the real path of a
// connection — RequestParser, prefetch hint, dispatch() with its arity/auth/MULTI/atomicity
// checks, the handler, the statistics — on a Server with one in-process worker
// (Server::start_in_process, Worker::run_in_process): no socket, no thread. A fresh Server serves
// every input, so inputs do not depend on each other.
//
// Commands left out (kExcluded; the harness drops them before they reach the server), because
// they wait, end or stall the process, or can run without bound — nothing a single input could
// finish: the blocking commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP,
// and XREAD/XREADGROUP with BLOCK), WAIT (waits for replicas), SHUTDOWN, the scripting commands
// (EVAL*, FCALL*, FUNCTION, SCRIPT: a script may loop forever, as in Redis), CLIENT KILL (could
// close the harness's own connection), CLIENT PAUSE (stalls every client), CONFIG REWRITE (writes
// a file), MIGRATE (connects to whatever host the input names). Process-wide settings that CONFIG
// SET may change (hll-sparse-max-bytes, the stream node limits) are put back after each input.
//
// Properties: no crash, no sanitizer report, no leak; after each batch of commands the output is
// a sequence of complete, well-formed RESP frames (tests/fuzz/resp_reader.hpp) of the protocol the
// connection speaks (RESP2 unless a HELLO in the batch may have switched it), and, when no command
// of the batch may answer more or less than once (reply_count_varies), one frame per command,
// RESP3 push frames aside.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/command.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/net/server.hpp"
#include "server/util/strings_util.hpp"
#include "server/net/worker.hpp"
#include "structures/reclaim/epoch.hpp"
#include "tests/fuzz/resp_reader.hpp"

namespace {

using namespace kvlab::server;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr std::string_view kBackends[] = {"hash/kvlab", "hash/locked", "skiplist/kvlab",
                                          "hash/cds-michael"};

constexpr std::string_view kExcluded[] = {
    "blpop",      "brpop", "blmove",   "brpoplpush", "blmpop", "bzpopmin", "bzpopmax",
    "bzmpop",     "wait",  "waitaof",  "shutdown",   "eval",   "eval_ro",  "evalsha",
    "evalsha_ro", "fcall", "fcall_ro", "function",   "script", "migrate"};

bool excluded(const std::vector<std::string>& argv) {
  for (std::string_view x : kExcluded)
    if (iequals(argv[0], x)) return true;
  if (argv.size() >= 2 && iequals(argv[0], "client") &&
      (iequals(argv[1], "kill") || iequals(argv[1], "pause")))
    return true;
  if (argv.size() >= 2 && iequals(argv[0], "config") && iequals(argv[1], "rewrite")) return true;
  if (iequals(argv[0], "xread") || iequals(argv[0], "xreadgroup")) {
    for (const std::string& a : argv)
      if (iequals(a, "block")) return true;
  }
  return false;
}

// Commands whose number of replies is not one: (un)subscribing answers per channel, a subscriber
// receives messages (PUBLISH), CLIENT REPLY OFF/SKIP silences replies, MONITOR feeds commands.
bool reply_count_varies(std::string_view name) {
  for (std::string_view x : {"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe",
                             "sunsubscribe", "publish", "spublish", "client", "monitor", "quit"})
    if (iequals(name, x)) return true;
  return false;
}

// The commands of the input (see the file comment).
std::vector<std::vector<std::string>> split(std::string_view s) {
  std::vector<std::vector<std::string>> cmds;
  std::vector<std::string> argv(1);
  auto end_command = [&] {
    if (!(argv.size() == 1 && argv[0].empty()) && !excluded(argv)) cmds.push_back(argv);
    argv.assign(1, {});
  };
  for (std::size_t i = 0; i < s.size() && cmds.size() < 256; ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size()) {
      argv.back() += s[++i];
    } else if (c == ' ') {
      if (argv.size() < 64) argv.emplace_back();
    } else if (c == '\n') {
      end_command();
    } else {
      argv.back() += c;
    }
  }
  end_command();
  return cmds;
}

void append_multibulk(Buffer& in, const std::vector<std::string>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (const std::string& a : argv) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  in.append(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Process-wide settings as the process started; CONFIG SET in an input may change them.
  static const std::uint64_t hll_max = hll_sparse_max_bytes();
  static const std::uint64_t node_entries = stream_node_max_entries();
  static const std::uint64_t node_bytes = stream_node_max_bytes();

  const std::string_view backend = kBackends[data[0] % std::size(kBackends)];
  const auto cmds = split(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  {
    Config cfg;
    cfg.threads = 1;
    cfg.backend = std::string(backend);
    cfg.cluster_node_id = std::string(40, 'f');  // not random: inputs replay identically
    auto ks = make_value_keyspace(backend, 64);
    check(ks != nullptr);
    Server server(cfg, std::move(ks), std::string(backend));
    std::string error;
    check(server.start_in_process(1, &error));
    Worker& worker = server.worker(0);
    Connection& conn = worker.connect_in_process();
    constexpr std::int64_t kNowMs = 1'700'000'000'000;  // fixed: expiry replays identically
    constexpr std::size_t kBatch = 8;  // commands per read, as a pipelining client sends them
    for (std::size_t i = 0; i < cmds.size() && !conn.close_after_reply; i += kBatch) {
      const int proto_before = conn.resp;
      const bool leftover = !conn.in.empty();  // paused by a large output in the last batch
      bool hello = false, countable = !conn.subscribed() && !leftover;
      std::size_t n = 0;
      for (std::size_t j = i; j < cmds.size() && j < i + kBatch; ++j, ++n) {
        append_multibulk(conn.in, cmds[j]);
        hello = hello || iequals(cmds[j][0], "hello") || iequals(cmds[j][0], "reset");
        countable = countable && !reply_count_varies(cmds[j][0]);
      }
      worker.run_in_process(conn, kNowMs + static_cast<std::int64_t>(i));
      if (conn.blocked) break;  // cannot happen with kExcluded; nothing more would run
      std::vector<kvlab::fuzz::Node> frames;
      check(kvlab::fuzz::read_all(conn.out.view(), hello ? 3 : proto_before, &frames));
      // One reply per command (pushes aside), unless the batch stopped early.
      if (countable && conn.in.empty() && !conn.close_after_reply) {
        std::size_t replies = 0;
        for (const auto& f : frames) replies += f.type != '>';
        check(replies == n);
      }
      conn.out.consume(conn.out.size());
    }
  }
  kvlab::reclaim::flush();
  set_hll_sparse_max_bytes(hll_max);
  set_stream_node_limits(node_entries, node_bytes);
  return 0;
}
