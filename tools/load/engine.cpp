// The generator's engine: one epoll event loop per thread, each driving its share of the
// connections. See load.hpp for what is measured; this file is how.
//
// Per loop iteration a thread (1) issues every request that is due on each connection whose
// pipeline window has room, appending them to the connection's output buffer, (2) sends each
// buffer with one send(), (3) sleeps in epoll until the earliest due slot of a connection with
// window room, a one-second tick, or the end — with a nanosecond timeout (epoll_pwait2) and a
// 1 us timer slack, so a slot is not sent up to a millisecond late — and (4) reads replies,
// matching each to the oldest request in flight (RESP replies come in order). A reply frees a
// window slot, so the queued backlog of due slots is sent right away from the reply handler.
//
// Invariants (per connection):
//   1. Each node connection's inflight holds, in send order, one entry per request sent on it and
//      not yet answered; the sender's inflight is their total, <= pipeline. A redirected request
//      (cluster mode) moves from one node's queue to another's and keeps its place in the window.
//   2. Open loop: next_intended is the intended time of the first slot not yet sent; every slot
//      before it has been sent; the slots between it and now are the local backlog.
//   3. issued counts slots sent; issued <= quota.
#include <sys/epoll.h>
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "tools/load/cluster.hpp"
#include "tools/load/connection.hpp"
#include "tools/load/load.hpp"
#include "tools/load/workload.hpp"

namespace kvlab::load {
namespace {

constexpr std::int64_t kSecond = 1000000000;

enum class Role { kRequest, kPublisher, kSubscriber };

// One server connection of a sender. In cluster mode a sender has one per node (opened at the
// start, or when a redirection first names a node); RESP answers in order on each connection, so
// each keeps its own queue of the requests it has in flight.
struct NodeConn {
  Connection conn;
  std::deque<Pending> inflight;
  bool open = false;
  bool out_armed = false;
};

// One sender (a "connection" of --connections): its schedule and its window.
struct Slot {
  std::deque<NodeConn> nodes;  // exactly one unless --cluster; a deque keeps references stable
  Role role = Role::kRequest;
  std::size_t inflight = 0;  // requests in flight over all nodes (invariant 1)
  Workload::KeyStream keys;
  Rng rng{1};
  double period_ns = 0;
  std::int64_t phase_ns = 0;
  std::uint64_t slot_index = 0;
  std::int64_t next_intended = 0;
  std::uint64_t issued = 0;
  std::uint64_t quota = UINT64_MAX;
  bool dead = false;
  unsigned global_index = 0;
  std::uint64_t messages = 0;
};

// Per-second progress, assembled from every thread's share.
class Collector {
 public:
  Collector(unsigned threads, std::int64_t warmup_ticks,
            const std::function<void(const IntervalReport&)>& cb)
      : threads_(threads), warmup_ticks_(warmup_ticks), cb_(cb) {}

  void submit(unsigned tick, const Histogram& h, std::uint64_t completed, std::uint64_t errors) {
    if (!cb_) return;
    std::lock_guard lock(m_);
    Agg& a = ticks_[tick];
    a.hist.merge(h);
    a.completed += completed;
    a.errors += errors;
    ++a.submitted;
    emit_ready();
  }
  void thread_done() {
    if (!cb_) return;
    std::lock_guard lock(m_);
    ++done_;
    emit_ready();
  }

 private:
  struct Agg {
    Histogram hist;
    std::uint64_t completed = 0, errors = 0;
    unsigned submitted = 0;
  };
  // REQUIRES: m_ held.
  void emit_ready() {
    while (!ticks_.empty()) {
      auto it = ticks_.begin();
      if (it->second.submitted + done_ < threads_) break;
      IntervalReport r;
      r.second = it->first;
      r.warmup = static_cast<std::int64_t>(it->first) <= warmup_ticks_;
      r.completed = it->second.completed;
      r.errors = it->second.errors;
      r.p50_us = static_cast<double>(it->second.hist.value_at_quantile(0.5)) / 1000.0;
      r.p99_us = static_cast<double>(it->second.hist.value_at_quantile(0.99)) / 1000.0;
      r.histogram = &it->second.hist;
      cb_(r);
      ticks_.erase(it);
    }
  }
  std::mutex m_;
  unsigned threads_;
  unsigned done_ = 0;
  std::int64_t warmup_ticks_;
  const std::function<void(const IntervalReport&)>& cb_;
  std::map<unsigned, Agg> ticks_;
};

struct Shared {
  Shared(const LoadConfig& c, const Workload& w, std::optional<double> r)
      : cfg(c), workload(w), rate(r) {}
  const LoadConfig& cfg;
  const Workload& workload;
  std::optional<double> rate;
  unsigned senders = 0;  // connections that send (requests or publishes), all threads

