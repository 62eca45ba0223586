// Connection and server commands: PING, ECHO, QUIT, HELLO, AUTH, SELECT, CLIENT, COMMAND, INFO,
// DBSIZE, FLUSHALL/FLUSHDB, SHUTDOWN, TIME — what redis-cli, redis-benchmark, memtier and client
// libraries send besides data commands.
#include <malloc.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kvlab_config.hpp"
#include "kvlab_git.hpp"
#include "server/commands/common.hpp"
#include "server/util/memory.hpp"
#include "server/features/scripting.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {
namespace {

constexpr std::string_view kRedisCompatVersion = "7.0.0";

void ping_cmd(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.reply.error(err::wrong_arity("ping"));
  } else if (ctx.conn.resp == 2 && ctx.conn.subscribed()) {
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

void echo_cmd(CommandContext& ctx) {
  ctx.reply.bulk(ctx.arg(1));
}

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
  // Without a password the default user takes any password (Redis's nopass): the one-argument
  // form is refused as a likely misconfiguration, the two-argument form checks the user name.
  if (!ctx.server.auth_required() && ctx.argc() == 2) {
    ctx.reply.error(err::kAuthNoPassword);
    return;
  }
  const std::string_view user = ctx.argc() == 3 ? ctx.arg(1) : "default";
  const std::string_view pass = ctx.arg(ctx.argc() - 1);
  if (user == "default" && (!ctx.server.auth_required() || ctx.server.check_password(pass))) {
    ctx.conn.authenticated = true;
    ctx.reply.ok();
  } else {
    ctx.reply.error(err::kWrongPass);
  }
}

void hello_cmd(CommandContext& ctx) {
  std::int64_t ver = 0;  // 0: no version given, the connection keeps its own
  if (ctx.argc() >= 2) {
    if (!parse_i64(ctx.arg(1), &ver)) {
      ctx.reply.error(err::kHelloProtoNotInteger);
      return;
    }
    if (ver < 2 || ver > 3) {
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
    // As AUTH's two-argument form: without a password the default user takes any password
    // (Redis's nopass), so node-redis 5's HELLO 3 AUTH default <password> connects.
    if (user != "default" || (ctx.server.auth_required() && !ctx.server.check_password(pass))) {
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
  if (ver != 0) {  // the new protocol applies from this reply on, as in Redis
    ctx.conn.resp = static_cast<int>(ver);
    ctx.reply.set_proto(ctx.conn.resp);
    ctx.conn.info->resp.store(ctx.conn.resp, std::memory_order_relaxed);
  }
  ctx.reply.map(7);
  ctx.reply.bulk("server");
  ctx.reply.bulk("redis");
  ctx.reply.bulk("version");
  ctx.reply.bulk(kRedisCompatVersion);
  ctx.reply.bulk("proto");
  ctx.reply.integer(ctx.conn.resp);
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
  return c.sub.load(std::memory_order_relaxed) + c.psub.load(std::memory_order_relaxed) +
             c.ssub.load(std::memory_order_relaxed) >
         0;
}

// The calling connection's line shows its query buffer as it is now, holding the command being
// run (Redis: qbuf=26 for a lone CLIENT LIST); other connections', as their worker last stored it
// (after its batch of commands, when it has consumed them).
std::string client_line(CommandContext& ctx, const ClientInfo& c) {
  // REQUIRES: the registry lock is held (name, lib_name, lib_ver).
  const std::int64_t now_ms = ctx.now_ms;
  const std::size_t qbuf =
      &c == ctx.conn.info.get() ? ctx.conn.in.size() : c.qbuf.load(std::memory_order_relaxed);
  // Flags in Redis's order: P (pub/sub), b (blocked); N when none.
  char flags[8];
  char* f = flags;
  if (is_pubsub_client(c)) *f++ = 'P';
  if (c.blocked.load(std::memory_order_relaxed)) *f++ = 'b';
  if (c.no_evict.load(std::memory_order_relaxed)) *f++ = 'e';
  if (f == flags) *f++ = 'N';
  *f = '\0';
  const std::int64_t age = (now_ms - c.created_ms) / 1000;
  const std::int64_t idle = (now_ms - c.last_ms.load(std::memory_order_relaxed)) / 1000;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=0 sub=%u "
      "psub=%u ssub=%u multi=-1 qbuf=%zu qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 "
      "obl=0 oll=0 omem=%zu tot-mem=%zu events=r cmd=%s user=default redir=-1 resp=%d "
      "lib-name=%s lib-ver=%s kvlab-worker=%u\n",
      static_cast<unsigned long long>(c.id), c.addr.c_str(), c.laddr.c_str(), c.fd, c.name.c_str(),
      static_cast<long long>(age), static_cast<long long>(idle < 0 ? 0 : idle), flags,
      c.sub.load(std::memory_order_relaxed), c.psub.load(std::memory_order_relaxed),
      c.ssub.load(std::memory_order_relaxed), qbuf, c.obuf.load(std::memory_order_relaxed),
      c.tot_mem.load(std::memory_order_relaxed), last_cmd_name(c),
      c.resp.load(std::memory_order_relaxed), c.lib_name.c_str(), c.lib_ver.c_str(), c.worker);
  return buf;
}

void client_id_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(ctx.conn.id));
}

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
      out += client_line(ctx, c);
    });
  }
  ctx.reply.verbatim("txt", out);
}

