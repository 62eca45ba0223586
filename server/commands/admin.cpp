// Connection and server commands: PING, ECHO, QUIT, HELLO, AUTH, SELECT, CLIENT, COMMAND, CONFIG,
// INFO, DBSIZE, FLUSHALL/FLUSHDB, SHUTDOWN, TIME — what redis-cli, redis-benchmark, memtier and
// client libraries send besides data commands.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "server/scripting.hpp"
#include "kvlab_git.hpp"
#include "server/commands/common.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {
namespace {

constexpr std::string_view kRedisCompatVersion = "7.0.0";

void ping_cmd(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.reply.error(err::wrong_arity("ping"));
  } else if (ctx.conn.subscriptions() > 0) {
    // RESP2 subscriber mode: a push-shaped reply, so that it cannot be mistaken for a message.
    ctx.reply.array(2);
    ctx.reply.bulk("pong");
    ctx.reply.bulk(ctx.argc() == 2 ? ctx.arg(1) : std::string_view());
  } else if (ctx.argc() == 2) {
    ctx.reply.bulk(ctx.arg(1));
  } else {
    ctx.reply.simple("PONG");
  }
}

void echo_cmd(CommandContext& ctx) { ctx.reply.bulk(ctx.arg(1)); }

void quit_cmd(CommandContext& ctx) {
  ctx.reply.ok();
  ctx.conn.close_after_reply = true;
}

// Client names and library attributes: printable ASCII without blanks, as Redis requires.
bool valid_client_word(std::string_view s) {
  for (char c : s)
    if (c < '!' || c > '~') return false;
  return true;
}

void set_client_name(CommandContext& ctx, std::string_view name) {
  ctx.server.clients().with_lock([&] {
    ctx.conn.info->name.assign(name);
    return 0;
  });
}

void auth_cmd(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  if (!ctx.server.auth_required()) {
    ctx.reply.error(err::kAuthNoPassword);
    return;
  }
  const std::string_view user = ctx.argc() == 3 ? ctx.arg(1) : "default";
  const std::string_view pass = ctx.arg(ctx.argc() - 1);
  if (user == "default" && ctx.server.check_password(pass)) {
    ctx.conn.authenticated = true;
    ctx.reply.ok();
  } else {
    ctx.reply.error(err::kWrongPass);
  }
}

void hello_cmd(CommandContext& ctx) {
  std::int64_t ver = 2;
  if (ctx.argc() >= 2) {
    if (!parse_i64(ctx.arg(1), &ver)) {
      ctx.reply.error(err::kHelloProtoNotInteger);
      return;
    }
    if (ver != 2) {  // RESP3 (3) is not implemented yet; anything else is unknown
      ctx.reply.error(err::kNoProto);
      return;
    }
  }
  std::string_view user, pass, name;
  bool has_auth = false, has_name = false;
  for (std::size_t i = 2; i < ctx.argc(); ++i) {
    const std::size_t left = ctx.argc() - i - 1;
    if (iequals(ctx.arg(i), "auth") && left >= 2) {
      has_auth = true;
      user = ctx.arg(i + 1);
      pass = ctx.arg(i + 2);
      i += 2;
    } else if (iequals(ctx.arg(i), "setname") && left >= 1) {
      has_name = true;
      name = ctx.arg(i + 1);
      i += 1;
    } else {
      ctx.reply.error("ERR Syntax error in HELLO option '" + std::string(ctx.arg(i)) + "'");
      return;
    }
  }
  if (has_auth) {
    if (!ctx.server.auth_required()) {
      ctx.reply.error(err::kAuthNoPassword);
      return;
    }
    if (user != "default" || !ctx.server.check_password(pass)) {
      ctx.reply.error(err::kWrongPass);
      return;
    }
    ctx.conn.authenticated = true;
  }
  if (!ctx.conn.authenticated) {
    ctx.reply.error(err::kNoAuthHello);
    return;
  }
  if (has_name) {
    if (!valid_client_word(name)) {
      ctx.reply.error(err::kClientNameSpaces);
      return;
    }
    set_client_name(ctx, name);
  }
  ctx.reply.array(14);
  ctx.reply.bulk("server");
  ctx.reply.bulk("redis");
  ctx.reply.bulk("version");
  ctx.reply.bulk(kRedisCompatVersion);
  ctx.reply.bulk("proto");
  ctx.reply.integer(2);
  ctx.reply.bulk("id");
  ctx.reply.integer(static_cast<std::int64_t>(ctx.conn.id));
  ctx.reply.bulk("mode");
  ctx.reply.bulk("standalone");
  ctx.reply.bulk("role");
  ctx.reply.bulk("master");
  ctx.reply.bulk("modules");
  ctx.reply.array(0);
}

void select_cmd(CommandContext& ctx) {
  std::int64_t db = 0;
  if (!arg_i64(ctx, ctx.arg(1), &db)) return;
  if (db != 0) {
    ctx.reply.error(err::kDbIndexOutOfRange);
    return;
  }
  ctx.reply.ok();
}

// ---- CLIENT ----

const char* last_cmd_name(const ClientInfo& c) {
  const CommandSpec* cmd = c.last_cmd.load(std::memory_order_relaxed);
  return cmd == nullptr ? "NULL" : CommandTable::instance().full_name(cmd);
}