  std::mutex m;
  std::condition_variable cv;
  unsigned ready = 0;
  bool failed = false;
  bool connection_failed = false;  // the failure was the server's (connect, AUTH, SUBSCRIBE)
  bool go = false;
  bool abort = false;
  std::string error;
  std::int64_t t_start = 0, measure_start = 0, t_end = 0;
  bool requests_mode = false;

  std::unique_ptr<Collector> collector;
  const SlotMap* slot_map = nullptr;  // cluster mode: the map every worker starts from

  // Pub/sub drain bookkeeping. Relaxed is enough: they only decide when to stop waiting, and the
  // final totals are read after join().
  std::atomic<std::int64_t> pending_publish{0};
  std::atomic<std::uint64_t> promised{0};
  std::atomic<std::uint64_t> delivered{0};
  std::atomic<unsigned> past_end{0};

  // Results, merged under m.
  StepResult* result = nullptr;
  std::int64_t last_completion = 0;
};

// epoll wait with a nanosecond timeout; falls back to milliseconds (rounded up) without pwait2.
int wait_events(int ep, epoll_event* ev, int max, std::int64_t timeout_ns) {
  static std::atomic<bool> no_pwait2{false};
  if (timeout_ns < 0) timeout_ns = 0;
  if (!no_pwait2.load(std::memory_order_relaxed)) {  // relaxed: a cached capability flag
    timespec ts{static_cast<time_t>(timeout_ns / kSecond), static_cast<long>(timeout_ns % kSecond)};
    const int n = ::epoll_pwait2(ep, ev, max, &ts, nullptr);
    if (n >= 0 || errno != ENOSYS) return n;
    no_pwait2.store(true, std::memory_order_relaxed);
  }
  return ::epoll_wait(ep, ev, max, static_cast<int>((timeout_ns + 999999) / 1000000));
}

class Worker {
 public:
  Worker(Shared& sh, unsigned index) : sh_(sh), cfg_(sh.cfg), index_(index) {
    if (sh.slot_map) map_ = *sh.slot_map;
  }
  ~Worker() {
    if (ep_ >= 0) ::close(ep_);
  }

  void run() {
    std::string error;
    if (!setup(&error)) {
      std::lock_guard lock(sh_.m);
      if (!sh_.failed) {
        sh_.error = error;
        sh_.connection_failed = setup_reached_server_;
      }
      sh_.failed = true;
      sh_.cv.notify_all();
      return;
    }
    {
      std::unique_lock lock(sh_.m);
      ++sh_.ready;
      sh_.cv.notify_all();
      sh_.cv.wait(lock, [&] { return sh_.go; });
      if (sh_.abort) return;
    }
    main_loop();
    drain();
    finish();
  }

 private:
  // A redirected request goes to at most this many nodes before its error reply counts as one
  // (a cluster whose nodes disagree must not keep a request bouncing).
  static constexpr unsigned kMaxRedirects = 5;
  // TRYAGAIN: resent after 1 ms, at most 1,000 times (a second; a migrating batch is frozen for
  // one round trip to the target).
  static constexpr unsigned kMaxTryAgain = 1000;
  static constexpr std::int64_t kTryAgainNs = 1000000;

  bool open_loop() const { return sh_.rate.has_value(); }
  bool cluster() const { return cfg_.cluster; }
  static std::uint64_t event_id(std::size_t slot, std::size_t node) {
    return (static_cast<std::uint64_t>(slot) << 16) | node;
  }