void client_info_cmd(CommandContext& ctx) {
  const std::string line =
      ctx.server.clients().with_lock([&] { return client_line(ctx, *ctx.conn.info); });
  ctx.reply.verbatim("txt", line);
}

// CLIENT NO-EVICT ON|OFF: whether maxmemory-clients may choose this connection
// (Worker::evict_clients); its memory counts towards the limit either way, as in Redis.
void client_no_evict_cmd(CommandContext& ctx) {
  const bool on = iequals(ctx.arg(2), "on");
  if (!on && !iequals(ctx.arg(2), "off")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.conn.no_evict = on;
  ctx.conn.info->no_evict.store(on, std::memory_order_relaxed);  // relaxed: CLIENT LIST only
  ctx.reply.ok();
}

void client_noop_ok_cmd(CommandContext& ctx) {
  if (!iequals(ctx.arg(2), "on") && !iequals(ctx.arg(2), "off")) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  ctx.reply.ok();
}

// CLIENT KILL addr:port (the old form: OK, or "No such client")
// CLIENT KILL [ID id] [TYPE normal|master|replica|slave|pubsub] [USER name] [ADDR addr:port]
//             [LADDR addr:port] [SKIPME yes|no]  (every filter must match; answers the count)
// As Redis 7.0, with its error texts. The caller closes after this reply when it kills itself;
// any other client is closed by its own worker (Worker::post_kill), its pending output dropped.
// kvlab has no replicas and one user, "default", which every client is.
void client_kill_cmd(CommandContext& ctx) {
  std::uint64_t id = 0;
  enum { kAny, kNormal, kPubSub, kNone } type = kAny;
  std::string_view addr, laddr;
  bool has_addr = false, has_laddr = false, skipme = true;
  const bool old_form = ctx.argc() == 3;
  if (old_form) {
    addr = ctx.arg(2);
    has_addr = true;
    skipme = false;
  } else {
    for (std::size_t i = 2; i < ctx.argc(); i += 2) {
      const std::string_view f = ctx.arg(i);
      if (i + 1 >= ctx.argc()) {
        ctx.reply.error(err::kSyntax);
        return;
      }
      const std::string_view v = ctx.arg(i + 1);
      if (iequals(f, "id")) {
        std::int64_t n = 0;
        if (!parse_i64(v, &n) || n < 1) {
          ctx.reply.error("ERR client-id should be greater than 0");
          return;
        }
        id = static_cast<std::uint64_t>(n);
      } else if (iequals(f, "type")) {
        if (iequals(v, "normal")) {
          type = kNormal;
        } else if (iequals(v, "pubsub")) {
          type = kPubSub;
        } else if (iequals(v, "master") || iequals(v, "replica") || iequals(v, "slave")) {
          type = kNone;
        } else {
          ctx.reply.error("ERR Unknown client type '" + std::string(v) + "'");
          return;
        }
      } else if (iequals(f, "user")) {
        if (v != "default") {
          ctx.reply.error("ERR No such user '" + std::string(v) + "'");
          return;
        }
      } else if (iequals(f, "addr")) {
        addr = v;
        has_addr = true;
      } else if (iequals(f, "laddr")) {
        laddr = v;
        has_laddr = true;
      } else if (iequals(f, "skipme")) {
        if (iequals(v, "yes")) {
          skipme = true;
        } else if (iequals(v, "no")) {
          skipme = false;
        } else {
          ctx.reply.error(err::kSyntax);
          return;
        }
      } else {
        ctx.reply.error(err::kSyntax);
        return;
      }
    }
  }
  // Others leave the registry now (their workers close them); the caller, with SKIPME no, stays
  // until its reply is written.
  bool self = false;
  std::vector<std::pair<std::uint64_t, unsigned>> victims;  // id, worker
  if (type != kNone) {
    victims = ctx.server.clients().remove_if([&](const ClientInfo& c) {
      if (id != 0 && c.id != id) return false;
      if (type == kNormal && is_pubsub_client(c)) return false;
      if (type == kPubSub && !is_pubsub_client(c)) return false;
      if (has_addr && c.addr != addr) return false;
      if (has_laddr && c.laddr != laddr) return false;
      if (c.id == ctx.conn.id) {
        self = !skipme;
        return false;
      }
      return true;
    });
  }
  for (const auto& [victim, worker] : victims) ctx.server.worker(worker).post_kill(victim);
  if (self) ctx.conn.close_after_reply = true;
  const std::size_t killed = victims.size() + (self ? 1 : 0);
  if (old_form) {
    if (killed == 0) {
      ctx.reply.error("ERR No such client");
    } else {
      ctx.reply.ok();
    }
    return;
  }
  ctx.reply.integer(static_cast<std::int64_t>(killed));
}

// CLIENT REPLY ON|OFF|SKIP: OFF and SKIP answer nothing; SKIP while OFF changes nothing (Redis).
void client_reply_cmd(CommandContext& ctx) {
  using RM = Connection::ReplyMode;
  const std::string_view a = ctx.arg(2);
  if (iequals(a, "on")) {
    ctx.conn.reply_mode = RM::kOn;
    ctx.reply.ok();
  } else if (iequals(a, "off")) {
    ctx.conn.reply_mode = RM::kOff;
  } else if (iequals(a, "skip")) {
    if (ctx.conn.reply_mode != RM::kOff) ctx.conn.reply_mode = RM::kSkipNext;
  } else {
    ctx.reply.error(err::kSyntax);
  }
}

// CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
void client_unblock_cmd(CommandContext& ctx) {
  bool with_error = false;
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "error")) {
      with_error = true;
    } else if (!iequals(ctx.arg(3), "timeout")) {
      ctx.reply.error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply.error(err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return;
  }
  std::int64_t id = 0;  // as Redis: the reason is checked before the id
  if (!arg_i64(ctx, ctx.arg(2), &id)) return;
  ctx.reply.integer(id > 0 && unblock_client(ctx, static_cast<std::uint64_t>(id), with_error) ? 1
                                                                                              : 0);
}

