// COMMAND INFO and COMMAND DOCS as Redis 7.0 answers them: the flags kvlab's rows do not carry,
// ACL categories derived from the rows, and the argument trees built from each row's synopsis
// (redis-cli 7.0 builds its help and hints from them). Cold code, kept apart from the table
// (core/command_table.cpp) and from dispatch (net/dispatch.cpp).
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "server/core/command.hpp"
#include "server/protocol/reply.hpp"

namespace kvlab::server {

namespace {
// COMMAND INFO flags that kvlab's rows do not carry, by command, as Redis 7.0 reports them: how
// scripts, MULTI, busy scripts, the monitor and the slow log treat the command, and whether it
// blocks. (movablekeys is otherwise derived: a command with extra_keys.)
enum RedisFlag : std::uint32_t {
  kNoScriptF = 1u << 0,
  kBlockingF = 1u << 1,
  kLoadingF = 1u << 2,
  kStaleF = 1u << 3,
  kSkipMonitorF = 1u << 4,
  kSkipSlowlogF = 1u << 5,
  kAskingF = 1u << 6,
  kNoMandatoryKeysF = 1u << 7,
  kNoMultiF = 1u << 8,
  kAllowBusyF = 1u << 9,
  kMovableKeysF = 1u << 10,  // SORT_RO: its BY/GET patterns name keys, so Redis calls them movable
};
constexpr std::uint32_t kScriptRun = kNoScriptF | kStaleF | kSkipMonitorF | kNoMandatoryKeysF;
constexpr std::uint32_t kBlockingCmd = kNoScriptF | kBlockingF;
constexpr std::uint32_t kSessionCmd = kNoScriptF | kAllowBusyF;
constexpr std::pair<std::string_view, std::uint32_t> kRedisFlags[] = {
    {"auth", kSessionCmd},
    {"blmove", kBlockingCmd},
    {"blmpop", kBlockingF},
    {"blpop", kBlockingCmd},
    {"brpop", kBlockingCmd},
    {"brpoplpush", kBlockingCmd},
    {"bzmpop", kBlockingF},
    {"debug", kNoScriptF},
    {"bzpopmax", kBlockingCmd},
    {"bzpopmin", kBlockingCmd},
    {"discard", kSessionCmd},
    {"echo", kLoadingF | kStaleF},
    {"eval", kScriptRun},
    {"eval_ro", kScriptRun},
    {"evalsha", kScriptRun},
    {"evalsha_ro", kScriptRun},
    {"exec", kNoScriptF | kSkipSlowlogF},
    {"fcall", kScriptRun},
    {"fcall_ro", kScriptRun},
    {"hello", kSessionCmd},
    {"multi", kSessionCmd},
    {"psubscribe", kNoScriptF},
    {"punsubscribe", kNoScriptF},
    {"quit", kSessionCmd},
    {"reset", kSessionCmd},
    {"restore-asking", kAskingF},
    {"shutdown", kSessionCmd | kNoMultiF},
    {"sort_ro", kMovableKeysF},
    {"ssubscribe", kNoScriptF},
    {"subscribe", kNoScriptF},
    {"sunsubscribe", kNoScriptF},
    {"unsubscribe", kNoScriptF},
    {"unwatch", kSessionCmd},
    {"wait", kNoScriptF},
    {"watch", kSessionCmd},
    {"xread", kBlockingF},
    {"xreadgroup", kBlockingF},
};

// kRedisFlags of the top-level command `name` (0 for a subcommand's full name or a name not
// listed).
std::uint32_t redis_flags(std::string_view name) {
  for (const auto& [n, f] : kRedisFlags)
    if (n == name) return f;
  return 0;
}

// The flags in Redis's order (write, readonly, denyoom, admin, pubsub, noscript, blocking, loading,
// stale, skip_monitor, skip_slowlog, asking, fast, no_auth, no_mandatory_keys, no_multi,
// movablekeys, allow_busy).
void reply_flags(ReplyWriter& r, const CommandSpec& c, bool top_level) {
  const std::uint32_t extra = top_level ? redis_flags(c.name) : 0;
  const std::uint32_t flags = c.flags;
  std::vector<std::string_view> names;
  if (flags & kWrite) names.push_back("write");
  if (flags & kReadOnly) names.push_back("readonly");
  if (flags & kDenyOom) names.push_back("denyoom");
  if (flags & kAdmin) names.push_back("admin");
  if (flags & kPubSub) names.push_back("pubsub");
  if (extra & kNoScriptF) names.push_back("noscript");
  if (extra & kBlockingF) names.push_back("blocking");
  if ((flags & kLoading) || (extra & kLoadingF)) names.push_back("loading");
  if ((flags & kStale) || (extra & kStaleF)) names.push_back("stale");
  if (extra & kSkipMonitorF) names.push_back("skip_monitor");
  if (extra & kSkipSlowlogF) names.push_back("skip_slowlog");
  if (extra & kAskingF) names.push_back("asking");
  if (flags & kFast) names.push_back("fast");
  if (flags & kNoAuth) names.push_back("no_auth");
  if (extra & kNoMandatoryKeysF) names.push_back("no_mandatory_keys");
  if (extra & kNoMultiF) names.push_back("no_multi");
  if (c.extra_keys != nullptr || (extra & kMovableKeysF)) names.push_back("movablekeys");
  if (extra & kAllowBusyF) names.push_back("allow_busy");
  r.set(names.size());
  for (auto n : names) r.simple(n);
}
}  // namespace

bool redis_no_multi(std::string_view name) {
  return (redis_flags(name) & kNoMultiF) != 0;
}

bool no_mandatory_keys(const CommandSpec& c) {
  return (redis_flags(c.name) & kNoMandatoryKeysF) != 0;
}

// Redis 7.0's ACL categories of a command (COMMAND INFO, COMMAND LIST FILTERBY ACLCAT), in Redis's
// order. Derived from the row: the group's category (COMMAND DOCS and ACL spell three of them
// differently; "server" and "cluster" have none), @write/@read/@fast/@admin from the flags, @slow
// for every command that is not @fast, @blocking, and @dangerous for @admin ones. A container
// (CLIENT, CONFIG, ...) is @slow only (COMMAND also @connection); its subcommands have their own.
// The commands whose categories Redis assigns otherwise are listed below by full name.
std::vector<std::string> acl_categories(const CommandSpec& c, std::string_view full_name) {
  static constexpr std::string_view kOrder[] = {
      "keyspace", "read",   "write",       "set",       "sortedset",  "list",        "hash",
      "string",   "bitmap", "hyperloglog", "geo",       "stream",     "pubsub",      "admin",
      "fast",     "slow",   "blocking",    "dangerous", "connection", "transaction", "scripting"};
  // Not @admin in kvlab's rows, or not in their group, but @dangerous in Redis 7.0.
  static constexpr std::string_view kDangerous[] = {
      "keys",         "flushall",        "flushdb",
      "sort",         "sort_ro",         "migrate",
      "restore",      "restore-asking",  "swapdb",
      "info",         "pfdebug",         "pfselftest",
      "client|list",  "client|no-evict", "client|kill",
      "client|pause", "client|unblock",  "client|unpause"};
  // @keyspace though not in the generic group, and the reverse.
  static constexpr std::string_view kKeyspace[] = {"dbsize", "flushall", "flushdb",
                                                   "restore-asking", "swapdb"};
  static constexpr std::string_view kNotKeyspace[] = {"sort", "sort_ro", "wait"};
  static constexpr std::string_view kConnection[] = {
      "asking",       "command|count", "command|docs", "command|getkeys",
      "command|help", "command|info",  "command|list", "command|getkeysandflags",
      "readonly",     "readwrite",     "wait"};
  auto listed = [&](std::span<const std::string_view> names) {
    return std::find(names.begin(), names.end(), full_name) != names.end();
  };
  std::vector<std::string_view> cats;
  if (!c.subcommands.empty()) {
    cats.push_back("slow");
    if (full_name == "command") cats.push_back("connection");
  } else {
    const std::string_view g = c.group;
    if (g == "generic") {
      if (!listed(kNotKeyspace)) cats.push_back("keyspace");
    } else if (g == "sorted-set") {
      cats.push_back("sortedset");
    } else if (g == "transactions") {
      cats.push_back("transaction");
    } else if (g != "server" && g != "cluster" && full_name != "pubsub|help") {
      cats.push_back(g);
    }
    if (full_name == "sort" || full_name == "sort_ro") {  // they sort sets, sorted sets and lists
      cats.insert(cats.end(), {"set", "sortedset", "list"});
    }
    if (listed(kKeyspace)) cats.push_back("keyspace");
    if (listed(kConnection)) cats.push_back("connection");
    const bool script_ro = full_name == "eval_ro" || full_name == "evalsha_ro" ||
                           full_name == "fcall_ro";  // Redis counts scripts neither
    if (c.flags & kWrite) cats.push_back("write");
    if ((c.flags & kReadOnly) && !script_ro) cats.push_back("read");
    const bool fast = (c.flags & kFast) && full_name != "client|id";
    const bool admin = (c.flags & kAdmin) && full_name != "cluster|links";
    if (admin) cats.push_back("admin");
    cats.push_back(fast ? "fast" : "slow");
    if (redis_flags(full_name) & kBlockingF) cats.push_back("blocking");
    if (admin || listed(kDangerous)) cats.push_back("dangerous");
  }
  std::vector<std::string> out;
  for (std::string_view o : kOrder)
    if (std::find(cats.begin(), cats.end(), o) != cats.end()) out.push_back("@" + std::string(o));
  return out;
}

void reply_command_info(ReplyWriter& r, const CommandSpec& c, std::string_view parent) {
  r.array(10);
  if (parent.empty()) {
    r.bulk(c.name);
  } else {
    r.bulk(std::string(parent) + "|" + std::string(c.name));
  }
  r.integer(c.arity);
  reply_flags(r, c, parent.empty());
  r.integer(c.first_key);
  r.integer(c.last_key);
  r.integer(c.key_step);
  // ACL categories, as Redis 7.0 gives them (acl_categories()).
  const std::vector<std::string> cats = acl_categories(
      c, parent.empty() ? std::string(c.name) : std::string(parent) + "|" + std::string(c.name));
  r.set(cats.size());
  for (const auto& s : cats) r.simple(s);
  r.set(0);    // tips
  r.array(0);  // key specs (not modelled; first/last/step above are accurate)
  r.array(c.subcommands.size());
  for (const CommandSpec& s : c.subcommands) reply_command_info(r, s, c.name);
}

namespace {
// COMMAND DOCS arguments from a synopsis in Redis's documentation style, e.g.
// "key value [NX|XX] [GET] [EX seconds|PX milliseconds|KEEPTTL]", as the argument trees Redis 7.0
// answers: redis-cli 7.0 builds its help and typing hints from them.
//   - A word without lower-case letters is a token (NX, LIMIT, "=", "*"); others are arguments.
//   - '|' between two words of the same kind binds them ("NX|XX", "yes|no"): a oneof of words;
//     so does any '|' outside brackets ("key|\"\""). Otherwise it separates the sequences of a
//     group ("EX seconds|PX milliseconds|KEEPTTL"): a oneof of sequences. Parentheses group
//     without making optional: "(BYRADIUS radius (M|KM)|BYBOX width height (M|KM))".
//   - A bracketed sequence is one optional argument: a token alone is a "pure-token"; a token and
//     one argument is that argument with its token ("EX seconds"); a leading token and more is a
//     "block" with that token ("LIMIT offset count"); anything else a block.
//   - "..." makes the item before it multiple; "x [x ...]" is x, multiple ("multiple_token" when
//     x has a token: "PREFIX prefix [PREFIX prefix ...]"), also for x of several words
//     ("field value [field value ...]" is one multiple block).
// The top-level sequence stays a flat list, as Redis's argument lists are.
struct DocArg {
  std::string name, type, token, text;  // text: the synopsis it came from
  bool optional = false, multiple = false, multiple_token = false;
  std::vector<DocArg> args;  // of a oneof or block
};

bool is_token_word(std::string_view w) {
  for (char c : w)
    if (c >= 'a' && c <= 'z') return false;
  return true;
}

bool is_punct(std::string_view t) {
  return t == "[" || t == "]" || t == "(" || t == ")" || t == "|" || t == "...";
}

std::string arg_type(std::string_view name) {
  static constexpr std::string_view kKeys[] = {"key",     "destination", "source", "newkey",
                                               "destkey", "sourcekey",   "key1",   "key2",
                                               "src",     "dst"};
  static constexpr std::string_view kInts[] = {
      "seconds",   "milliseconds", "count",          "offset", "numkeys",     "timeout",
      "index",     "db",           "destination-db", "port",   "numreplicas", "limit",
      "len",       "ms",           "start",          "end",    "stop",        "bit",
      "slot",      "cursor",       "decrement",      "rank",   "num-matches", "min-idle-time",
      "client-id", "protover"};
  static constexpr std::string_view kDoubles[] = {"score",  "longitude", "latitude",
                                                  "radius", "width",     "height"};
  for (auto k : kKeys)
    if (name == k) return "key";
  for (auto k : kInts)
    if (name == k) return "integer";
  for (auto k : kDoubles)
    if (name == k) return "double";
  if (name == "pattern") return "pattern";
  if (name.starts_with("unix-time")) return "unix-time";
  return "string";
}

DocArg word_arg(std::string_view w) {
  DocArg a;
  a.text = std::string(w);
  if (is_token_word(w)) {
    a.type = "pure-token";
    a.token = a.text;
    for (char c : w) a.name.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  } else {
    a.name = a.text;
    a.type = arg_type(w);
  }
  return a;
}

DocArg block_of(std::vector<DocArg> items) {
  DocArg b;
  b.type = "block";
  for (const DocArg& a : items) {
    b.name += (b.name.empty() ? "" : "_") + a.name;
    b.text += (b.text.empty() ? "" : " ") + a.text;
  }
  b.args = std::move(items);
  return b;
}

// A sequence inside brackets or between '|' as one argument (see the rules above).
DocArg group_of(std::vector<DocArg> items) {
  if (items.size() == 1) return std::move(items[0]);
  if (items.size() > 1 && items[0].type == "pure-token") {
    const std::string token = items[0].token, text = items[0].text;
    items.erase(items.begin());
    DocArg g =
        items.size() == 1 && !items[0].optional ? std::move(items[0]) : block_of(std::move(items));
    g.token = token;
    g.text = text + " " + g.text;
    return g;
  }
  return block_of(std::move(items));
}

DocArg oneof_of(std::vector<DocArg> alts) {
  DocArg o;
  o.type = "oneof";
  for (const DocArg& a : alts) {
    o.name += (o.name.empty() ? "" : "_") + a.name;
    o.text += (o.text.empty() ? "" : "|") + a.text;
  }
  o.args = std::move(alts);
  return o;
}

class SynopsisParser {
 public:
  explicit SynopsisParser(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == ' ') {
        ++i;
      } else if (s.substr(i, 3) == "...") {
        toks_.emplace_back("...");
        i += 3;
      } else if (std::string_view("[]()|").find(c) != std::string_view::npos) {
        toks_.emplace_back(1, c);
        ++i;
      } else {
        std::size_t j = i;
        while (j < s.size() && std::string_view(" []()|").find(s[j]) == std::string_view::npos &&
               s.substr(j, 3) != "...")
          ++j;
        toks_.emplace_back(s.substr(i, j - i));
        i = j;
      }
    }
  }