  // Connects node n of slot s (AUTH included) and registers it with epoll.
  bool open_node(Slot& s, std::size_t id, std::size_t n, std::string* error) {
    NodeConn& nc = s.nodes[n];
    const std::string& host = cluster() ? map_.nodes[n].host : cfg_.host;
    const std::uint16_t port = cluster() ? map_.nodes[n].port : cfg_.port;
    if (!nc.conn.connect(host, port, cfg_.connect_timeout_s, error)) return false;
    if (!cfg_.password.empty()) {
      nc.conn.out() = "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(cfg_.password.size()) + "\r\n" +
                      cfg_.password + "\r\n";
      std::string text;
      if (!nc.conn.roundtrip(1, cfg_.connect_timeout_s, error, [&](const ReplyState& r) {
            if (r.error) text = r.error_text;
          }))
        return false;
      if (!text.empty()) return *error = "AUTH failed: " + text, false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = event_id(id, n);
    if (::epoll_ctl(ep_, EPOLL_CTL_ADD, nc.conn.fd(), &ev) != 0)
      return *error = "epoll_ctl failed", false;
    nc.open = true;
    return true;
  }

  bool setup(std::string* error) {
    ::prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // 1 us: wake for slots on time
    if (cfg_.on_thread_start && !cfg_.on_thread_start(index_, error)) return false;
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) return *error = "epoll_create1 failed", false;

    const unsigned T = cfg_.threads;
    // Which connections this thread owns, and their global index among senders.
    if (cfg_.pubsub) {
      for (unsigned s = index_; s < cfg_.subscribers; s += T) add_slot(Role::kSubscriber, s);
      for (unsigned p = index_; p < cfg_.publishers; p += T) add_slot(Role::kPublisher, p);
    } else {
      for (unsigned c = 0; c < cfg_.connections; ++c)
        add_slot(Role::kRequest, index_ * cfg_.connections + c);
    }
    const double per_sender = open_loop() ? *sh_.rate / sh_.senders : 0;
    const std::uint64_t total_requests = cfg_.requests;
    setup_reached_server_ = true;  // every failure from here on is the server's
    for (std::size_t id = 0; id < slots_.size(); ++id) {
      Slot& s = *slots_[id];
      s.nodes.resize(cluster() ? map_.nodes.size() : 1);
      for (std::size_t n = 0; n < s.nodes.size(); ++n)
        if (!open_node(s, id, n, error)) return false;
      Connection& conn = s.nodes[0].conn;
      if (s.role == Role::kSubscriber) {
        const std::string ch = channel_name(s.global_index % cfg_.channels);
        conn.out() =
            "*2\r\n$9\r\nSUBSCRIBE\r\n$" + std::to_string(ch.size()) + "\r\n" + ch + "\r\n";
        std::string text;
        if (!conn.roundtrip(1, cfg_.connect_timeout_s, error, [&](const ReplyState& r) {
              if (r.error) text = r.error_text;
            }))
          return false;
        if (!text.empty()) return *error = "SUBSCRIBE failed: " + text, false;
      } else {
        s.period_ns = per_sender > 0 ? 1e9 / per_sender : 0;
        s.phase_ns = static_cast<std::int64_t>(s.period_ns * s.global_index / sh_.senders);
        s.keys = sh_.workload.make_stream(s.global_index, sh_.senders);
        s.rng = Rng::stream(cfg_.seed, 2 * s.global_index + 1);  // arrival gaps
        if (total_requests > 0) {
          s.quota = total_requests / sh_.senders +
                    (s.global_index < total_requests % sh_.senders ? 1 : 0);
        }
      }
    }
    return true;
  }

  static std::string channel_name(unsigned k) { return "kvlab:ch:" + std::to_string(k); }

  void add_slot(Role role, unsigned global_index) {
    auto s = std::make_unique<Slot>();
    s->role = role;
    s->global_index = global_index;
    slots_.push_back(std::move(s));
  }

  void start_schedule() {
    for (auto& s : slots_) {
      if (s->role == Role::kSubscriber) continue;
      s->next_intended = sh_.t_start + s->phase_ns;
      if (cfg_.arrivals == Arrivals::kPoisson && open_loop()) advance_poisson(*s, sh_.t_start);
    }
  }

  void advance_poisson(Slot& s, std::int64_t from) {
    const double gap = -std::log(1.0 - s.rng.unit()) * s.period_ns;
    s.next_intended = from + static_cast<std::int64_t>(gap);
  }

  void advance(Slot& s) {
    ++s.slot_index;
    if (cfg_.arrivals == Arrivals::kPoisson) {
      advance_poisson(s, s.next_intended);
    } else {
      // From the start each time, so rounding does not drift.
      s.next_intended = sh_.t_start + s.phase_ns +
                        static_cast<std::int64_t>(s.period_ns * static_cast<double>(s.slot_index));
    }
  }

  // The node a request for key slot `slot` goes to (cluster mode); requests without a key
  // (PING) rotate over the nodes.
  std::size_t route(int slot) {
    if (slot >= 0) {
      const std::uint16_t n = map_.owner[static_cast<std::size_t>(slot)];
      if (n != kNoNode) return n;
    }
    return rotate_++ % map_.nodes.size();
  }

  void append_one(Slot& s, std::size_t id, std::int64_t intended, std::int64_t now) {
    bool read = false;
    std::size_t n = 0;
    std::string request;  // cluster mode: kept for a resend after MOVED/ASK
    unsigned replies = 1;
    std::int64_t insert = -1;
    if (s.role == Role::kPublisher) {
      std::string& out = s.nodes[0].conn.out();
      const std::string ch = channel_name((s.global_index + s.messages++) % cfg_.channels);
      out += "*3\r\n$7\r\nPUBLISH\r\n$" + std::to_string(ch.size()) + "\r\n" + ch + "\r\n$" +
             std::to_string(cfg_.payload) + "\r\n";
      const std::size_t at = out.size();
      out.append(cfg_.payload, 'p');
      write_stamp(out.data() + at, intended, now);
      out += "\r\n";
      sh_.pending_publish.fetch_add(1, std::memory_order_relaxed);
    } else if (!cluster()) {
      replies = sh_.workload.append_request(s.keys, s.nodes[0].conn.out(), &read, nullptr, &insert);
    } else {
      int slot = -1;
      replies = sh_.workload.append_request(s.keys, request, &read, &slot, &insert);
      n = route(slot);
      if (n >= s.nodes.size()) s.nodes.resize(n + 1);
      if (!s.nodes[n].open) {
        std::string error;
        if (!open_node(s, id, n, &error)) return disconnect(s);
      }
      s.nodes[n].conn.out() += request;
      if (replies != 1) request.clear();  // only single commands are redirected
    }
    if (open_loop() && intended >= sh_.measure_start) send_lag_.record(now - intended);
    Pending p{intended, now, replies, read, std::move(request)};
    p.ycsb_insert = insert;
    s.nodes[n].inflight.push_back(std::move(p));
    ++s.inflight;
    ++s.issued;
  }