// CLIENT PAUSE timeout [WRITE|ALL] (Redis 7.0): the mode is checked before the timeout; the end
// is now + timeout, wrapping as Redis's does (a wrapped end is in the past and pauses nothing);
// timeout 0 pauses nothing either. It runs keyspace-wide (see postpone_if_paused in
// command_table.cpp): once it answers, no command of the paused class runs until the end.
void client_pause_cmd(CommandContext& ctx) {
  Server::PauseClass cls = Server::kPauseAll;
  if (ctx.argc() == 4) {
    if (iequals(ctx.arg(3), "write")) {
      cls = Server::kPauseWrite;
    } else if (!iequals(ctx.arg(3), "all")) {
      ctx.reply.error("ERR CLIENT PAUSE mode must be WRITE or ALL");
      return;
    }
  } else if (ctx.argc() > 4) {
    ctx.reply.error(err::subcommand_syntax(ctx.arg(0), ctx.arg(1)));
    return;
  }
  std::int64_t ms = 0;
  if (!parse_i64(ctx.arg(2), &ms)) {
    ctx.reply.error("ERR timeout is not an integer or out of range");
    return;
  }
  if (ms < 0) {
    ctx.reply.error("ERR timeout is negative");
    return;
  }
  if (ms > 0) {
    const auto end = static_cast<std::int64_t>(static_cast<std::uint64_t>(ms) +
                                               static_cast<std::uint64_t>(ctx.now_ms));
    ctx.server.pause(end, cls, ctx.now_ms);
  }
  ctx.reply.ok();
}

void client_unpause_cmd(CommandContext& ctx) {
  ctx.server.unpause();
  ctx.reply.ok();
}

