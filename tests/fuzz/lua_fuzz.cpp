// Fuzz target: generated Lua through EVAL, in the sandbox of server/features/lua_sandbox.hpp.
//
// Input: the script's text, as is (EVAL <input> 0). It runs through the real path of a
// connection — RequestParser, dispatch(), the scripting handlers, redis.call into the keyspace —
// on a Server with one in-process worker (Server::start_in_process, Worker::run_in_process), as
// in command_fuzz.cpp. The Lua state is the worker thread's and outlives the Server, so every
// input runs in the state the earlier inputs left: what one script could change for the next
// shows up in the probe below.
//
// Scripts are killed after kKillAfterMs (scripting::set_kill_after_ms; the fuzzer has nobody
// to send SCRIPT KILL), and the Lua states' memory limit is kLuaMemoryLimit. Inputs are skipped
// when they name MIGRATE or CLUSTER (they would connect to hosts the input names), or when they
// call string.rep together with a pattern function: Lua 5.1's matcher has no step limit, and a long
// subject with a backtracking pattern runs in C, where no hook can stop it (server/README.md, "The
// Lua sandbox", lists it).
//
// Properties, after each input: no crash, no sanitizer report; the output is exactly one
// complete, well-formed RESP2 reply (checked here without recursion: a script's reply nests up to
// 1000 deep, deeper than tests/fuzz/resp_reader.hpp reads); and a fixed probe script
// (the string metatable, the library tables, cjson's settings, unpack, struct, cmsgpack) answers
// exactly what it answered in a fresh state.
#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/command.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/features/lua_sandbox.hpp"
#include "server/features/scripting.hpp"
#include "server/net/server.hpp"
#include "server/util/strings_util.hpp"
#include "server/net/worker.hpp"
#include "structures/reclaim/epoch.hpp"

namespace {

using namespace kvlab::server;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

constexpr std::int64_t kKillAfterMs = 100;
// The Lua states' limit here: libFuzzer stops at 1 GiB for one malloc and 2 GiB of RSS, and
// ASan keeps freed memory in quarantine.
constexpr std::size_t kLuaMemoryLimit = std::size_t{128} << 20;

constexpr std::string_view kProbe =
    "return {('x'):len(), ('abc'):upper(), type(string.len), type(redis.call), "
    "type(cjson.encode), type(struct.pack), type(cmsgpack.pack), type(bit.band), "
    "cjson.encode({1, {2}}), tostring(cjson.encode_max_depth()), "
    "tostring(cjson.decode_max_depth()), tostring(cjson.encode_number_precision()), "
    "cjson.encode(0.1234567890123), cjson.encode({[1]=1, [2]=2, [4]=4}), "
    "tostring(getmetatable('').__index == string), type(getmetatable('')), "
    "tostring(rawget(_G, 'x')), tostring(#KEYS), math.floor(3.5), "
    "table.concat({1, 2}, '-'), struct.pack('>h', 1), cmsgpack.pack({1, 2}), "
    "bit.tohex(255, 4), select('#', unpack({1, 2, 3})), type(loadstring('return 1'))}";

// Whether s is exactly one complete RESP2 reply (arrays of any depth, iteratively).
bool one_resp2_reply(std::string_view s) {
  std::size_t pos = 0;
  std::vector<std::int64_t> pending;  // elements still to read, per open array
  std::int64_t top_level = 0;
  do {
    const std::size_t eol = s.find("\r\n", pos);
    if (pos >= s.size() || eol == std::string_view::npos) return false;
    const char tag = s[pos];
    const std::string_view line = s.substr(pos + 1, eol - pos - 1);
    pos = eol + 2;
    std::int64_t n = 0;
    if (tag == ':' || tag == '$' || tag == '*') {
      if (!parse_i64(line, &n)) return false;
    } else if (tag != '+' && tag != '-') {
      return false;
    }
    if (tag == '$' && n >= 0) {
      if (s.size() - pos < static_cast<std::size_t>(n) + 2 ||
          s.substr(pos + static_cast<std::size_t>(n), 2) != "\r\n")
        return false;
      pos += static_cast<std::size_t>(n) + 2;
    }
    if (pending.empty()) {
      ++top_level;
    } else {
      --pending.back();
    }
    if (tag == '*' && n > 0) pending.push_back(n);
    while (!pending.empty() && pending.back() == 0) pending.pop_back();
  } while (!pending.empty());
  return top_level == 1 && pos == s.size();
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool skipped(std::string_view script) {
  const std::string s = lower(script);
  auto has = [&](std::string_view w) { return s.find(w) != std::string::npos; };
  if (has("migrate") || has("cluster")) return true;
  return has("rep") && (has("find") || has("match") || has("gsub") || has("gmatch"));
}

void append_multibulk(Buffer& in, const std::vector<std::string_view>& argv) {
  std::string s = "*" + std::to_string(argv.size()) + "\r\n";
  for (std::string_view a : argv) {
    s += "$" + std::to_string(a.size()) + "\r\n";
    s += a;
    s += "\r\n";
  }
  in.append(s);
}

// Runs one command on the connection and returns its output (the connection's out, consumed).
std::string run(Worker& worker, Connection& conn, const std::vector<std::string_view>& argv,
                std::int64_t now_ms) {
  append_multibulk(conn.in, argv);
  worker.run_in_process(conn, now_ms);
  std::string out(conn.out.view());
  conn.out.consume(conn.out.size());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view script(reinterpret_cast<const char*>(data), size);
  if (skipped(script)) return 0;
  scripting::set_kill_after_ms(kKillAfterMs);
  lua_sandbox::set_memory_limit(kLuaMemoryLimit);
  static std::string expected;  // the probe's answer in a fresh state
  {
    Config cfg;
    cfg.threads = 1;
    cfg.backend = "hash/kvlab";
    cfg.cluster_node_id = std::string(40, 'f');
    auto ks = make_value_keyspace(cfg.backend, 64);
    check(ks != nullptr);
    Server server(cfg, std::move(ks), cfg.backend);
    std::string error;
    check(server.start_in_process(1, &error));
    Worker& worker = server.worker(0);
    Connection& conn = worker.connect_in_process();
    constexpr std::int64_t kNowMs = 1'700'000'000'000;
    if (expected.empty()) expected = run(worker, conn, {"EVAL", kProbe, "0"}, kNowMs);

    check(one_resp2_reply(run(worker, conn, {"EVAL", script, "0"}, kNowMs)));
    if (!conn.close_after_reply) {
      check(run(worker, conn, {"EVAL", kProbe, "0"}, kNowMs) == expected);
      // The script cache would otherwise grow with every input.
      check(run(worker, conn, {"SCRIPT", "FLUSH"}, kNowMs) == "+OK\r\n");
    }
  }
  kvlab::reclaim::flush();
  return 0;
}