  // Issues every due request that fits in the window (open loop) / fills the window (closed).
  void issue(Slot& s, std::size_t id, std::int64_t now) {
    if (s.dead || draining_ || s.role == Role::kSubscriber) return;
    const std::size_t window = cfg_.pipeline;
    if (open_loop()) {
      // Slots at or after the end belong to no step; the loop sends what is due up to the end.
      while (!s.dead && s.inflight < window && s.issued < s.quota && s.next_intended <= now &&
             s.next_intended < sh_.t_end) {
        append_one(s, id, s.next_intended, now);
        advance(s);
      }
    } else {
      while (!s.dead && s.inflight < window && s.issued < s.quota) append_one(s, id, now, now);
    }
  }

  void flush(Slot& s, std::size_t id) {
    for (std::size_t n = 0; n < s.nodes.size() && !s.dead; ++n) {
      NodeConn& nc = s.nodes[n];
      if (!nc.open) continue;
      if (!nc.conn.flush()) return disconnect(s);
      const bool want = nc.conn.has_output();
      if (want != nc.out_armed) {
        epoll_event ev{};
        ev.events = EPOLLIN | (want ? EPOLLOUT : 0u);
        ev.data.u64 = event_id(id, n);
        ::epoll_ctl(ep_, EPOLL_CTL_MOD, nc.conn.fd(), &ev);
        nc.out_armed = want;
      }
    }
  }

  bool has_output(const Slot& s) const {
    for (const auto& nc : s.nodes)
      if (nc.open && nc.conn.has_output()) return true;
    return false;
  }

  // A connection of the sender closed: the whole sender stops (its requests in flight are lost).
  void disconnect(Slot& s) {
    if (s.dead) return;
    s.dead = true;
    ++disconnects_;
    ++ivl_errors_;
    if (first_disconnect_ == 0) first_disconnect_ = now_ns();
    lost_requests_ += s.inflight;
    if (s.role == Role::kPublisher)
      sh_.pending_publish.fetch_sub(static_cast<std::int64_t>(s.inflight),
                                    std::memory_order_relaxed);
    for (auto& nc : s.nodes) {
      nc.inflight.clear();
      if (!nc.open) continue;
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, nc.conn.fd(), nullptr);
      nc.conn.close();
      nc.open = false;
    }
    s.inflight = 0;
  }

  // Follows a MOVED or ASK reply to the request at the front of node n's queue: the request goes
  // to the node named, with its intended send time kept (the detour counts in its latency).
  // MOVED also updates the slot map. False when the request is not to be redirected (it was a
  // several-command request, or has bounced too often): its error reply then counts as one.
  bool redirect(Slot& s, std::size_t id, std::size_t n, const ReplyState& r) {
    Pending& front = s.nodes[n].inflight.front();
    if (r.error_text.rfind("TRYAGAIN", 0) == 0) {
      // A key of the request is migrating (or, for several keys, split between the nodes): sent
      // again to the same node after kTryAgainNs, as cluster clients do. The request stays in
      // flight for its sender; its latency keeps its intended send time.
      if (front.request.empty() || front.tryagains >= kMaxTryAgain) return false;
      Pending p = std::move(front);
      s.nodes[n].inflight.pop_front();
      ++p.tryagains;
      ++tryagains_;
      retry_.push_back(Retry{now_ns() + kTryAgainNs, id, n, std::move(p)});
      return true;
    }
    Redirect rd;
    if (front.request.empty() || front.redirects >= kMaxRedirects ||
        !parse_redirect(r.error_text, &rd))
      return false;
    if (rd.to.host.empty()) rd.to.host = cfg_.host;  // "MOVED 3999 :6381": the host we know
    const std::size_t m = map_.node_index(rd.to);
    if (m >= s.nodes.size()) s.nodes.resize(m + 1);
    Pending p = std::move(front);
    s.nodes[n].inflight.pop_front();
    ++p.redirects;
    if (rd.ask) {
      ++asks_;
      p.replies = 2;  // ASKING's +OK, then the request's reply
      p.asking = true;
    } else {
      ++moved_;
      map_.owner[rd.slot] = static_cast<std::uint16_t>(m);
      p.replies = 1;
      p.asking = false;
    }
    if (!s.nodes[m].open) {
      std::string error;
      if (!open_node(s, id, m, &error)) {
        s.nodes[m].inflight.push_back(std::move(p));  // lost with the sender
        disconnect(s);
        return true;
      }
    }
    std::string& out = s.nodes[m].conn.out();
    if (rd.ask) out += "*1\r\n$6\r\nASKING\r\n";
    out += p.request;
    s.nodes[m].inflight.push_back(std::move(p));
    return true;
  }