bool is_pubsub_client(const ClientInfo& c) {
  return c.sub.load(std::memory_order_relaxed) + c.psub.load(std::memory_order_relaxed) > 0;
}

std::string client_line(const ClientInfo& c, std::int64_t now_ms) {
  // REQUIRES: the registry lock is held (name, lib_name, lib_ver).
  const std::int64_t age = (now_ms - c.created_ms) / 1000;
  const std::int64_t idle = (now_ms - c.last_ms.load(std::memory_order_relaxed)) / 1000;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=0 sub=%u "
                "psub=%u ssub=0 multi=-1 qbuf=%zu qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 "
                "obl=0 oll=0 omem=%zu tot-mem=0 events=r cmd=%s user=default redir=-1 resp=2 "
                "lib-name=%s lib-ver=%s kvlab-worker=%u\n",
                static_cast<unsigned long long>(c.id), c.addr.c_str(), c.laddr.c_str(), c.fd,
                c.name.c_str(), static_cast<long long>(age), static_cast<long long>(idle < 0 ? 0 : idle),
                is_pubsub_client(c) ? "P" : "N", c.sub.load(std::memory_order_relaxed),
                c.psub.load(std::memory_order_relaxed), c.qbuf.load(std::memory_order_relaxed),
                c.obuf.load(std::memory_order_relaxed),
                last_cmd_name(c), c.lib_name.c_str(), c.lib_ver.c_str(),
                c.worker);
  return buf;
}

void client_id_cmd(CommandContext& ctx) { ctx.reply.integer(static_cast<std::int64_t>(ctx.conn.id)); }

void client_setname_cmd(CommandContext& ctx) {
  if (!valid_client_word(ctx.arg(2))) {
    ctx.reply.error(err::kClientNameSpaces);
    return;
  }
  set_client_name(ctx, ctx.arg(2));
  ctx.reply.ok();
}

void client_getname_cmd(CommandContext& ctx) {
  const std::string name = ctx.server.clients().with_lock([&] { return ctx.conn.info->name; });
  if (name.empty()) {
    ctx.reply.null();
  } else {
    ctx.reply.bulk(name);
  }
}

void client_setinfo_cmd(CommandContext& ctx) {
  const std::string_view attr = ctx.arg(2);
  const std::string_view value = ctx.arg(3);
  const bool is_name = iequals(attr, "lib-name");
  if (!is_name && !iequals(attr, "lib-ver")) {
    ctx.reply.error("ERR Unrecognized option '" + std::string(attr) + "'");
    return;
  }
  if (!valid_client_word(value)) {
    ctx.reply.error("ERR " + lower_name(attr) +
                    " cannot contain spaces, newlines or special characters.");
    return;
  }
  ctx.server.clients().with_lock([&] {
    (is_name ? ctx.conn.info->lib_name : ctx.conn.info->lib_ver).assign(value);
    return 0;
  });
  ctx.reply.ok();
}

void client_list_cmd(CommandContext& ctx) {
  enum { kAll, kNormal, kPubSubOnly, kNone } type = kAll;
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 2; i < ctx.argc(); ++i) {
    if (iequals(ctx.arg(i), "type") && i + 1 < ctx.argc()) {
      const std::string_view t = ctx.arg(++i);
      if (iequals(t, "normal")) {
        type = kNormal;
      } else if (iequals(t, "pubsub")) {
        type = kPubSubOnly;
      } else if (iequals(t, "master") || iequals(t, "replica") || iequals(t, "slave")) {
        type = kNone;
      } else {
        ctx.reply.error("ERR Unknown client type '" + std::string(t) + "'");
        return;
      }
    } else if (iequals(ctx.arg(i), "id") && i + 1 < ctx.argc()) {
      for (++i; i < ctx.argc(); ++i) {
        std::int64_t id = 0;
        if (!parse_i64(ctx.arg(i), &id) || id <= 0) {
          ctx.reply.error("ERR Invalid client ID");
          return;
        }
        ids.push_back(static_cast<std::uint64_t>(id));
      }
    } else {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  std::string out;
  if (type != kNone) {
    ctx.server.clients().for_each([&](const ClientInfo& c) {
      if (!ids.empty() && std::find(ids.begin(), ids.end(), c.id) == ids.end()) return;
      if (type == kNormal && is_pubsub_client(c)) return;
      if (type == kPubSubOnly && !is_pubsub_client(c)) return;
      out += client_line(c, ctx.now_ms);
    });
  }
  ctx.reply.bulk(out);
}

void client_info_cmd(CommandContext& ctx) {
  const std::string line =
      ctx.server.clients().with_lock([&] { return client_line(*ctx.conn.info, ctx.now_ms); });
  ctx.reply.bulk(line);
}

void client_noop_ok_cmd(CommandContext& ctx) {
  if (!iequals(ctx.arg(2), "on") && !iequals(ctx.arg(2), "off")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.reply.ok();
}

void reply_help(CommandContext& ctx, std::initializer_list<std::string_view> lines) {
  ctx.reply.array(lines.size());
  for (auto l : lines) ctx.reply.simple(l);
}

void client_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "ID", "    Return the ID of the current connection.",
                   "GETNAME", "    Return the name of the current connection.",
                   "SETNAME <name>", "    Assign the name <name> to the current connection.",
                   "SETINFO <LIB-NAME|LIB-VER> <value>", "    Set client library name or version.",
                   "LIST [TYPE normal] [ID <id> ...]", "    Return information about client connections.",
                   "INFO", "    Return information about the current client connection.",
                   "HELP", "    Print this help."});
}

