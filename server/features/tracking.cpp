// Client-side caching: the tracking registry, the per-thread outbox and the delivery of
// invalidations; see tracking.hpp for the model and the argument that nothing stale survives.
#include "server/features/tracking.hpp"

#include <algorithm>
#include <cstring>

#include "server/core/client_info.hpp"
#include "server/core/command.hpp"
#include "server/features/host.hpp"
#include "server/features/scripting.hpp"
#include "server/protocol/errors.hpp"
#include "server/util/strings_util.hpp"

namespace kvlab::server {

namespace {

// tracking-table-max-keys (Redis's default). Relaxed: an independent setting read per remember.
std::atomic<std::int64_t> g_max_keys{1000000};

// Frame kinds (the byte after kTrackingFrameTag).
constexpr char kToSelf = 'i';       // the tracking client itself: RESP3 only
constexpr char kToRedirect = 'r';   // a redirect target: RESP3 push, or RESP2 pub/sub message
constexpr char kRedirBroken = 'b';  // the tracking client: its redirect target has gone

struct Outgoing {
  SubscriberRef to;
  std::string frame;  // kTrackingFrameTag, kind, payload
};

// What the calling thread has to send once its command has replied.
struct ThreadState {
  bool flushed = false;  // FLUSHALL/FLUSHDB ran
  std::vector<std::string> keys;
  std::vector<std::string> server_keys;  // changed by the server (TrackingServerChange)
  bool server_change = false;
  std::vector<Outgoing> out;
  std::vector<std::vector<PubSubEnvelope>> remote;  // per target worker, reused
  // Replies to blocked commands this thread served during the current command, to post with
  // the invalidations they caused behind them (tracking_defer_unblock).
  struct Unblocked {
    unsigned worker;
    std::uint64_t conn;
    const BlockedClient* b;
    std::string reply;
  };
  std::vector<Unblocked> unblocked;
};
thread_local ThreadState t_state;

void put_bulk(std::string* s, std::string_view v) {
  s->push_back('$');
  s->append(std::to_string(v.size()));
  s->append("\r\n");
  s->append(v);
  s->append("\r\n");
}

std::string encode_keys(std::span<const std::string_view> keys) {
  std::string s = "*" + std::to_string(keys.size()) + "\r\n";
  for (std::string_view k : keys) put_bulk(&s, k);
  return s;
}

}  // namespace

void set_tracking_max_keys(std::int64_t n) {
  g_max_keys.store(n, std::memory_order_relaxed);
}

// ---- registry ----

void TrackingRegistry::enable(SubscriberRef self, std::uint64_t redirect, bool bcast, bool noloop,
                              const std::vector<std::string>& prefixes) {
  std::lock_guard<std::mutex> lock(mu_);
  Client& c = clients_map_[self.conn];
  c.worker = self.worker;
  c.redirect = redirect;
  c.noloop = noloop;
  c.broken = false;
  c.bcast = bcast;
  if (bcast) {
    auto add = [&](const std::string& p) {
      if (std::find(c.prefixes.begin(), c.prefixes.end(), p) != c.prefixes.end()) return;
      c.prefixes.push_back(p);
      prefixes_[p].push_back(self.conn);
    };
    if (prefixes.empty()) add(std::string());
    for (const std::string& p : prefixes) add(p);
  }
  // relaxed: see the file comment of tracking.hpp (the gate orders it for writers).
  clients_.store(static_cast<std::uint32_t>(clients_map_.size()), std::memory_order_relaxed);
}

void TrackingRegistry::disable(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_map_.find(id);
  if (it == clients_map_.end()) return;
  for (const std::string& p : it->second.prefixes) {
    auto pit = prefixes_.find(p);
    if (pit == prefixes_.end()) continue;
    auto& ids = pit->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty()) prefixes_.erase(pit);
  }
  clients_map_.erase(it);
  // relaxed: a writer that still reads the old count only looks up tables in vain.
  clients_.store(static_cast<std::uint32_t>(clients_map_.size()), std::memory_order_relaxed);
}

namespace {
bool overlaps(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  return a.substr(0, n) == b.substr(0, n);
}
}  // namespace