  void on_reply(Slot& s, std::size_t id, std::size_t n, ReplyState& r, std::int64_t now) {
    if (s.role == Role::kSubscriber) {
      if (!r.is_message || !r.stamped) return;  // (un)subscribe confirmations
      sh_.delivered.fetch_add(1, std::memory_order_relaxed);
      ++delivered_;
      if (r.intended_ns >= sh_.measure_start) {
        latency_.record(now - r.intended_ns);
        service_.record(now - r.sent_ns);
        ++requests_;
      }
      ivl_latency_.record(now - r.intended_ns);
      return;
    }
    std::deque<Pending>& inflight = s.nodes[n].inflight;
    if (inflight.empty()) return;   // a reply we did not ask for; nothing to match
    if (inflight.front().asking) {  // ASKING's reply, ahead of the redirected request's
      inflight.front().asking = false;
      --inflight.front().replies;
      return;
    }
    if (r.error && cluster() && inflight.front().replies == 1 && redirect(s, id, n, r)) return;
    ++replies_;
    if (r.error) {
      ++error_replies_;
      ++ivl_errors_;
    }
    Pending p;
    if (!complete_front(inflight, &p)) return;  // more replies of this request are due
    --s.inflight;
    if (p.ycsb_insert >= 0) sh_.workload.acknowledge(static_cast<std::uint64_t>(p.ycsb_insert));
    if (p.read && !r.error && p.intended_ns >= sh_.measure_start)
      ++(reply_is_miss(r.top_type, r.elements) ? misses_ : hits_);
    if (s.role == Role::kPublisher) {
      sh_.pending_publish.fetch_sub(1, std::memory_order_relaxed);
      if (r.top_type == REDIS_REPLY_INTEGER && r.integer > 0) {
        sh_.promised.fetch_add(static_cast<std::uint64_t>(r.integer), std::memory_order_relaxed);
        promised_ += static_cast<std::uint64_t>(r.integer);
      }
      ++published_;
    } else {
      if (p.intended_ns >= sh_.measure_start) {
        latency_.record(now - p.intended_ns);
        service_.record(now - p.sent_ns);
        ++requests_;
      }
      ivl_latency_.record(now - p.intended_ns);
    }
    ++ivl_completed_;
    // The achieved rate counts the slots of the measured schedule that were served, so a backlog
    // left from the warmup or left unsent at the end does not count as throughput.
    if (p.intended_ns >= sh_.measure_start) ++served_;
    if (now >= sh_.measure_start && now <= sh_.t_end) ++window_completed_;
    last_completion_ = now;
  }

  void handle(std::uint64_t event, std::uint32_t events, std::int64_t now) {
    const std::size_t id = static_cast<std::size_t>(event >> 16), n = event & 0xffff;
    Slot& s = *slots_[id];
    if (s.dead || n >= s.nodes.size() || !s.nodes[n].open) return;
    // s.nodes is a deque: a redirection that appends a node leaves this reference valid.
    Connection& conn = s.nodes[n].conn;
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
      const bool alive = conn.read_some(read_buf_.get(), kReadBuf);
      for (;;) {
        const int r = conn.next_reply();
        if (r == 0) break;
        if (r < 0) return disconnect(s);
        on_reply(s, id, n, conn.state(), now);
        if (s.dead) return;
        conn.state() = ReplyState{};
      }
      if (!alive) return disconnect(s);
      issue(s, id, now);
      flush(s, id);
    } else if (events & EPOLLOUT) {
      flush(s, id);
    }
  }

  bool all_quota_done() const {
    for (const auto& s : slots_)
      if (!s->dead && s->role != Role::kSubscriber && (s->issued < s->quota || s->inflight != 0))
        return false;
    return true;
  }

  void submit_tick(unsigned tick) {
    if (sh_.collector) sh_.collector->submit(tick, ivl_latency_, ivl_completed_, ivl_errors_);
    ivl_latency_.reset();
    ivl_completed_ = ivl_errors_ = 0;
  }

  // Sends the TRYAGAIN retries that are due; returns when the next one is (or `wake`).
  std::int64_t resend_due(std::int64_t now, std::int64_t wake) {
    for (std::size_t i = 0; i < retry_.size();) {
      Retry& t = retry_[i];
      if (t.due_ns > now) {
        wake = std::min(wake, t.due_ns);
        ++i;
        continue;
      }
      Slot& s = *slots_[t.slot];
      if (!s.dead) {  // a dead sender counted it lost already (disconnect())
        std::string& out = s.nodes[t.node].conn.out();
        out += t.p.request;
        s.nodes[t.node].inflight.push_back(std::move(t.p));
      }
      retry_[i] = std::move(retry_.back());
      retry_.pop_back();
    }
    return wake;
  }