const CommandSpec kClientSubcommands[] = {
    {"id", 2, kLoading | kStale | kFast, client_id_cmd, 0, 0, 0, "connection",
     "Returns the client ID for the current connection", "", "5.0.0"},
    {"setname", 3, kLoading | kStale, client_setname_cmd, 0, 0, 0, "connection",
     "Set the current connection name", "connection-name", "2.6.9"},
    {"getname", 2, kLoading | kStale, client_getname_cmd, 0, 0, 0, "connection",
     "Get the current connection name", "", "2.6.9"},
    {"setinfo", 4, kLoading | kStale, client_setinfo_cmd, 0, 0, 0, "connection",
     "Set client or connection specific info", "LIB-NAME|LIB-VER value", "7.2.0"},
    {"list", -2, kAdmin | kLoading | kStale, client_list_cmd, 0, 0, 0, "connection",
     "Get the list of client connections", "[TYPE type] [ID client-id ...]", "2.4.0",
     "O(N) where N is the number of client connections"},
    {"info", 2, kLoading | kStale, client_info_cmd, 0, 0, 0, "connection",
     "Returns information about the current client connection.", "", "6.2.0"},
    {"no-evict", 3, kAdmin | kLoading | kStale, client_noop_ok_cmd, 0, 0, 0, "connection",
     "Set client eviction mode for the current connection (accepted, no effect)", "ON|OFF", "7.0.0"},
    {"no-touch", 3, kLoading | kStale, client_noop_ok_cmd, 0, 0, 0, "connection",
     "Controls whether commands touch key LRU (accepted, no effect)", "ON|OFF", "7.2.0"},
    {"help", 2, kLoading | kStale, client_help_cmd, 0, 0, 0, "connection",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

void container_without_sub(CommandContext& ctx) {
  // Only reached with argc == 1, which dispatch() rejects by arity; kept for COMMAND output.
  ctx.reply.error(err::wrong_arity(lower_name(ctx.arg(0))));
}

// ---- COMMAND ----

void command_all_cmd(CommandContext& ctx) {
  const auto all = CommandTable::instance().all();
  ctx.reply.array(all.size());
  for (const CommandSpec* c : all) reply_command_info(ctx.reply, *c);
}

void command_count_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(CommandTable::instance().all().size()));
}

void command_info_cmd(CommandContext& ctx) {
  if (ctx.argc() == 2) {
    command_all_cmd(ctx);
    return;
  }
  ctx.reply.array(ctx.argc() - 2);
  for (std::size_t i = 2; i < ctx.argc(); ++i) {
    const CommandSpec* c = CommandTable::instance().find(ctx.arg(i));
    if (c == nullptr) {
      ctx.reply.null_array();
    } else {
      reply_command_info(ctx.reply, *c);
    }
  }
}

void command_docs_cmd(CommandContext& ctx) {
  std::vector<const CommandSpec*> list;
  if (ctx.argc() == 2) {
    for (const CommandSpec* c : CommandTable::instance().all()) list.push_back(c);
  } else {
    for (std::size_t i = 2; i < ctx.argc(); ++i)
      if (const CommandSpec* c = CommandTable::instance().find(ctx.arg(i))) list.push_back(c);
  }
  ctx.reply.array(list.size() * 2);
  for (const CommandSpec* c : list) {
    ctx.reply.bulk(c->name);
    reply_command_docs(ctx.reply, *c);
  }
}

void command_list_cmd(CommandContext& ctx) {
  const auto all = CommandTable::instance().all();
  ctx.reply.array(all.size());
  for (const CommandSpec* c : all) ctx.reply.bulk(c->name);
}

void command_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "(no subcommand)", "    Return details about all commands.",
                   "COUNT", "    Return the total number of commands in this server.",
                   "LIST", "    Return a list of all commands in this server.",
                   "INFO [<command-name> ...]", "    Return details about the given commands.",
                   "DOCS [<command-name> ...]", "    Return documentation details about commands.",
                   "HELP", "    Print this help."});
}