  std::vector<DocArg> parse() {
    std::vector<std::vector<DocArg>> alts = alternatives();
    if (alts.size() == 1) return std::move(alts[0]);
    std::vector<DocArg> one;
    for (auto& seq : alts) one.push_back(group_of(std::move(seq)));
    return {oneof_of(std::move(one))};
  }

 private:
  bool at(std::string_view t) const { return pos_ < toks_.size() && toks_[pos_] == t; }

  std::vector<std::vector<DocArg>> alternatives() {
    std::vector<std::vector<DocArg>> alts;
    alts.push_back(sequence());
    while (at("|")) {
      ++pos_;
      alts.push_back(sequence());
    }
    return alts;
  }

  std::vector<DocArg> sequence() {
    std::vector<DocArg> items;
    while (pos_ < toks_.size() && !at("|") && !at("]") && !at(")")) {
      const std::string t = toks_[pos_++];
      if (t == "...") {
        if (!items.empty()) items.back().multiple = true;
      } else if (t == "[" || t == "(") {
        const std::size_t start = pos_;
        ++depth_;
        std::vector<std::vector<DocArg>> alts = alternatives();
        --depth_;
        const std::size_t end = pos_;
        if (at(t == "[" ? "]" : ")")) ++pos_;
        if (t == "[" && collapse_repetition(start, end, &items)) continue;
        DocArg g;
        if (alts.size() == 1) {
          g = group_of(std::move(alts[0]));
        } else {
          std::vector<DocArg> one;
          for (auto& seq : alts) one.push_back(group_of(std::move(seq)));
          g = oneof_of(std::move(one));
        }
        if (t == "[") {
          g.optional = true;
          g.text = "[" + g.text + "]";
        }
        items.push_back(std::move(g));
      } else {
        // Words joined by '|' with words of their own kind: "NX|XX|GT|LT", "yes|no"; at the top
        // level any two words ("id|$", "key|\"\""), where a line of alternatives would not do.
        std::vector<DocArg> chain{word_arg(t)};
        while (at("|") && pos_ + 1 < toks_.size() && !is_punct(toks_[pos_ + 1]) &&
               (depth_ == 0 || is_token_word(toks_[pos_ + 1]) == is_token_word(t))) {
          chain.push_back(word_arg(toks_[pos_ + 1]));
          pos_ += 2;
        }
        items.push_back(chain.size() == 1 ? std::move(chain[0]) : oneof_of(std::move(chain)));
      }
    }
    return items;
  }