std::string TrackingRegistry::check_prefixes(std::uint64_t id,
                                             const std::vector<std::string>& prefixes) {
  std::vector<std::string> existing = prefixes_of(id);
  // Redis formats with %s: a prefix is shown up to its first NUL byte.
  auto shown = [](std::string_view s) { return s.substr(0, s.find('\0')); };
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    for (const std::string& e : existing) {
      if (overlaps(e, prefixes[i]))
        return err::prefix_overlaps_existing(shown(prefixes[i]), shown(e));
    }
    for (std::size_t j = i + 1; j < prefixes.size(); ++j) {
      if (overlaps(prefixes[i], prefixes[j]))
        return err::prefix_overlaps_provided(shown(prefixes[i]), shown(prefixes[j]));
    }
  }
  return {};
}

std::vector<std::string> TrackingRegistry::prefixes_of(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_map_.find(id);
  if (it == clients_map_.end() || !it->second.bcast) return {};
  std::vector<std::string> v = it->second.prefixes;
  std::sort(v.begin(), v.end());  // Redis lists them from a radix tree: byte order
  return v;
}

bool TrackingRegistry::broken_redirect(std::uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = clients_map_.find(id);
  return it != clients_map_.end() && it->second.broken;
}

std::size_t TrackingRegistry::total_keys() {
  std::lock_guard<std::mutex> lock(mu_);
  return table_.size();
}

std::size_t TrackingRegistry::total_items() {
  std::lock_guard<std::mutex> lock(mu_);
  return items_;
}

std::size_t TrackingRegistry::total_prefixes() {
  std::lock_guard<std::mutex> lock(mu_);
  return prefixes_.size();
}

void TrackingRegistry::send_locked(FeatureHost& server, std::uint64_t id, Client& c,
                                   std::string_view keys_resp) {
  ThreadState& t = t_state;
  t_tracking_pending = true;
  if (c.redirect != 0) {
    std::shared_ptr<ClientInfo> target = server.clients().find(c.redirect);
    if (!target) {
      c.broken = true;
      std::string f{kTrackingFrameTag, kRedirBroken};
      f += ":" + std::to_string(c.redirect) + "\r\n";
      t.out.push_back({{c.worker, id}, std::move(f)});
      return;
    }
    std::string f{kTrackingFrameTag, kToRedirect};
    f.append(keys_resp);
    t.out.push_back({{target->worker, c.redirect}, std::move(f)});
    return;
  }
  std::string f{kTrackingFrameTag, kToSelf};
  f.append(keys_resp);
  t.out.push_back({{c.worker, id}, std::move(f)});
}

void TrackingRegistry::invalidate_key_locked(FeatureHost& server, std::uint64_t origin,
                                             std::string_view key) {
  auto it = table_.find(key);
  if (it == table_.end()) return;
  const std::vector<std::uint64_t> ids = std::move(it->second);
  const std::string arr = encode_keys(std::span<const std::string_view>(&key, 1));
  table_.erase(it);  // "once and forget": the next read registers again
  items_ -= ids.size();
  for (std::uint64_t id : ids) {
    auto c = clients_map_.find(id);
    // Gone, switched off, or now in BCAST mode (Redis skips such leftovers too).
    if (c == clients_map_.end() || c->second.bcast) continue;
    if (c->second.noloop && id == origin) continue;
    send_locked(server, id, c->second, arr);
  }
}

void TrackingRegistry::remember(FeatureHost& server, std::uint64_t id,
                                std::span<const std::string_view> keys) {
  const std::int64_t max = g_max_keys.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  for (std::string_view k : keys) {
    auto it = table_.find(k);
    if (it == table_.end()) it = table_.emplace(std::string(k), std::vector<std::uint64_t>{}).first;
    auto& ids = it->second;
    if (std::find(ids.begin(), ids.end(), id) != ids.end()) continue;
    ids.push_back(id);
    ++items_;
  }
  evict_to_bound_locked(server, max);
}

void TrackingRegistry::evict_to_bound_locked(FeatureHost& server, std::int64_t max) {
  // Invalidate keys until the table fits (Redis picks random keys; any will do).
  while (max > 0 && table_.size() > static_cast<std::size_t>(max)) {
    const std::string victim = table_.begin()->first;
    invalidate_key_locked(server, 0, victim);
  }
}