const CommandSpec kCommandSubcommands[] = {
    {"count", 2, kLoading | kStale, command_count_cmd, 0, 0, 0, "server",
     "Get total number of commands", "", "2.8.13"},
    {"info", -2, kLoading | kStale, command_info_cmd, 0, 0, 0, "server",
     "Get array of specific commands details", "[command-name ...]", "2.8.13",
     "O(N) where N is the number of commands to look up"},
    {"docs", -2, kLoading | kStale, command_docs_cmd, 0, 0, 0, "server",
     "Get array of specific commands documentation", "[command-name ...]", "7.0.0",
     "O(N) where N is the number of commands to look up"},
    {"list", -2, kLoading | kStale, command_list_cmd, 0, 0, 0, "server",
     "Get an array of command names", "", "7.0.0", "O(N) where N is the total number of commands"},
    {"help", 2, kLoading | kStale, command_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

// ---- CONFIG ----

struct ConfigParam {
  std::string_view name;
  std::function<std::string(Server&)> get;
  // Empty: read-only. Returns false with *why filled for an invalid value.
  std::function<bool(Server&, std::string_view, std::string* why)> set;
};

// Parameters accepted for compatibility whose value is remembered but has no effect.
std::mutex g_soft_mu;
std::map<std::string, std::string, std::less<>> g_soft = {
    {"timeout", "0"},          {"tcp-keepalive", "300"}, {"hz", "10"},
    {"loglevel", "notice"},    {"maxmemory", "0"},       {"maxmemory-policy", "noeviction"},
    {"appendfsync", "everysec"}, {"dbfilename", "dump.rdb"}, {"slowlog-log-slower-than", "10000"},
    {"slowlog-max-len", "128"}, {"lazyfree-lazy-user-del", "no"}, {"notify-keyspace-events", ""},
};

std::string soft_get(std::string_view name) {
  std::lock_guard<std::mutex> lock(g_soft_mu);
  auto it = g_soft.find(name);
  return it == g_soft.end() ? std::string() : it->second;
}

ConfigParam soft_param(std::string_view name) {
  return {name, [name](Server&) { return soft_get(name); },
          [name](Server&, std::string_view v, std::string*) {
            std::lock_guard<std::mutex> lock(g_soft_mu);
            g_soft[std::string(name)] = std::string(v);
            return true;
          }};
}

// client-output-buffer-limit: three classes as in Redis; only the pubsub class is enforced (the
// normal class relies on the read pause, see worker.hpp), the others are remembered for GET.
std::mutex g_obuf_mu;
ObufLimit g_obuf_normal{0, 0, 0};
ObufLimit g_obuf_replica{256ull << 20, 64ull << 20, 60};

// Redis's memtoull: digits with an optional k/kb/m/mb/g/gb unit (case-insensitive).
bool parse_mem(std::string_view s, std::uint64_t* out) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i > 18) return false;
  std::uint64_t v = 0;
  for (std::size_t k = 0; k < i; ++k) v = v * 10 + static_cast<std::uint64_t>(s[k] - '0');
  const std::string unit = lower_name(s.substr(i));
  std::uint64_t mul = 1;
  if (unit.empty() || unit == "b") mul = 1;
  else if (unit == "k") mul = 1000;
  else if (unit == "kb") mul = 1024;
  else if (unit == "m") mul = 1000 * 1000;
  else if (unit == "mb") mul = 1024 * 1024;
  else if (unit == "g") mul = 1000ull * 1000 * 1000;
  else if (unit == "gb") mul = 1024ull * 1024 * 1024;
  else return false;
  *out = v * mul;
  return true;
}

std::string obuf_limit_text(Server& s) {
  auto one = [](std::string_view cls, const ObufLimit& l) {
    return std::string(cls) + " " + std::to_string(l.hard) + " " + std::to_string(l.soft) + " " +
           std::to_string(l.soft_seconds);
  };
  std::lock_guard<std::mutex> lock(g_obuf_mu);
  return one("normal", g_obuf_normal) + " " + one("slave", g_obuf_replica) + " " +
         one("pubsub", s.pubsub_obuf_limit());
}

bool set_obuf_limit(Server& s, std::string_view v, std::string* why) {
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i < v.size();) {
    while (i < v.size() && v[i] == ' ') ++i;
    std::size_t j = i;
    while (j < v.size() && v[j] != ' ') ++j;
    if (j > i) words.push_back(v.substr(i, j - i));
    i = j;
  }
  if (words.size() % 4 != 0) {
    *why = "Wrong number of arguments in buffer limit configuration.";
    return false;
  }
  std::vector<std::pair<int, ObufLimit>> todo;  // 0 normal, 1 replica, 2 pubsub
  for (std::size_t i = 0; i < words.size(); i += 4) {
    int cls = -1;
    if (iequals(words[i], "normal")) cls = 0;
    if (iequals(words[i], "replica") || iequals(words[i], "slave")) cls = 1;
    if (iequals(words[i], "pubsub")) cls = 2;
    if (cls < 0) {
      *why = "Invalid client class specified in buffer limit configuration.";
      return false;
    }
    ObufLimit l;
    std::int64_t secs = 0;
    if (!parse_mem(words[i + 1], &l.hard) || !parse_mem(words[i + 2], &l.soft) ||
        !parse_i64(words[i + 3], &secs) || secs < 0) {
      *why = "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
      return false;
    }
    l.soft_seconds = static_cast<std::uint64_t>(secs);
    todo.emplace_back(cls, l);
  }
  std::lock_guard<std::mutex> lock(g_obuf_mu);
  for (const auto& [cls, l] : todo) {
    if (cls == 0) g_obuf_normal = l;
    if (cls == 1) g_obuf_replica = l;
    if (cls == 2) s.set_pubsub_obuf_limit(l);
  }
  return true;
}