  void main_loop() {
    // Every thread starts at the same instant; nothing is sent before it.
    while (now_ns() < sh_.t_start) std::this_thread::sleep_for(std::chrono::microseconds(200));
    start_schedule();
    std::int64_t next_tick = sh_.t_start + kSecond;
    unsigned tick = 1;
    epoll_event events[256];
    for (;;) {
      std::int64_t now = now_ns();
      while (now >= next_tick) {
        submit_tick(tick++);
        next_tick += kSecond;
      }
      std::int64_t wake = std::min({sh_.t_end, next_tick, now + 10 * 1000000});
      if (!retry_.empty()) wake = resend_due(now, wake);
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        Slot& s = *slots_[i];
        issue(s, i, now);
        if (has_output(s)) flush(s, i);
        if (open_loop() && !s.dead && s.role != Role::kSubscriber && s.inflight < cfg_.pipeline &&
            s.issued < s.quota)
          wake = std::min(wake, s.next_intended);
      }
      // After the issue pass, so the slots due just before the end are still sent.
      if (now >= sh_.t_end) break;
      if (sh_.requests_mode && all_quota_done()) break;
      const int n = wait_events(ep_, events, 256, wake - now_ns());
      now = now_ns();
      for (int i = 0; i < n; ++i) handle(events[i].data.u64, events[i].events, now);
    }
  }

  void drain() {
    draining_ = true;
    const std::int64_t end = std::min(sh_.t_end, now_ns());
    // Slots due before the end that were never sent: recorded with a lower bound of their wait.
    if (open_loop() && !sh_.requests_mode) {
      std::uint64_t budget = 100000000;
      for (auto& sp : slots_) {
        Slot& s = *sp;
        if (s.role == Role::kSubscriber) continue;
        if (s.dead) {
          // The server closed this connection: what fell due on it afterwards is lost, not late.
          while (s.next_intended < end && s.issued < s.quota && budget-- > 0) {
            ++lost_requests_;
            ++s.issued;
            advance(s);
          }
          continue;
        }
        while (s.next_intended < end && s.issued < s.quota && budget-- > 0) {
          if (s.next_intended >= sh_.measure_start) {
            // (Pub/sub: the latency histogram holds deliveries; an unsent publish is only counted.)
            if (s.role == Role::kRequest) latency_.record(end - s.next_intended);
            ++unsent_;
          }
          ++s.issued;
          advance(s);
        }
      }
    }
    sh_.past_end.fetch_add(1, std::memory_order_relaxed);
    const std::int64_t deadline = now_ns() + static_cast<std::int64_t>(cfg_.drain_timeout_s * 1e9);
    epoll_event events[256];
    for (;;) {
      std::int64_t now = now_ns();
      if (now >= deadline) break;
      bool idle = true;
      for (const auto& s : slots_)
        if (!s->dead && s->inflight != 0) idle = false;
      if (idle && cfg_.pubsub) {
        // Subscribers wait for what every publisher was promised delivered.
        idle = sh_.past_end.load(std::memory_order_relaxed) == cfg_.threads &&
               sh_.pending_publish.load(std::memory_order_relaxed) <= 0 &&
               sh_.delivered.load(std::memory_order_relaxed) >=
                   sh_.promised.load(std::memory_order_relaxed);
      }
      if (idle) break;
      // Redirected requests wait in output buffers: send them.
      const std::int64_t wake = retry_.empty() ? deadline : resend_due(now, deadline);
      for (std::size_t i = 0; i < slots_.size(); ++i)
        if (has_output(*slots_[i])) flush(*slots_[i], i);
      const int n =
          wait_events(ep_, events, 256, std::min({deadline - now, wake - now, 5 * 1000000L}));
      now = now_ns();
      for (int i = 0; i < n; ++i) handle(events[i].data.u64, events[i].events, now);
    }
    const std::int64_t now = now_ns();
    for (auto& s : slots_) {
      if (s->dead) continue;
      for (auto& nc : s->nodes) {
        for (const Pending& p : nc.inflight) {
          ++timeouts_;
          if (p.intended_ns >= sh_.measure_start && s->role != Role::kPublisher)
            latency_.record(now - p.intended_ns);
        }
        nc.inflight.clear();
      }
      if (s->role == Role::kPublisher)
        sh_.pending_publish.fetch_sub(static_cast<std::int64_t>(s->inflight),
                                      std::memory_order_relaxed);
      s->inflight = 0;
    }
  }

  void finish() {
    if (sh_.collector) sh_.collector->thread_done();
    std::lock_guard lock(sh_.m);
    StepResult& r = *sh_.result;
    r.latency.merge(latency_);
    r.service.merge(service_);
    r.send_lag.merge(send_lag_);
    r.requests += requests_;
    r.error_replies += error_replies_;
    r.timeouts += timeouts_;
    r.disconnects += disconnects_;
    r.unsent += unsent_;
    r.hits += hits_;
    r.misses += misses_;
    r.replies += replies_;
    r.lost_requests += lost_requests_;
    r.moved += moved_;
    r.asks += asks_;
    r.tryagains += tryagains_;
    if (first_disconnect_ != 0) {
      const double at = static_cast<double>(first_disconnect_ - sh_.t_start) / 1e9;
      if (r.first_disconnect_s < 0 || at < r.first_disconnect_s) r.first_disconnect_s = at;
    }
    r.published += published_;
    r.delivered += delivered_;
    r.promised += promised_;
    // Both divided by the window in run_step().
    r.achieved_rate += static_cast<double>(window_completed_);
    r.served_rate += static_cast<double>(served_);
    sh_.last_completion = std::max(sh_.last_completion, last_completion_);
  }

  static constexpr std::size_t kReadBuf = 64 * 1024;

  Shared& sh_;
  const LoadConfig& cfg_;
  unsigned index_;
  int ep_ = -1;
  bool draining_ = false;
  bool setup_reached_server_ = false;
  SlotMap map_;  // cluster mode: this thread's copy, updated by MOVED
  std::size_t rotate_ = 0;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::unique_ptr<char[]> read_buf_{new char[kReadBuf]};
  Histogram latency_, service_, send_lag_, ivl_latency_;
  std::uint64_t requests_ = 0, error_replies_ = 0, timeouts_ = 0, disconnects_ = 0, unsent_ = 0;
  std::uint64_t published_ = 0, delivered_ = 0, promised_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0, replies_ = 0, lost_requests_ = 0;
  std::uint64_t moved_ = 0, asks_ = 0, tryagains_ = 0;
  // Requests answered TRYAGAIN, to resend to their node once due (resend_due()).
  struct Retry {
    std::int64_t due_ns;
    std::size_t slot, node;
    Pending p;
  };
  std::vector<Retry> retry_;
  std::int64_t first_disconnect_ = 0;  // 0: none
  std::uint64_t served_ = 0, window_completed_ = 0, ivl_completed_ = 0, ivl_errors_ = 0;
  std::int64_t last_completion_ = 0;
};

