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

#include "server/commands/admin_internal.hpp"
#include "server/commands/args.hpp"
#include "server/commands/common.hpp"
#include "server/features/scripting.hpp"
#include "server/protocol/errors.hpp"
#include "server/util/memory.hpp"
#include "structures/keyspace.hpp"
#include "structures/reclaim/epoch.hpp"

namespace kvlab::server {

namespace {

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
  ArgParser p(ctx.argv, 2);
  while (!p.done()) {
    if (p.check("AUTH", 2)) {
      has_auth = true;
      user = p.next();
      pass = p.next();
    } else if (p.check("SETNAME", 1)) {
      has_name = true;
      name = p.next();
    } else {
      p.fail(err::hello_syntax(p.peek()));
    }
  }
  if (p.reply_error(ctx.reply)) return;
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
    ctx.reply.error(err::kGetkeysInvalidCommand);
    return;
  }
  // Shard channels (SPUBLISH, SSUBSCRIBE) are Redis's not_key key specs: no keys for GETKEYS.
  if ((c->first_key == 0 && c->extra_keys == nullptr) || (c->flags & kChannelKeys)) {
    ctx.reply.error(err::kGetkeysNoKeys);
    return;
  }
  const auto n = static_cast<std::int64_t>(argv.size());
  if ((c->arity > 0 && c->arity != n) || n < -c->arity) {
    ctx.reply.error(err::kGetkeysArity);
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
      ctx.reply.error(err::kGetkeysInvalidArgs);
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
      ctx.reply.error(err::kNoShutdown);
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