const std::vector<ConfigParam>& config_params() {
  static const std::vector<ConfigParam> params = [] {
    std::vector<ConfigParam> p;
    p.push_back({"save", [](Server&) { return std::string(); },
                 [](Server&, std::string_view v, std::string* why) {
                   if (!v.empty()) *why = "kvlab-server has no persistence; only \"\" is accepted";
                   return v.empty();
                 }});
    p.push_back({"appendonly", [](Server&) { return std::string("no"); },
                 [](Server&, std::string_view v, std::string* why) {
                   if (!iequals(v, "no")) *why = "kvlab-server has no persistence";
                   return iequals(v, "no");
                 }});
    p.push_back({"databases", [](Server&) { return std::string("1"); }, nullptr});
    p.push_back({"maxclients", [](Server& s) { return std::to_string(s.maxclients()); },
                 [](Server& s, std::string_view v, std::string* why) {
                   std::int64_t n = 0;
                   if (!parse_i64(v, &n)) {
                     *why = "argument couldn't be parsed into an integer";
                     return false;
                   }
                   if (n < 1 || n > 10000000) {
                     *why = "argument must be between 1 and 10000000 inclusive";
                     return false;
                   }
                   s.set_maxclients(static_cast<unsigned>(n));
                   return true;
                 }});
    p.push_back({"requirepass", [](Server& s) { return s.requirepass(); },
                 [](Server& s, std::string_view v, std::string*) {
                   s.set_requirepass(std::string(v));
                   return true;
                 }});
    p.push_back({"bind", [](Server& s) { return s.config().bind; }, nullptr});
    p.push_back({"port", [](Server& s) { return std::to_string(s.config().port); }, nullptr});
    p.push_back({"protected-mode",
                 [](Server& s) { return std::string(s.config().protected_mode ? "yes" : "no"); },
                 nullptr});
    p.push_back({"io-threads", [](Server& s) { return std::to_string(s.num_workers()); }, nullptr});
    p.push_back({"proto-max-bulk-len", [](Server&) { return std::string("536870912"); }, nullptr});
    p.push_back({"client-query-buffer-limit",
                 [](Server&) { return std::to_string(kQueryBufferLimit); }, nullptr});
    p.push_back({"dir", [](Server&) {
                   char buf[4096];
                   return std::string(getcwd(buf, sizeof buf) != nullptr ? buf : "");
                 },
                 nullptr});
    p.push_back({"client-output-buffer-limit", [](Server& s) { return obuf_limit_text(s); },
                 set_obuf_limit});
    p.push_back({"kvlab-backend", [](Server& s) { return std::string(s.backend_name()); }, nullptr});
    p.push_back({"kvlab-queue", [](Server& s) { return s.config().queue; }, nullptr});
    p.push_back({"kvlab-threads", [](Server& s) { return std::to_string(s.num_workers()); }, nullptr});
    p.push_back({"kvlab-placement", [](Server& s) { return s.config().placement; }, nullptr});
    p.push_back({"kvlab-yield", [](Server& s) { return s.config().yield; }, nullptr});
    p.push_back({"kvlab-atomicity", [](Server& s) { return std::string(s.atomicity().name()); },
                 nullptr});
    p.push_back({"kvlab-lua-undeclared-keys",
                 [](Server& s) { return std::string(s.config().lua_undeclared_keys ? "yes" : "no"); },
                 nullptr});
    for (const char* name : {"busy-reply-threshold", "lua-time-limit"}) {
      p.push_back({name, [](Server&) { return std::to_string(scripting::busy_threshold_ms()); },
                   [](Server&, std::string_view v, std::string* why) {
                     std::int64_t n = 0;
                     if (!parse_i64(v, &n)) {
                       *why = "argument couldn't be parsed into an integer";
                       return false;
                     }
                     if (n < 0) {
                       *why = "argument must be between 0 and 9223372036854775807 inclusive";
                       return false;
                     }
                     scripting::set_busy_threshold_ms(n);
                     return true;
                   }});
    }
    for (const auto& [name, value] : g_soft) p.push_back(soft_param(name));
    return p;
  }();
  return params;
}

void config_get_cmd(CommandContext& ctx) {
  std::vector<std::pair<std::string_view, std::string>> out;
  for (const ConfigParam& p : config_params()) {
    for (std::size_t i = 2; i < ctx.argc(); ++i) {
      if (glob_match(ctx.arg(i), p.name, true)) {
        out.emplace_back(p.name, p.get(ctx.server));
        break;
      }
    }
  }
  ctx.reply.array(out.size() * 2);
  for (const auto& [name, value] : out) {
    ctx.reply.bulk(name);
    ctx.reply.bulk(value);
  }
}

void config_set_cmd(CommandContext& ctx) {
  if (ctx.argc() % 2 != 0) {
    ctx.reply.error(err::wrong_arity("config|set"));
    return;
  }
  // Validate every pair first so that a failing pair leaves nothing half-applied.
  std::vector<std::pair<const ConfigParam*, std::string_view>> todo;
  for (std::size_t i = 2; i + 1 < ctx.argc(); i += 2) {
    const ConfigParam* found = nullptr;
    for (const ConfigParam& p : config_params())
      if (iequals(p.name, ctx.arg(i))) found = &p;
    if (found == nullptr || !found->set) {
      ctx.reply.error(err::config_set_unknown(ctx.arg(i)));
      return;
    }
    todo.emplace_back(found, ctx.arg(i + 1));
  }
  for (const auto& [p, v] : todo) {
    std::string why;
    if (!p->set(ctx.server, v, &why)) {
      ctx.reply.error(err::config_set_invalid(p->name, why));
      return;
    }
  }
  ctx.reply.ok();
}

void config_resetstat_cmd(CommandContext& ctx) { ctx.reply.ok(); }