bool validate(const LoadConfig& c, std::optional<double> rate, std::string* error) {
  if (c.threads == 0) return *error = "--threads must be at least 1", false;
  if (!c.pubsub && c.connections == 0) return *error = "--connections must be at least 1", false;
  if (c.pipeline == 0) return *error = "--pipeline must be at least 1", false;
  if (c.keys == 0) return *error = "--keys must be at least 1", false;
  if (c.requests == 0 && !(c.duration_s > 0)) return *error = "--duration must be > 0", false;
  if (c.warmup_s < 0) return *error = "--warmup must be >= 0", false;
  if (rate && !(*rate > 0)) return *error = "--rate must be > 0", false;
  if (c.key_pattern == KeyPattern::kZipf && !(c.zipf_theta > 0 && c.zipf_theta < 1))
    return *error = "zipf:θ needs 0 < θ < 1", false;
  if (c.pubsub) {
    if (c.publishers == 0 || c.subscribers == 0 || c.channels == 0)
      return *error = "--publishers, --subscribers and --channels must be at least 1", false;
    if (c.payload < kStampSize)
      return *error = "--payload must be at least " + std::to_string(kStampSize) + " bytes", false;
  }
  for (const auto& t : c.commands)
    if (t.args.empty()) return *error = "empty --command", false;
  if (c.cluster && c.pubsub) return *error = "--cluster does not drive --pubsub", false;
  if (!c.ycsb.empty()) {
    const auto w = bench::ycsb::workload_by_name(c.ycsb);
    if (!w) return *error = "unknown --workload '" + c.ycsb + "' (ycsb-a … ycsb-f)", false;
    if (!c.commands.empty()) return *error = "--workload replaces --command/--ratio", false;
    if (c.pubsub) return *error = "--workload and --pubsub exclude each other", false;
    if (c.cluster && (w->insert > 0 || w->scan > 0))
      return *error =
                 "--cluster runs ycsb-a, b, c and f: the inserts of d and e write the scan "
                 "index, one sorted set on one node",
             false;
  }
  return true;
}

}  // namespace

bool is_sustained(double achieved, double target, double threshold) {
  return achieved >= threshold * target;
}