void client_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "ID",
                   "    Return the ID of the current connection.",
                   "GETNAME",
                   "    Return the name of the current connection.",
                   "SETNAME <name>",
                   "    Assign the name <name> to the current connection.",
                   "SETINFO <LIB-NAME|LIB-VER> <value>",
                   "    Set client library name or version.",
                   "LIST [TYPE normal] [ID <id> ...]",
                   "    Return information about client connections.",
                   "INFO",
                   "    Return information about the current client connection.",
                   "KILL <ip:port>",
                   "    Kill connection made from <ip:port>.",
                   "KILL <option> <value> [<option> <value> [...]]",
                   "    Kill connections. Options are: ID <client-id>, TYPE (NORMAL|PUBSUB|",
                   "    MASTER|REPLICA), USER <username>, ADDR <ip:port>, LADDR <ip:port>,",
                   "    SKIPME (YES|NO).",
                   "PAUSE <timeout> [WRITE|ALL]",
                   "    Suspend all, or just write, clients for <timeout> milliseconds.",
                   "UNPAUSE",
                   "    Stop the current client pause, resuming traffic.",
                   "REPLY (ON|OFF|SKIP)",
                   "    Control the replies sent to the current connection.",
                   "UNBLOCK <clientid> [TIMEOUT|ERROR]",
                   "    Unblock the specified blocked client.",
                   "HELP",
                   "    Print this help."});
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
     "Get the list of client connections", "[TYPE NORMAL|MASTER|REPLICA|PUBSUB] [ID client-id ...]",
     "2.4.0", "O(N) where N is the number of client connections"},
    {"info", 2, kLoading | kStale, client_info_cmd, 0, 0, 0, "connection",
     "Returns information about the current client connection.", "", "6.2.0"},
    {"no-evict", 3, kAdmin | kLoading | kStale, client_no_evict_cmd, 0, 0, 0, "connection",
     "Set client eviction mode for the current connection", "ON|OFF", "7.0.0"},
    {"no-touch", 3, kLoading | kStale, client_noop_ok_cmd, 0, 0, 0, "connection",
     "Controls whether commands touch key LRU (accepted, no effect)", "ON|OFF", "7.2.0"},
    // PAUSE is keyspace-wide so that it is ordered with every command in flight (see
    // client_pause_cmd).
    {"pause", -3, kAdmin | kLoading | kStale | kKeyspaceWide, client_pause_cmd, 0, 0, 0,
     "connection", "Stop processing commands from clients for some time", "timeout [WRITE|ALL]",
     "3.0.0", "O(1)"},
    {"unpause", 2, kAdmin | kLoading | kStale, client_unpause_cmd, 0, 0, 0, "connection",
     "Resume processing of clients that were paused", "", "6.2.0",
     "O(N) Where N is the number of paused clients"},
    {"unblock", -3, kAdmin | kLoading | kStale, client_unblock_cmd, 0, 0, 0, "connection",
     "Unblock a client blocked in a blocking command from a different connection",
     "client-id [TIMEOUT|ERROR]", "5.0.0", "O(log N) where N is the number of client connections"},
    {"kill", -3, kAdmin | kLoading | kStale, client_kill_cmd, 0, 0, 0, "connection",
     "Kill the connection of a client",
     "ip:port|[ID client-id] [TYPE NORMAL|MASTER|SLAVE|REPLICA|PUBSUB] [USER username] "
     "[ADDR ip:port] [LADDR ip:port] [SKIPME yes|no]",
     "2.4.0", "O(N) where N is the number of client connections"},
    {"reply", 3, kLoading | kStale, client_reply_cmd, 0, 0, 0, "connection",
     "Instruct the server whether to reply to commands", "ON|OFF|SKIP", "3.2.0"},
    {"help", 2, kLoading | kStale, client_help_cmd, 0, 0, 0, "connection",
     "Show helpful text about the different subcommands", "", "5.0.0"},
    // Client-side caching (server/features/tracking.hpp, commands/tracking.cpp). TRACKING runs as a
    // keyspace-wide operation: that orders it with every write (tracking.hpp, thread safety).
    {"tracking", -3, kLoading | kStale | kKeyspaceWide, client_tracking_cmd, 0, 0, 0, "connection",
     "Enable or disable server assisted client side caching support",
     "ON|OFF [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] "
     "[NOLOOP]",
     "6.0.0", "O(1). Some options may introduce additional complexity."},
    {"caching", 3, kLoading | kStale, client_caching_cmd, 0, 0, 0, "connection",
     "Instruct the server about tracking or not keys in the next request", "YES|NO", "6.0.0"},
    {"getredir", 2, kLoading | kStale, client_getredir_cmd, 0, 0, 0, "connection",
     "Get tracking notifications redirection client ID if any", "", "6.0.0"},
    {"trackinginfo", 2, kLoading | kStale, client_trackinginfo_cmd, 0, 0, 0, "connection",
     "Return information about server assisted client side caching for the current connection", "",
     "6.2.0"},
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
      ctx.reply.null();  // Redis: a null bulk ($-1) in RESP2
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
  ctx.reply.map(list.size());
  for (const CommandSpec* c : list) {
    ctx.reply.bulk(c->name);
    reply_command_docs(ctx.reply, *c);
  }
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]: every command and
// subcommand ("config|get"), as Redis 7.0 lists them; kvlab has no modules.
void command_list_cmd(CommandContext& ctx) {
  enum class By { kAll, kModule, kAclCat, kPattern } by = By::kAll;
  if (ctx.argc() == 5 && iequals(ctx.arg(2), "filterby")) {
    if (iequals(ctx.arg(3), "module")) {
      by = By::kModule;
    } else if (iequals(ctx.arg(3), "aclcat")) {
      by = By::kAclCat;
    } else if (iequals(ctx.arg(3), "pattern")) {
      by = By::kPattern;
    }
  }
  if (ctx.argc() != 2 && by == By::kAll) {
    ctx.reply.error(err::kSyntax);
    return;
  }
  const std::string_view want = by == By::kAll ? std::string_view() : ctx.arg(4);
  std::vector<std::string> names;
  auto consider = [&](const CommandSpec& c, std::string name) {
    bool keep = true;
    if (by == By::kModule) {
      keep = false;
    } else if (by == By::kPattern) {
      keep = glob_match(want, name, /*nocase=*/true);
    } else if (by == By::kAclCat) {
      keep = false;
      for (const std::string& cat : acl_categories(c, name))
        keep = keep || iequals(std::string_view(cat).substr(1), want);
    }
    if (keep) names.push_back(std::move(name));
  };
  for (const CommandSpec* c : CommandTable::instance().all()) {
    consider(*c, std::string(c->name));
    for (const CommandSpec& sub : c->subcommands)
      consider(sub, std::string(c->name) + "|" + std::string(sub.name));
  }
  ctx.reply.array(names.size());
  for (const std::string& n : names) ctx.reply.bulk(n);
}