  // "x [x ...]": the bracket [start, end) holds the last k items' text and "...". Replaces them
  // with one multiple argument and returns true.
  bool collapse_repetition(std::size_t start, std::size_t end, std::vector<DocArg>* items) {
    if (end < start + 2 || toks_[end - 1] != "...") return false;
    std::string body;
    for (std::size_t i = start; i + 1 < end; ++i) {
      const bool glue =
          toks_[i] == "|" || toks_[i] == "]" || toks_[i] == ")" ||
          (i > start && (toks_[i - 1] == "|" || toks_[i - 1] == "[" || toks_[i - 1] == "("));
      body += (body.empty() || glue ? "" : " ") + toks_[i];
    }
    for (std::size_t k = 1; k <= items->size(); ++k) {
      std::string tail;
      for (std::size_t i = items->size() - k; i < items->size(); ++i)
        tail += (tail.empty() ? "" : " ") + (*items)[i].text;
      if (tail != body) continue;
      std::vector<DocArg> rep(std::make_move_iterator(items->end() - static_cast<long>(k)),
                              std::make_move_iterator(items->end()));
      items->resize(items->size() - k);
      DocArg g = group_of(std::move(rep));
      g.multiple = true;
      g.multiple_token = !g.token.empty();
      items->push_back(std::move(g));
      return true;
    }
    return false;
  }