bool run_step(const LoadConfig& cfg, std::optional<double> rate, StepResult* result,
              std::string* error, const std::function<void(const IntervalReport&)>& progress,
              StartError* why) {
  StartError ignored;
  if (!why) why = &ignored;
  *why = StartError::kNone;
  if (!validate(cfg, rate, error)) return *why = StartError::kConfig, false;
  const Workload workload(cfg);
  Shared sh(cfg, workload, rate);
  SlotMap map;
  if (cfg.cluster) {
    if (!fetch_slot_map(cfg.host, cfg.port, cfg.password, cfg.connect_timeout_s, &map, error))
      return *why = StartError::kConnection, false;
    sh.slot_map = &map;
  }
  sh.senders = cfg.pubsub ? cfg.publishers : cfg.threads * cfg.connections;
  sh.requests_mode = cfg.requests > 0;
  *result = StepResult{};
  result->target_rate = rate;
  result->cluster_nodes = static_cast<unsigned>(map.nodes.size());
  sh.result = result;
  const double warmup = sh.requests_mode ? 0.0 : cfg.warmup_s;
  if (progress) {
    sh.collector =
        std::make_unique<Collector>(cfg.threads, static_cast<std::int64_t>(warmup), progress);
  }

  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < cfg.threads; ++i) workers.push_back(std::make_unique<Worker>(sh, i));
  for (unsigned i = 0; i < cfg.threads; ++i) threads.emplace_back([&, i] { workers[i]->run(); });
  bool ok = true;
  {
    std::unique_lock lock(sh.m);
    sh.cv.wait(lock, [&] { return sh.failed || sh.ready == cfg.threads; });
    if (sh.failed) {
      ok = false;
      sh.abort = true;
      *error = sh.error;
      *why = sh.connection_failed ? StartError::kConnection : StartError::kConfig;
    }
    sh.t_start = now_ns() + 10 * 1000000;  // every thread starts from the same instant
    result->start_epoch_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() +
        0.010;
    sh.measure_start = sh.t_start + static_cast<std::int64_t>(warmup * 1e9);
    // With --requests the duration is a cap, so a stalled server cannot hold the run forever.
    sh.t_end = sh.measure_start + static_cast<std::int64_t>(cfg.duration_s * 1e9);
    sh.go = true;
    sh.cv.notify_all();
  }
  for (auto& t : threads) t.join();
  if (!ok) return false;

  const std::int64_t end = sh.requests_mode ? std::min(sh.last_completion, sh.t_end) : sh.t_end;
  result->window_s = std::max(1e-9, static_cast<double>(end - sh.measure_start) / 1e9);
  result->achieved_rate /= result->window_s;
  result->served_rate /= result->window_s;
  result->sustained = !rate || (is_sustained(result->achieved_rate, *rate, cfg.sustain_threshold) &&
                                is_sustained(result->served_rate, *rate, cfg.sustain_threshold));
  return true;
}

bool prefill(const LoadConfig& config, std::string* error, StartError* why) {
  StartError ignored;
  if (!why) why = &ignored;
  *why = StartError::kConfig;
  LoadConfig c = config;
  if (!validate(c, std::nullopt, error)) return false;
  const Workload workload(c);
  *why = StartError::kConnection;
  // One connection per node (one in all when not a cluster); each key goes to its slot's node.
  SlotMap map;
  if (c.cluster && !fetch_slot_map(c.host, c.port, c.password, c.connect_timeout_s, &map, error))
    return false;
  std::vector<Connection> conns(c.cluster ? map.nodes.size() : 1);
  for (std::size_t n = 0; n < conns.size(); ++n) {
    Connection& conn = conns[n];
    const std::string& host = c.cluster ? map.nodes[n].host : c.host;
    if (!conn.connect(host, c.cluster ? map.nodes[n].port : c.port, c.connect_timeout_s, error))
      return false;
    if (c.password.empty()) continue;
    std::string auth_error;
    conn.out() =
        "*2\r\n$4\r\nAUTH\r\n$" + std::to_string(c.password.size()) + "\r\n" + c.password + "\r\n";
    if (!conn.roundtrip(1, c.connect_timeout_s, error, [&](const ReplyState& r) {
          if (r.error) auth_error = r.error_text;
        }))
      return false;
    if (!auth_error.empty()) return *error = "AUTH failed: " + auth_error, false;
  }
  constexpr std::uint64_t kBatch = 256;
  std::string first_error;
  std::vector<std::size_t> due(conns.size());
  for (std::uint64_t k = 0; k < c.keys; k += kBatch) {
    const std::uint64_t n = std::min(kBatch, c.keys - k);
    for (std::uint64_t i = 0; i < n; ++i) {
      std::size_t node = 0;
      if (c.cluster) {
        const std::uint16_t o = map.owner[key_slot(workload.load_key(k + i))];
        node = o == kNoNode ? 0 : o;
      }
      // A cluster keeps YCSB's scan index on another node than the record: no index there.
      due[node] += workload.append_set(k + i, conns[node].out(), !c.cluster);
    }
    for (std::size_t node = 0; node < conns.size(); ++node) {
      if (due[node] == 0) continue;
      if (!conns[node].roundtrip(due[node], 30, error, [&](const ReplyState& r) {
            if (r.error && first_error.empty()) first_error = r.error_text;
          }))
        return false;
      due[node] = 0;
    }
    if (!first_error.empty()) {
      *why = StartError::kNone;  // the server answered, with an error
      return *error = "prefill: server replied " + first_error, false;
    }
  }
  return true;
}

}  // namespace kvlab::load