void config_rewrite_cmd(CommandContext& ctx) {
  ctx.reply.error("ERR The server is running without a config file");
}

void config_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "GET <pattern>", "    Return parameters matching the glob-like <pattern> and their values.",
                   "SET <directive> <value>", "    Set the configuration <directive> to <value>.",
                   "RESETSTAT", "    Accepted; statistics are not reset.",
                   "HELP", "    Print this help."});
}

const CommandSpec kConfigSubcommands[] = {
    {"get", -3, kAdmin | kLoading | kStale, config_get_cmd, 0, 0, 0, "server",
     "Get the values of configuration parameters", "parameter ...", "2.0.0",
     "O(N) when N is the number of configuration parameters provided"},
    {"set", -4, kAdmin | kLoading | kStale, config_set_cmd, 0, 0, 0, "server",
     "Set configuration parameters to the given values", "parameter value ...", "2.0.0",
     "O(N) when N is the number of configuration parameters provided"},
    {"resetstat", 2, kAdmin | kLoading | kStale, config_resetstat_cmd, 0, 0, 0, "server",
     "Reset the stats returned by INFO", "", "2.0.0"},
    {"rewrite", 2, kAdmin | kLoading | kStale, config_rewrite_cmd, 0, 0, 0, "server",
     "Rewrite the configuration file with the in memory configuration", "", "2.8.0"},
    {"help", 2, kLoading | kStale, config_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

// ---- INFO ----

std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, rss = 0;
  f >> pages >> rss;
  return rss * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

std::string human_bytes(std::size_t n) {
  char buf[64];
  const double d = static_cast<double>(n);
  if (n < 1024) {
    std::snprintf(buf, sizeof buf, "%zuB", n);
  } else if (n < 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fK", d / 1024);
  } else if (n < 1024ull * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2fM", d / (1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.2fG", d / (1024.0 * 1024 * 1024));
  }
  return buf;
}

std::string info_text(CommandContext& ctx, const std::vector<std::string>& wanted) {
  Server& s = ctx.server;
  auto want = [&](std::string_view section, bool in_default) {
    if (wanted.empty()) return in_default;
    for (const auto& w : wanted) {
      if (w == "all" || w == "everything") return true;
      if (w == "default" && in_default) return true;
      if (w == section) return true;
    }
    return false;
  };
  std::ostringstream o;
  auto section = [&](std::string_view name) {
    if (o.tellp() > 0) o << "\r\n";
    o << "# " << name << "\r\n";
  };
  const std::int64_t uptime = (ctx.now_ms - s.start_ms()) / 1000;
  std::uint64_t commands = 0, hits = 0, misses = 0, expired = 0, errors = 0, net_in = 0,
                net_out = 0, conns = 0, expiry_index = 0, pubsub_clients = 0, delivered = 0,
                dropped = 0, obuf_closes = 0;
  for (unsigned i = 0; i < s.num_workers(); ++i) {
    WorkerStats& w = s.stats(i);
    commands += w.commands.load(std::memory_order_relaxed);
    hits += w.hits.load(std::memory_order_relaxed);
    misses += w.misses.load(std::memory_order_relaxed);
    expired += w.expired.load(std::memory_order_relaxed);
    errors += w.errors.load(std::memory_order_relaxed);
    net_in += w.net_in.load(std::memory_order_relaxed);
    net_out += w.net_out.load(std::memory_order_relaxed);
    conns += w.connections.load(std::memory_order_relaxed);
    expiry_index += w.expiry_index.load(std::memory_order_relaxed);
    pubsub_clients += w.pubsub_clients.load(std::memory_order_relaxed);
    delivered += w.pubsub_delivered.load(std::memory_order_relaxed);
    dropped += w.pubsub_dropped.load(std::memory_order_relaxed);
    obuf_closes += w.obuf_limit_closes.load(std::memory_order_relaxed);
  }
  if (want("server", true)) {
    section("Server");
    o << "redis_version:" << kRedisCompatVersion << "\r\n"
      << "kvlab_version:" << KVLAB_VERSION << "\r\n"
      << "kvlab_git_sha1:" << KVLAB_GIT_SHA << "\r\n"
      << "redis_mode:standalone\r\n"
      << "os:Linux\r\n"
      << "arch_bits:64\r\n"
      << "multiplexing_api:epoll\r\n"
      << "process_id:" << getpid() << "\r\n"
      << "tcp_port:" << s.config().port << "\r\n"
      << "uptime_in_seconds:" << uptime << "\r\n"
      << "uptime_in_days:" << uptime / 86400 << "\r\n"
      << "io_threads_active:" << (s.num_workers() > 1 ? 1 : 0) << "\r\n";
  }
  if (want("clients", true)) {
    section("Clients");
    o << "connected_clients:" << s.connected_clients() << "\r\n"
      << "maxclients:" << s.maxclients() << "\r\n"
      << "blocked_clients:0\r\n"
      << "pubsub_clients:" << pubsub_clients << "\r\n";
  }
  if (want("memory", true)) {
    section("Memory");
    const std::size_t rss = rss_bytes();
    // glibc's mallinfo2 counts what glibc allocated; tbbmalloc (the default allocator of release
    // builds) keeps no such total, so with it used_memory is the RSS.
    constexpr bool kGlibcMalloc = std::string_view(KVLAB_SERVER_MALLOC) == "libc";
    std::size_t used = rss;
    if constexpr (kGlibcMalloc) {
      const struct mallinfo2 mi = mallinfo2();
      used = mi.uordblks + mi.hblkhd;
    }
    o << "used_memory:" << used << "\r\n"
      << "used_memory_human:" << human_bytes(used) << "\r\n"
      << "used_memory_rss:" << rss << "\r\n"
      << "used_memory_rss_human:" << human_bytes(rss) << "\r\n"
      << "maxmemory:0\r\n"
      << "maxmemory_policy:noeviction\r\n"
      << "mem_allocator:" KVLAB_SERVER_MALLOC "\r\n";
  }
  if (want("persistence", true)) {
    section("Persistence");
    o << "loading:0\r\n"
      << "rdb_changes_since_last_save:0\r\n"
      << "rdb_bgsave_in_progress:0\r\n"
      << "aof_enabled:0\r\n";
  }
  if (want("stats", true)) {
    section("Stats");
    o << "total_connections_received:" << conns << "\r\n"
      << "total_commands_processed:" << commands << "\r\n"
      << "instantaneous_ops_per_sec:"
      << static_cast<std::uint64_t>(s.instantaneous_ops_per_sec(ctx.now_ms)) << "\r\n"
      << "total_net_input_bytes:" << net_in << "\r\n"
      << "total_net_output_bytes:" << net_out << "\r\n"
      << "rejected_connections:" << s.rejected_connections() << "\r\n"
      << "expired_keys:" << expired << "\r\n"
      << "evicted_keys:0\r\n"
      << "keyspace_hits:" << hits << "\r\n"
      << "keyspace_misses:" << misses << "\r\n"
      << "pubsub_channels:" << s.pubsub().channel_count() << "\r\n"
      << "pubsub_patterns:" << s.pubsub().pattern_count() << "\r\n"
      << "client_output_buffer_limit_disconnections:" << obuf_closes << "\r\n"
      << "total_error_replies:" << errors << "\r\n";
  }
  if (want("replication", true)) {
    section("Replication");
    o << "role:master\r\nconnected_slaves:0\r\n";
  }
  if (want("cpu", true)) {
    section("CPU");
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    char buf[128];
    std::snprintf(buf, sizeof buf, "used_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n",
                  static_cast<long>(ru.ru_stime.tv_sec), static_cast<long>(ru.ru_stime.tv_usec),
                  static_cast<long>(ru.ru_utime.tv_sec), static_cast<long>(ru.ru_utime.tv_usec));
    o << buf;
  }
  if (want("keyspace", true)) {
    section("Keyspace");
    const std::size_t keys = s.keyspace().size_approx();
    if (keys > 0) {
      o << "db0:keys=" << keys << ",expires=";
      if (s.keyspace().traits().concurrent_for_each || s.num_workers() == 1) {
        std::size_t with_ttl = 0;
        s.keyspace().for_each([&](std::string_view, const Value& v) {
          if (v.expire_ms != 0) ++with_ttl;
        });
        o << with_ttl;
      } else {
        o << expiry_index;
      }
      o << ",avg_ttl=0\r\n";
    }
  }
  if (want("kvlab", true)) {
    section("kvlab");
    const BackendTraits& t = s.keyspace().traits();
    o << "kvlab_backend:" << t.name << "\r\n"
      << "kvlab_backend_progress:" << to_string(t.progress) << "\r\n"
      << "kvlab_backend_reclamation:" << to_string(t.reclamation) << "\r\n"
      << "kvlab_value_reclamation:refcount (strings immutable, containers under their own lock; the last reference frees)\r\n"
      << "kvlab_mode:shared\r\n"
      << "kvlab_threads:" << s.num_workers() << "\r\n"
      << "kvlab_placement:" << s.config().placement << "\r\n"
      << "kvlab_yield:" << (s.config().yield_on ? "on" : "off") << "\r\n"
      << "kvlab_atomicity:" << s.atomicity().name() << "\r\n"
      << "kvlab_atomicity_escalations:" << s.atomicity().escalations() << "\r\n"
      << "kvlab_atomicity_slow_commands:" << s.atomicity().slow_commands() << "\r\n"
      << "kvlab_expiry_index_entries:" << expiry_index << "\r\n";
    if (s.num_workers() > 0) {
      const BackendTraits& q = s.worker(0).queue_traits();
      o << "kvlab_queue:" << q.name << "\r\n"
        << "kvlab_queue_progress:" << to_string(q.progress) << "\r\n"
        << "kvlab_queue_bounded:" << (q.bounded ? 1 : 0) << "\r\n";
    }
    o << "kvlab_pubsub_delivered:" << delivered << "\r\n"
      << "kvlab_pubsub_dropped_closed:" << dropped << "\r\n";
    const reclaim::Stats rs = reclaim::stats();
    o << "kvlab_epoch_global:" << rs.global_epoch << "\r\n"
      << "kvlab_epoch_lag:" << rs.epoch_lag << "\r\n"
      << "kvlab_epoch_retired_unfreed:" << rs.retired_unfreed << "\r\n"
      << "kvlab_epoch_freed:" << rs.freed << "\r\n"
      << "kvlab_epoch_threads:" << rs.threads << "\r\n";
    for (unsigned i = 0; i < s.num_workers(); ++i) {
      WorkerStats& w = s.stats(i);
      o << "kvlab_worker" << i << ":cpu=" << w.cpu.load(std::memory_order_relaxed)
        << ",ops=" << w.commands.load(std::memory_order_relaxed)
        << ",connections=" << s.worker(i).connection_count()
        << ",expired=" << w.expired.load(std::memory_order_relaxed)
        << ",pubsub_clients=" << w.pubsub_clients.load(std::memory_order_relaxed)
        << ",inbox=" << s.worker(i).inbox_size()
        << ",inbox_overflows=" << s.worker(i).inbox_overflows()
        << ",yields=" << w.yields.load(std::memory_order_relaxed)
        << ",yield_hits=" << w.yield_hits.load(std::memory_order_relaxed);
      if (i < s.worker_placement().size()) o << ",placement=" << s.worker_placement()[i];
      o << "\r\n";
    }
  }
  return o.str();
}

void info_cmd(CommandContext& ctx) {
  std::vector<std::string> wanted;
  for (std::size_t i = 1; i < ctx.argc(); ++i) wanted.push_back(lower_name(ctx.arg(i)));
  ctx.reply.bulk(info_text(ctx, wanted));
}

void dbsize_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(ctx.ks.size_approx()));
}