void TrackingRegistry::enforce_bound(FeatureHost& server) {
  const std::int64_t max = g_max_keys.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  evict_to_bound_locked(server, max);
}

void TrackingRegistry::invalidate(FeatureHost& server, std::uint64_t origin,
                                  const std::vector<std::string>& keys, bool flushed) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!table_.empty())
    for (const std::string& k : keys) invalidate_key_locked(server, origin, k);
  if (!prefixes_.empty()) {
    for (const std::string& k : keys) {
      // Noted once per key, with its last modifier, when some prefix covers it.
      auto p = prefixes_.upper_bound(std::string_view(k));
      bool covered = false;
      for (auto it = prefixes_.begin(); it != p && !covered; ++it) covered = k.starts_with(it->first);
      if (!covered) continue;
      bcast_keys_.insert_or_assign(k, origin);
      bcast_pending_.store(true, std::memory_order_relaxed);  // see broadcast_pending()
    }
  }
  if (flushed) {
    for (auto& [id, c] : clients_map_) send_locked(server, id, c, {});  // the null invalidation
    table_.clear();
    items_ = 0;
  }
}

void TrackingRegistry::broadcast(FeatureHost& server) {
  std::lock_guard<std::mutex> lock(mu_);
  bcast_pending_.store(false, std::memory_order_relaxed);  // under mu_, with the keys taken
  if (bcast_keys_.empty()) return;
  std::vector<std::string_view> match;
  for (auto& [prefix, ids] : prefixes_) {
    // bcast_keys_ is sorted: the keys under `prefix` are one run from its lower bound.
    auto first = bcast_keys_.lower_bound(std::string_view(prefix));
    auto last = first;
    while (last != bcast_keys_.end() && std::string_view(last->first).starts_with(prefix)) ++last;
    if (first == last) continue;
    for (std::uint64_t id : ids) {
      auto c = clients_map_.find(id);
      if (c == clients_map_.end()) continue;
      match.clear();
      for (auto it = first; it != last; ++it)
        if (!c->second.noloop || it->second != id) match.push_back(it->first);
      if (!match.empty()) send_locked(server, id, c->second, encode_keys(match));
    }
  }
  bcast_keys_.clear();
}

// ---- the calling thread's notes and their delivery ----

void tracking_note_modified(std::string_view key) {
  ThreadState& t = t_state;
  (t.server_change ? t.server_keys : t.keys).emplace_back(key);
  t_tracking_pending = true;
}

void tracking_defer_unblock(unsigned worker, std::uint64_t conn, const BlockedClient* b,
                            std::string reply) {
  ThreadState& t = t_state;
  t.unblocked.push_back({worker, conn, b, std::move(reply)});
  t_tracking_pending = true;  // so that flush() runs after this command and posts it
}

TrackingServerChange::TrackingServerChange() : saved_(t_state.server_change) {
  t_state.server_change = true;
}

TrackingServerChange::~TrackingServerChange() {
  t_state.server_change = saved_;
}

void tracking_note_flush() {
  ThreadState& t = t_state;
  t.flushed = true;
  t_tracking_pending = true;
}

namespace {

// Turns the keys noted so far into messages in the outbox (delivered by tracking_flush()).
void compute_noted(FeatureHost& server, std::uint64_t origin) {
  ThreadState& t = t_state;
  if (t.keys.empty() && t.server_keys.empty() && !t.flushed) return;
  // The server's own changes first: an expiry removes a key before the command that found it
  // expired writes it, and the write must not hide the expiry's message from a NOLOOP client.
  if (!t.server_keys.empty()) {
    server.tracking().invalidate(server, 0, t.server_keys, false);
    t.server_keys.clear();
  }
  server.tracking().invalidate(server, origin, t.keys, t.flushed);
  t.keys.clear();
  t.flushed = false;
}

}  // namespace