// COMMAND GETKEYS command [arg ...]: the keys of a full command, as Redis 7.0 finds them (cluster
// clients ask it for the commands whose keys move: XREAD, EVAL, ZUNION...). Its checks run in
// Redis's order: the command (and subcommand) exists, it has keys, the argument count fits its
// arity, the keys can be found. COMMAND GETKEYSANDFLAGS answers each key with its key-spec flags
// (key_flags()): [key, [flag ...]] pairs, the flags a set in RESP3.
void getkeys(CommandContext& ctx, bool with_flags) {
  const auto argv = ctx.argv.subspan(2);
  const CommandSpec* c = CommandTable::instance().find(argv[0]);
  std::string full_name = c == nullptr ? std::string() : std::string(c->name);
  if (c != nullptr && argv.size() > 1 && !c->subcommands.empty()) {
    c = CommandTable::find_sub(*c, argv[1]);
    if (c != nullptr) full_name += "|" + std::string(c->name);
  }
  if (c == nullptr) {
    ctx.reply.error("ERR Invalid command specified");
    return;
  }
  // Shard channels (SPUBLISH, SSUBSCRIBE) are Redis's not_key key specs: no keys for GETKEYS.
  if ((c->first_key == 0 && c->extra_keys == nullptr) || (c->flags & kChannelKeys)) {
    ctx.reply.error("ERR The command has no key arguments");
    return;
  }
  const auto n = static_cast<std::int64_t>(argv.size());
  if ((c->arity > 0 && c->arity != n) || n < -c->arity) {
    ctx.reply.error("ERR Invalid number of arguments specified for command");
    return;
  }
  // PFMERGE's sources are a key spec of their own that begins at argv[2]: Redis 7.0 finds it
  // begins past a destination-only command and answers it as invalid arguments.
  const bool spec_past_end = full_name == "pfmerge" && argv.size() < 3;
  std::vector<std::size_t> idx;
  if (spec_past_end || !command_keys(*c, argv, &idx) || idx.empty()) {
    // Scripts may have no keys (Redis's no_mandatory_keys): an empty list, not an error.
    if (no_mandatory_keys(*c)) {
      ctx.reply.array(0);
    } else {
      ctx.reply.error("ERR Invalid arguments specified for command");
    }
    return;
  }
  ctx.reply.array(idx.size());
  for (std::size_t k = 0; k < idx.size(); ++k) {
    if (!with_flags) {
      ctx.reply.bulk(argv[idx[k]]);
      continue;
    }
    ctx.reply.array(2);
    ctx.reply.bulk(argv[idx[k]]);
    std::vector<std::string_view> flags;
    std::string_view rest = key_flags(*c, full_name, argv, k);
    while (!rest.empty()) {
      const std::size_t sp = rest.find(' ');
      flags.push_back(rest.substr(0, sp));
      rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    }
    ctx.reply.set(flags.size());
    for (const std::string_view f : flags) ctx.reply.simple(f);
  }
}

void command_getkeys_cmd(CommandContext& ctx) {
  getkeys(ctx, false);
}
void command_getkeysandflags_cmd(CommandContext& ctx) {
  getkeys(ctx, true);
}

void command_help_cmd(CommandContext& ctx) {
  reply_help(ctx, {"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                   "(no subcommand)", "    Return details about all commands.", "COUNT",
                   "    Return the total number of commands in this server.", "LIST",
                   "    Return a list of all commands in this server.", "INFO [<command-name> ...]",
                   "    Return details about the given commands.", "DOCS [<command-name> ...]",
                   "    Return documentation details about commands.", "GETKEYS <full-command>",
                   "    Return the keys from a full command.", "GETKEYSANDFLAGS <full-command>",
                   "    Return the keys and the access flags from a full command.", "HELP",
                   "    Print this help."});
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
     "Get an array of command names",
     "[FILTERBY (MODULE module-name|ACLCAT category|PATTERN pattern)]", "7.0.0",
     "O(N) where N is the total number of commands"},
    {"getkeys", -4, kLoading | kStale, command_getkeys_cmd, 0, 0, 0, "server",
     "Extract keys given a full Redis command", "command [arg [arg ...]]", "2.8.13",
     "O(N) where N is the number of arguments to the command"},
    {"getkeysandflags", -4, kLoading | kStale, command_getkeysandflags_cmd, 0, 0, 0, "server",
     "Extract keys and access flags given a full Redis command", "command [arg [arg ...]]", "7.0.0",
     "O(N) where N is the number of arguments to the command"},
    {"help", 2, kLoading | kStale, command_help_cmd, 0, 0, 0, "server",
     "Show helpful text about the different subcommands", "", "5.0.0"},
};

// ---- INFO ----

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

// INFO's sections in Redis 7.0's order. `in_default`: listed by a bare INFO and by INFO default.
struct InfoSection {
  std::string_view name, title;
  bool in_default;
};
constexpr InfoSection kInfoSections[] = {
    {"server", "Server", true},
    {"clients", "Clients", true},
    {"memory", "Memory", true},
    {"persistence", "Persistence", true},
    {"stats", "Stats", true},
    {"replication", "Replication", true},
    {"cpu", "CPU", true},
    {"modules", "Modules", true},
    {"commandstats", "Commandstats", false},
    {"errorstats", "Errorstats", true},
    {"latencystats", "Latencystats", false},
    {"cluster", "Cluster", true},
    {"keyspace", "Keyspace", true},
    {"kvlab", "kvlab", true},
};