void flush_cmd(CommandContext& ctx) {
  if (ctx.argc() > 2 || (ctx.argc() == 2 && !iequals(ctx.arg(1), "async") &&
                         !iequals(ctx.arg(1), "sync"))) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.ks.clear();
  ctx.reply.ok();
}

void shutdown_cmd(CommandContext& ctx) {
  for (std::size_t i = 1; i < ctx.argc(); ++i) {
    const std::string_view a = ctx.arg(i);
    if (iequals(a, "abort")) {
      ctx.reply.error("ERR No shutdown in progress.");
      return;
    }
    if (!iequals(a, "nosave") && !iequals(a, "save") && !iequals(a, "now") &&
        !iequals(a, "force")) {
      ctx.reply.error(err::kSyntax);
      return;
    }
  }
  // Like Redis: no reply; the connection closes as the server exits.
  ctx.conn.close_after_reply = true;
  ctx.server.request_shutdown();
}

void time_cmd(CommandContext& ctx) {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  ctx.reply.array(2);
  ctx.reply.bulk_i64(tv.tv_sec);
  ctx.reply.bulk_i64(tv.tv_usec);
}

constexpr std::uint32_t kConn = kNoAuth | kLoading | kStale | kFast;
const CommandSpec kAdminCommands[] = {
    {"ping", -1, kFast | kSubscriberContext, ping_cmd, 0, 0, 0, "connection", "Ping the server",
     "[message]"},
    {"echo", 2, kFast, echo_cmd, 0, 0, 0, "connection", "Echo the given string", "message"},
    {"quit", -1, kConn | kSubscriberContext | kTxControl, quit_cmd, 0, 0, 0, "connection",
     "Close the connection", ""},
    {"hello", -1, kConn, hello_cmd, 0, 0, 0, "connection",
     "Handshake with the server (RESP2 only for now)",
     "[protover [AUTH username password] [SETNAME clientname]]", "6.0.0"},
    {"auth", -2, kConn, auth_cmd, 0, 0, 0, "connection", "Authenticate to the server",
     "[username] password"},
    {"select", 2, kLoading | kStale | kFast, select_cmd, 0, 0, 0, "connection",
     "Change the selected database for the current connection (only 0 exists)", "index"},
    {"client", -2, 0, container_without_sub, 0, 0, 0, "connection",
     "A container for client connection commands", "", "2.4.0", "Depends on subcommand.",
     kClientSubcommands},
    {"command", -1, kLoading | kStale, command_all_cmd, 0, 0, 0, "server",
     "Get array of command details", "", "2.8.13", "O(N) where N is the total number of commands",
     kCommandSubcommands},
    {"config", -2, 0, container_without_sub, 0, 0, 0, "server",
     "A container for server configuration commands", "", "2.0.0", "Depends on subcommand.",
     kConfigSubcommands},
    {"info", -1, kLoading | kStale, info_cmd, 0, 0, 0, "server",
     "Get information and statistics about the server", "[section ...]"},
    {"dbsize", 1, kReadOnly | kFast, dbsize_cmd, 0, 0, 0, "server",
     "Return the number of keys in the selected database", ""},
    {"flushall", -1, kWrite | kKeyspaceWide, flush_cmd, 0, 0, 0, "server", "Remove all keys from all databases",
     "[ASYNC|SYNC]", "1.0.0", "O(N) where N is the total number of keys"},
    {"flushdb", -1, kWrite | kKeyspaceWide, flush_cmd, 0, 0, 0, "server",
     "Remove all keys from the current database", "[ASYNC|SYNC]", "1.0.0",
     "O(N) where N is the number of keys"},
    {"shutdown", -1, kAdmin | kLoading | kStale, shutdown_cmd, 0, 0, 0, "server",
     "Stop the server gracefully", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"},
    {"time", 1, kLoading | kStale | kFast, time_cmd, 0, 0, 0, "server", "Return the current server time",
     "", "2.6.0"},
};

}  // namespace

std::span<const CommandSpec> admin_commands() { return kAdminCommands; }

}  // namespace kvlab::server