void tracking_flush(FeatureHost& server, unsigned self, std::uint64_t origin) {
  ThreadState& t = t_state;
  compute_noted(server, origin);
  t_tracking_pending = false;
  // A served client's reply leaves with its own invalidations behind it, in one item, as Redis
  // sends them right after that reply (they belong to its command, which the push completed).
  if (!t.unblocked.empty()) {
    std::vector<ThreadState::Unblocked> unblocked;
    unblocked.swap(t.unblocked);
    for (ThreadState::Unblocked& u : unblocked) {
      std::vector<std::string> after;
      std::erase_if(t.out, [&](Outgoing& o) {
        if (o.to.conn != u.conn) return false;
        after.push_back(std::move(o.frame));
        return true;
      });
      server.post_unblock(u.worker, u.conn, u.b, std::move(u.reply), std::move(after));
    }
  }
  if (t.out.empty()) return;
  const unsigned n = server.num_workers();
  if (t.remote.size() < n) t.remote.resize(n);
  // Taken first: deliver() below never notes anything, but keep the outbox reentrancy-safe.
  std::vector<Outgoing> out;
  out.swap(t.out);
  for (Outgoing& o : out) {
    PubSubFrame* f = PubSubFrame::make_raw(o.frame);
    if (o.to.worker == self) {
      server.deliver(self, o.to.conn, f->bytes());
      f->release();
    } else {
      t.remote[o.to.worker].push_back({f, o.to.conn});  // the envelope owns the reference
    }
  }
  // One batch per target worker, in the order computed (each inbox is FIFO per producer).
  for (unsigned w = 0; w < n; ++w) {
    auto& v = t.remote[w];
    if (v.empty()) continue;
    PubSubBatch* b = PubSubBatch::make(static_cast<std::uint32_t>(v.size()));
    std::copy(v.begin(), v.end(), b->items());
    server.post(w, b);
    v.clear();
  }
  out.clear();
  if (t.out.empty()) t.out.swap(out);  // keep the capacity
}

bool tracking_render(int resp, bool subscribed, std::string_view frame, std::string* out) {
  if (frame.size() < 2) return false;
  const char kind = frame[1];
  std::string_view payload = frame.substr(2);
  if (kind == kRedirBroken) {
    if (resp != 3) return false;
    out->assign(">2\r\n$21\r\ntracking-redir-broken\r\n");
    out->append(payload);
    return true;
  }
  if (resp == 3) {
    out->assign(">2\r\n$10\r\ninvalidate\r\n");
    out->append(payload.empty() ? std::string_view("_\r\n") : payload);
    return true;
  }
  // RESP2: only a redirect target in pub/sub mode can receive it, as a pub/sub message.
  if (kind != kToRedirect || !subscribed) return false;
  out->assign("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n");
  out->append(payload.empty() ? std::string_view("$-1\r\n") : payload);
  return true;
}

// ---- hooks ----

void tracking_before_read(CommandContext& ctx, const CommandSpec& cmd, FeatureHost& server,
                          const TrackingFlags& t, std::uint64_t conn_id) {
  if (t.bcast) return;
  if ((t.optin && !t.caching) || (t.optout && t.caching)) return;
  thread_local std::vector<std::size_t> idx;
  thread_local std::vector<std::string_view> keys;
  idx.clear();
  keys.clear();
  if (scripting::called_from_script()) {
    // A read that a script runs remembers the script's declared keys, the keys of the command
    // the client sent, not the keys read (Redis 7.0 remembers the caller's command's keys); a
    // script that runs no read command remembers nothing.
    const auto declared = scripting::script_keys();
    keys.assign(declared.begin(), declared.end());
  } else {
    // A script command (EVAL_RO is a read) remembers nothing itself, only through its reads.
    if (cmd.flags & (kScript | kPubSub | kChannelKeys)) return;
    command_keys(cmd, ctx.argv, &idx);
    for (std::size_t i : idx) keys.push_back(ctx.argv[i]);
  }
  if (keys.empty()) return;
  // A write earlier in the same EXEC or script is looked up before this read registers its keys,
  // as Redis invalidates at the write: a key written and then read by one transaction stays
  // tracked, with no message about the write that preceded the read. The messages still leave
  // after the reply (tracking_flush(), which t_tracking_pending keeps scheduled).
  if (t_tracking_pending) compute_noted(server, conn_id);
  server.tracking().remember(server, conn_id, keys);
}


}  // namespace kvlab::server