std::string random_hex_id() {
  std::random_device rd;
  std::string s;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) s += kHex[rd() % 16];
  return s;
}

// A random 40-hex-digit id for this process, as Redis's run_id.
const std::string& run_id() {
  static const std::string id = random_hex_id();
  return id;
}

// The replication id a Redis master without replicas reports (its own, random at start; the
// secondary id all zeros).
const std::string& repl_id() {
  static const std::string id = random_hex_id();
  return id;
}

std::string info_text(CommandContext& ctx, const std::vector<std::string>& wanted) {
  Server& s = ctx.server;
  auto want = [&](const InfoSection& sec) {
    if (wanted.empty()) return sec.in_default;
    for (const auto& w : wanted) {
      if (w == "all" || w == "everything") return true;
      if (w == "default" && sec.in_default) return true;
      if (w == sec.name) return true;
    }
    return false;
  };
  const StatTotals t = s.stat_totals();
  std::uint64_t total_calls = 0;
  for (const auto& c : t.cmd) total_calls += c.calls;
  std::uint64_t expiry_index = 0, pubsub_clients = 0, delivered = 0, dropped = 0;
  for (unsigned i = 0; i < s.num_workers(); ++i) {
    WorkerStats& w = s.stats(i);
    expiry_index += w.expiry_index.load(std::memory_order_relaxed);
    pubsub_clients += w.pubsub_clients.load(std::memory_order_relaxed);
    delivered += w.pubsub_delivered.load(std::memory_order_relaxed);
    dropped += w.pubsub_dropped.load(std::memory_order_relaxed);
  }
  const std::int64_t uptime = (ctx.now_ms - s.start_ms()) / 1000;
  std::ostringstream o;
  for (const InfoSection& sec : kInfoSections) {
    if (!want(sec)) continue;
    if (o.tellp() > 0) o << "\r\n";
    o << "# " << sec.title << "\r\n";
    const std::string_view n = sec.name;
    if (n == "server") {
      struct utsname un {};
      uname(&un);
      timeval tv{};
      gettimeofday(&tv, nullptr);
      o << "redis_version:" << kRedisCompatVersion << "\r\n"
        << "redis_git_sha1:00000000\r\n"
        << "redis_git_dirty:0\r\n"
        << "kvlab_version:" << KVLAB_VERSION << "\r\n"
        << "kvlab_git_sha1:" << KVLAB_GIT_SHA << "\r\n"
        << "redis_mode:standalone\r\n"
        << "os:" << un.sysname << " " << un.release << " " << un.machine << "\r\n"
        << "arch_bits:64\r\n"
        << "monotonic_clock:POSIX clock_gettime\r\n"
        << "multiplexing_api:epoll\r\n"
        << "gcc_version:" << __GNUC__ << "." << __GNUC_MINOR__ << "." << __GNUC_PATCHLEVEL__
        << "\r\n"
        << "process_id:" << getpid() << "\r\n"
        << "process_supervised:no\r\n"
        << "run_id:" << run_id() << "\r\n"
        << "tcp_port:" << s.config().port << "\r\n"
        << "server_time_usec:" << static_cast<std::int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec
        << "\r\n"
        << "uptime_in_seconds:" << uptime << "\r\n"
        << "uptime_in_days:" << uptime / 86400 << "\r\n"
        << "hz:10\r\n"
        << "configured_hz:10\r\n"
        << "config_file:\r\n"
        << "io_threads_active:" << (s.num_workers() > 1 ? 1 : 0) << "\r\n";
    } else if (n == "clients") {
      o << "connected_clients:" << s.connected_clients() << "\r\n"
        << "cluster_connections:0\r\n"
        << "maxclients:" << s.maxclients() << "\r\n"
        << "blocked_clients:" << s.blocking().blocked_clients() + s.postponed_clients() << "\r\n"
        << "tracking_clients:" << s.tracking().clients() << "\r\n"
        << "clients_in_timeout_table:0\r\n"
        << "pubsub_clients:" << pubsub_clients << "\r\n";
    } else if (n == "memory") {
      const std::size_t rss = memory::rss_bytes();
      // used_memory counts what operator new and the pool's large blocks hold (server/util/memory.hpp),
      // as Redis's zmalloc counts, whichever allocator is linked; maxmemory compares with it.
      const std::size_t used = memory::used_bytes();
      const std::uint64_t maxmem = s.eviction().maxmemory();
      const scripting::CacheCounts cached = scripting::cache_counts();
      // The zeros: eviction compares all of used_memory with maxmemory (Redis leaves out replica
      // and AOF buffers, which kvlab does not have); there is no active defrag; there is no
      // lazy-free thread: UNLINK and FLUSHALL/FLUSHDB ASYNC run as DEL and FLUSHALL do (a value
      // goes when its last reference does, the keyspace's entries through the backend's
      // reclamation, INFO kvlab), so no lazy-free job is ever pending or done.
      o << "used_memory:" << used << "\r\n"
        << "used_memory_human:" << human_bytes(used) << "\r\n"
        << "used_memory_rss:" << rss << "\r\n"
        << "used_memory_rss_human:" << human_bytes(rss) << "\r\n"
        << "maxmemory:" << maxmem << "\r\n"
        << "maxmemory_human:" << human_bytes(maxmem) << "\r\n"
        << "maxmemory_policy:" << evict_policy_name(s.eviction().policy()) << "\r\n"
        << "mem_not_counted_for_evict:0\r\n"
        << "mem_allocator:" KVLAB_SERVER_MALLOC "\r\n"
        << "active_defrag_running:0\r\n"
        << "lazyfree_pending_objects:0\r\n"
        << "lazyfreed_objects:0\r\n"
        << "number_of_cached_scripts:" << cached.scripts << "\r\n"
        << "number_of_functions:" << cached.functions << "\r\n"
        << "number_of_libraries:" << cached.libraries << "\r\n"
        << "kvlab_eviction_tracked_keys:" << s.eviction().tracked_keys() << "\r\n"
        << "kvlab_eviction_queue:" << s.eviction().queue_name() << "\r\n";
    } else if (n == "persistence") {
      o << "loading:0\r\n"
        << "async_loading:0\r\n"
        << "rdb_changes_since_last_save:0\r\n"
        << "rdb_bgsave_in_progress:0\r\n"
        << "rdb_last_save_time:" << s.start_ms() / 1000 << "\r\n"
        << "rdb_last_bgsave_status:ok\r\n"
        << "rdb_saves:0\r\n"
        << "aof_enabled:0\r\n"
        << "aof_rewrite_in_progress:0\r\n"
        << "aof_rewrite_scheduled:0\r\n"
        << "aof_last_bgrewrite_status:ok\r\n"
        << "aof_rewrites:0\r\n"
        << "aof_last_write_status:ok\r\n";
    } else if (n == "stats") {
      std::uint64_t migrate_sockets = 0;  // relaxed: per-worker gauges (WorkerStats)
      for (unsigned i = 0; i < s.num_workers(); ++i)
        migrate_sockets += s.stats(i).migrate_sockets.load(std::memory_order_relaxed);
      o << "total_connections_received:" << t.connections << "\r\n"
        << "total_commands_processed:" << total_calls << "\r\n"
        << "instantaneous_ops_per_sec:"
        << static_cast<std::uint64_t>(s.instantaneous_ops_per_sec(ctx.now_ms)) << "\r\n"
        << "total_net_input_bytes:" << t.net_in << "\r\n"
        << "total_net_output_bytes:" << t.net_out << "\r\n"
        << "rejected_connections:" << t.rejected_connections << "\r\n"
        << "expired_keys:" << t.expired << "\r\n"
        << "evicted_keys:" << s.eviction().evicted_keys() << "\r\n"
        << "evicted_clients:" << t.evicted_clients << "\r\n"
        << "keyspace_hits:" << t.hits << "\r\n"
        << "keyspace_misses:" << t.misses << "\r\n"
        << "pubsub_channels:" << s.pubsub().channel_count() << "\r\n"
        << "pubsub_patterns:" << s.pubsub().pattern_count() << "\r\n"
        << "pubsubshard_channels:" << s.pubsub().channel_count(true) << "\r\n"
        << "migrate_cached_sockets:" << migrate_sockets << "\r\n"
        << "tracking_total_keys:" << s.tracking().total_keys() << "\r\n"
        << "tracking_total_items:" << s.tracking().total_items() << "\r\n"
        << "tracking_total_prefixes:" << s.tracking().total_prefixes() << "\r\n"
        << "unexpected_error_replies:0\r\n"
        << "total_error_replies:" << t.errors << "\r\n";
    } else if (n == "replication") {
      // A master that never had a replica, as Redis 7.0 reports one: no backlog, offset 0.
      o << "role:master\r\nconnected_slaves:0\r\n"
        << "master_failover_state:no-failover\r\n"
        << "master_replid:" << repl_id() << "\r\n"
        << "master_replid2:0000000000000000000000000000000000000000\r\n"
        << "master_repl_offset:0\r\n"
        << "second_repl_offset:-1\r\n"
        << "repl_backlog_active:0\r\n"
        << "repl_backlog_size:" << config_soft_value("repl-backlog-size") << "\r\n"
        << "repl_backlog_first_byte_offset:0\r\n"
        << "repl_backlog_histlen:0\r\n";
    } else if (n == "cpu") {
      struct rusage self {
      }, children{};
      getrusage(RUSAGE_SELF, &self);
      getrusage(RUSAGE_CHILDREN, &children);
      char buf[256];
      auto tv = [](const timeval& v) {
        return std::make_pair(static_cast<long>(v.tv_sec), static_cast<long>(v.tv_usec));
      };
      std::snprintf(buf, sizeof buf,
                    "used_cpu_sys:%ld.%06ld\r\nused_cpu_user:%ld.%06ld\r\n"
                    "used_cpu_sys_children:%ld.%06ld\r\nused_cpu_user_children:%ld.%06ld\r\n",
                    tv(self.ru_stime).first, tv(self.ru_stime).second, tv(self.ru_utime).first,
                    tv(self.ru_utime).second, tv(children.ru_stime).first,
                    tv(children.ru_stime).second, tv(children.ru_utime).first,
                    tv(children.ru_utime).second);
      o << buf;
    } else if (n == "commandstats") {
      for (std::size_t id = 0; id < t.cmd.size(); ++id) {
        const StatTotals::Cmd& c = t.cmd[id];
        if (c.calls == 0 && c.failed == 0 && c.rejected == 0) continue;
        const std::uint64_t usec = c.nanos / 1000;
        char buf[256];
        std::snprintf(
            buf, sizeof buf,
            "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,"
            "failed_calls=%llu\r\n",
            CommandTable::instance().full_name(CommandTable::instance().by_stat_id(id)),
            static_cast<unsigned long long>(c.calls), static_cast<unsigned long long>(usec),
            c.calls == 0 ? 0.0 : static_cast<double>(usec) / static_cast<double>(c.calls),
            static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.failed));
        o << buf;
      }
    } else if (n == "errorstats") {
      for (const auto& [code, count] : t.errors_by_code)
        o << "errorstat_" << code << ":count=" << count << "\r\n";
    } else if (n == "cluster") {
      o << "cluster_enabled:" << (ctx.server.cluster().enabled() ? 1 : 0) << "\r\n";
    } else if (n == "keyspace") {
      const std::size_t keys = s.keyspace().size_approx();
      if (keys > 0) {
        o << "db0:keys=" << keys << ",expires=";
        std::int64_t avg_ttl = 0;
        if (s.keyspace().traits().concurrent_for_each || s.num_workers() == 1) {
          std::size_t with_ttl = 0;
          long double ttl_sum = 0;
          s.keyspace().for_each([&](std::string_view, const Value& v) {
            if (v.expire_ms == 0) return;
            ++with_ttl;
            if (v.expire_ms > ctx.now_ms)
              ttl_sum += static_cast<long double>(v.expire_ms - ctx.now_ms);
          });
          if (with_ttl > 0) avg_ttl = static_cast<std::int64_t>(ttl_sum / with_ttl);
          o << with_ttl;
        } else {
          o << expiry_index;
        }
        o << ",avg_ttl=" << avg_ttl << "\r\n";
      }
    } else if (n == "kvlab") {
      const BackendTraits& bt = s.keyspace().traits();
      o << "kvlab_backend:" << bt.name << "\r\n"
        << "kvlab_backend_progress:" << to_string(bt.progress) << "\r\n"
        << "kvlab_backend_reclamation:" << to_string(bt.reclamation) << "\r\n"
        << "kvlab_value_reclamation:refcount (strings immutable, containers under their own lock; "
           "the last reference frees)\r\n"
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
      // Redis 7.0 has no such counter (later Redis reports it in stats): kvlab's own section.
      o << "kvlab_client_output_buffer_limit_disconnections:" << t.obuf_closes << "\r\n";
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
  }
  return o.str();
}