  std::vector<std::string> toks_;
  std::size_t pos_ = 0;
  int depth_ = 0;  // brackets and parentheses around the current token
};

void reply_doc_args(ReplyWriter& r, const std::vector<DocArg>& args) {
  r.array(args.size());
  for (const DocArg& a : args) {
    const bool has_flags = a.optional || a.multiple || a.multiple_token;
    const bool nested = a.type == "oneof" || a.type == "block";
    r.map(2 + (a.token.empty() ? 0 : 1) + (has_flags ? 1 : 0) + (nested ? 1 : 0));
    r.bulk("name");
    r.bulk(a.name);
    r.bulk("type");
    r.bulk(a.type);
    if (!a.token.empty()) {
      r.bulk("token");
      r.bulk(a.token);
    }
    if (has_flags) {
      r.bulk("flags");
      r.set((a.optional ? 1 : 0) + (a.multiple ? 1 : 0) + (a.multiple_token ? 1 : 0));
      if (a.optional) r.simple("optional");
      if (a.multiple) r.simple("multiple");
      if (a.multiple_token) r.simple("multiple_token");
    }
    if (nested) {
      r.bulk("arguments");
      reply_doc_args(r, a.args);
    }
  }
}

void reply_arguments(ReplyWriter& r, std::string_view synopsis) {
  reply_doc_args(r, SynopsisParser(synopsis).parse());
}
}  // namespace

void reply_command_docs(ReplyWriter& r, const CommandSpec& c) {
  const bool has_args = !c.arguments.empty();
  const bool has_subs = !c.subcommands.empty();
  std::string summary(c.summary);
  r.map(4 + (has_args ? 1 : 0) + (has_subs ? 1 : 0));
  r.bulk("summary");
  r.bulk(summary);
  r.bulk("since");
  r.bulk(c.since);
  r.bulk("group");
  r.bulk(c.group);
  r.bulk("complexity");
  r.bulk(c.complexity);
  if (has_args) {
    r.bulk("arguments");
    reply_arguments(r, c.arguments);
  }
  if (has_subs) {
    r.bulk("subcommands");
    r.map(c.subcommands.size());
    for (const CommandSpec& s : c.subcommands) {
      r.bulk(std::string(c.name) + "|" + std::string(s.name));
      reply_command_docs(r, s);
    }
  }
}

}  // namespace kvlab::server