void info_cmd(CommandContext& ctx) {
  std::vector<std::string> wanted;
  for (std::size_t i = 1; i < ctx.argc(); ++i) wanted.push_back(lower_name(ctx.arg(i)));
  ctx.reply.verbatim("txt", info_text(ctx, wanted));
}

void dbsize_cmd(CommandContext& ctx) {
  ctx.reply.integer(static_cast<std::int64_t>(ctx.ks.size_approx()));
}

void flush_cmd(CommandContext& ctx) {
  if (ctx.argc() > 2 ||
      (ctx.argc() == 2 && !iequals(ctx.arg(1), "async") && !iequals(ctx.arg(1), "sync"))) {
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
     config_subcommands()},
    {"info", -1, kLoading | kStale, info_cmd, 0, 0, 0, "server",
     "Get information and statistics about the server", "[section ...]"},
    {"dbsize", 1, kReadOnly | kFast, dbsize_cmd, 0, 0, 0, "server",
     "Return the number of keys in the selected database", ""},
    {"flushall", -1, kWrite | kKeyspaceWide, flush_cmd, 0, 0, 0, "server",
     "Remove all keys from all databases", "[ASYNC|SYNC]", "1.0.0",
     "O(N) where N is the total number of keys"},
    {"flushdb", -1, kWrite | kKeyspaceWide, flush_cmd, 0, 0, 0, "server",
     "Remove all keys from the current database", "[ASYNC|SYNC]", "1.0.0",
     "O(N) where N is the number of keys"},
    {"shutdown", -1, kAdmin | kLoading | kStale, shutdown_cmd, 0, 0, 0, "server",
     "Stop the server gracefully", "[NOSAVE|SAVE] [NOW] [FORCE] [ABORT]"},
    {"time", 1, kLoading | kStale | kFast, time_cmd, 0, 0, 0, "server",
     "Return the current server time", "", "2.6.0"},
};

}  // namespace

std::span<const CommandSpec> admin_commands() {
  return kAdminCommands;
}

}  // namespace kvlab::server
