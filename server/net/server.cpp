// Process-wide server state: worker start-up, signal-driven shutdown, shared counters.
#include "server/net/server.hpp"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "server/core/command.hpp"
#include "server/data/keyspace_factory.hpp"
#include "server/net/worker.hpp"

namespace kvlab::server {

void Server::deliver(unsigned self, std::uint64_t conn, std::string_view bytes) {
  worker(self).deliver(conn, bytes);
}

void Server::post(unsigned w, PubSubBatch* batch) {
  worker(w).post(batch);
}

void Server::post_unblock(unsigned w, std::uint64_t conn, const BlockedClient* b, std::string reply,
                          std::vector<std::string> after) {
  worker(w).post_unblock(conn, b, std::move(reply), std::move(after));
}

void Server::pause(std::int64_t end_ms, PauseClass c, std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(pause_mu_);
  const std::uint64_t old = pause_.load(std::memory_order_relaxed);  // writers hold pause_mu_
  std::int64_t end = static_cast<std::int64_t>(old >> 2);
  std::uint64_t cls = old & 3;
  if (old == 0 || end <= now_ms) {  // the previous pause has ended
    end = 0;
    cls = kPauseNone;
  }
  if (end_ms <= now_ms) return;  // 0, or a wrapped timeout: nothing to pause
  end = std::max(end, std::min<std::int64_t>(end_ms, std::int64_t(1) << 61));
  cls = std::max<std::uint64_t>(cls, c);
  // release: see paused().
  pause_.store(static_cast<std::uint64_t>(end) << 2 | cls, std::memory_order_release);
}

void Server::unpause() {
  {
    std::lock_guard<std::mutex> lock(pause_mu_);
    pause_.store(0, std::memory_order_release);  // release: see paused()
  }
  for (auto& w : workers_) w->wake();
}

Server::Server(Config config, std::unique_ptr<Keyspace> ks, std::string backend_name)
    : config_(std::move(config)),
      ks_(std::move(ks)),
      backend_name_(std::move(backend_name)),
      maxclients_(config_.maxclients) {
  set_requirepass(config_.requirepass);
  const ClusterMode mode = config_.cluster_mode == "yes"        ? ClusterMode::kYes
                           : config_.cluster_mode == "emulated" ? ClusterMode::kEmulated
                                                                : ClusterMode::kNo;
  cluster_ = std::make_unique<Cluster>(
      mode, config_.cluster_node_id.empty() ? Cluster::random_id() : config_.cluster_node_id,
      config_.cluster_announce_ip.empty() ? config_.bind : config_.cluster_announce_ip,
      config_.port);
  start_ms_ = wall_ms();
}

Server::~Server() {
  for (auto& w : workers_) w->stop();
  for (auto& w : workers_) w->join();
  workers_.clear();
}

void Server::prepare(unsigned n) {
  stats_ = std::make_unique<WorkerStats[]>(n);
  const Atomicity::SchemeInfo* scheme = Atomicity::find(config_.atomicity);  // main() validated it
  // One slot per worker, plus the last for the cluster's slot migrator (cluster_migration.hpp).
  atomicity_ = std::make_unique<Atomicity>(
      scheme != nullptr ? scheme->scheme : Atomicity::Scheme::kKeyLocks, n + 1);
  eviction_ = std::make_unique<Eviction>(
      n, make_message_queue(config_.eviction_queue, config_.queue_capacity),
      make_message_queue(config_.eviction_queue, config_.queue_capacity));
  eviction_->set_samples(config_.maxmemory_samples);
  if (auto p = parse_evict_policy(config_.maxmemory_policy)) eviction_->set_policy(*p);
  eviction_->set_maxmemory(config_.maxmemory);
  db_.set_eviction(eviction_.get());
  eviction_->mark_started();
  for (unsigned i = 0; i < n; ++i)
    stats_[i].cmd = std::make_unique<CommandStat[]>(CommandTable::instance().stat_count());
  if (configure_) configure_(*this);
}

bool Server::start_in_process(unsigned n, std::string* error) {
  config_.threads = n;
  prepare(n);
  worker_placement_.assign(n, "in-process");
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>(*this, i);
    if (!w->open_in_process(error)) return false;
    workers_.push_back(std::move(w));
  }
  return true;
}

bool Server::start(const std::vector<std::vector<unsigned>>& worker_cpus,
                   const std::vector<std::string>& worker_reasons) {
  const unsigned n = config_.threads;
  prepare(n);
  worker_placement_ = worker_reasons;
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>(*this, i);
    std::string error;
    if (!w->open(&error)) {
      std::fprintf(stderr, "kvlab-server: %s\n", error.c_str());
      return false;
    }
    workers_.push_back(std::move(w));
  }
  // Listen only once every worker is built: a socket joins the SO_REUSEPORT group at listen(),
  // and a client that connects while some workers are still building (a large bounded inbox
  // takes a while) would otherwise land on the first listeners only, all of its connections
  // on one worker.
  for (unsigned i = 0; i < n; ++i) {
    std::string error;
    if (!workers_[i]->listen(&error)) {
      std::fprintf(stderr, "kvlab-server: %s\n", error.c_str());
      return false;
    }
  }
  for (unsigned i = 0; i < n; ++i)
    workers_[i]->start(i < worker_cpus.size() ? worker_cpus[i] : std::vector<unsigned>{});
  // Wait (bounded) until every worker has reported the CPU it runs on, for the start-up log.
  for (int tries = 0; tries < 200; ++tries) {
    bool all = true;
    for (unsigned i = 0; i < n; ++i)
      all = all && stats_[i].cpu.load(std::memory_order_acquire) >= 0;
    if (all) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void Server::run_until_signal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  std::fprintf(stderr, "kvlab-server: received %s, shutting down (finishing pending replies)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  for (auto& w : workers_) w->stop();
  for (auto& w : workers_) w->join();
  workers_.clear();
}

void Server::request_shutdown() {
  kill(getpid(), SIGTERM);
}

bool Server::try_admit() {
  const int now = connected_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (static_cast<unsigned>(now) > maxclients()) {
    connected_.fetch_sub(1, std::memory_order_relaxed);
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

std::size_t Server::client_eviction_limit() {
  const std::int64_t v = maxmemory_clients();
  std::uint64_t limit = 0;
  if (v < 0) {
    const std::uint64_t maxmemory = eviction().maxmemory();
    if (maxmemory == 0) return 0;  // a percentage of no limit: no client eviction, as Redis
    limit = static_cast<std::uint64_t>(static_cast<double>(maxmemory) * (-v) / 100.0);
  } else if (v > 0) {
    limit = static_cast<std::uint64_t>(v);
  } else {
    return 0;
  }
  return std::max<std::uint64_t>(limit, kMinClientEvictionLimit);
}

std::size_t Server::client_memory_total() {
  std::size_t sum = 0;
  // relaxed: see WorkerStats::client_mem.
  for (unsigned i = 0; i < num_workers(); ++i)
    sum += stats_[i].client_mem.load(std::memory_order_relaxed);
  return sum;
}

bool Server::check_password(std::string_view pass) {
  std::lock_guard<std::mutex> lock(config_mu_);
  if (requirepass_.size() != pass.size()) return false;
  unsigned char diff = 0;  // constant time in the password length
  for (std::size_t i = 0; i < pass.size(); ++i)
    diff |= static_cast<unsigned char>(requirepass_[i] ^ pass[i]);
  return diff == 0;
}

std::string Server::requirepass() {
  std::lock_guard<std::mutex> lock(config_mu_);
  return requirepass_;
}

void Server::set_requirepass(std::string pass) {
  std::lock_guard<std::mutex> lock(config_mu_);
  requirepass_ = std::move(pass);
  // Release: a connection that sees auth_required also sees the password it must match.
  auth_required_.store(!requirepass_.empty(), std::memory_order_release);
}

void ErrorStats::add(std::string_view code) {
  code = code.substr(0, sizeof(Slot::code) - 1);
  const std::size_t n = used.load(std::memory_order_relaxed);  // relaxed: this thread wrote it
  for (std::size_t i = 0; i < n; ++i) {
    if (code == slots[i].code) {
      slots[i].count.store(slots[i].count.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
      return;
    }
  }
  if (n == kSlots) return;
  std::memcpy(slots[n].code, code.data(), code.size());
  slots[n].code[code.size()] = '\0';
  slots[n].count.store(1, std::memory_order_relaxed);
  used.store(n + 1, std::memory_order_release);  // pairs with the acquire in raw_totals()
}

namespace {
StatTotals raw_totals(Server& s, unsigned workers, std::uint64_t rejected_connections) {
  StatTotals t;
  t.rejected_connections = rejected_connections;
  t.cmd.resize(CommandTable::instance().stat_count());
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  for (unsigned i = 0; i < workers; ++i) {
    WorkerStats& w = s.stats(i);
    t.hits += get(w.hits);
    t.misses += get(w.misses);
    t.expired += get(w.expired);
    t.errors += get(w.errors);
    t.net_in += get(w.net_in);
    t.net_out += get(w.net_out);
    t.connections += get(w.connections);
    t.obuf_closes += get(w.obuf_limit_closes);
    t.evicted_clients += get(w.evicted_clients);
    for (std::size_t c = 0; c < t.cmd.size(); ++c) {
      t.cmd[c].calls += get(w.cmd[c].calls);
      t.cmd[c].nanos += get(w.cmd[c].nanos);
      t.cmd[c].rejected += get(w.cmd[c].rejected);
      t.cmd[c].failed += get(w.cmd[c].failed);
      for (std::size_t k = 0; k < kLatencyBuckets; ++k) t.cmd[c].hist[k] += get(w.cmd[c].hist[k]);
    }
    const std::size_t used = w.errorstats.used.load(std::memory_order_acquire);
    for (std::size_t e = 0; e < used; ++e)
      t.errors_by_code[w.errorstats.slots[e].code] += get(w.errorstats.slots[e].count);
  }
  return t;
}
}  // namespace

StatTotals Server::stat_totals() {
  StatTotals t = raw_totals(*this, num_workers(), rejected_.load(std::memory_order_relaxed));
  std::lock_guard<std::mutex> lock(stat_base_mu_);
  const StatTotals& b = stat_base_;
  t.hits -= b.hits;
  t.misses -= b.misses;
  t.expired -= b.expired;
  t.errors -= b.errors;
  t.net_in -= b.net_in;
  t.net_out -= b.net_out;
  t.connections -= b.connections;
  t.rejected_connections -= b.rejected_connections;
  t.obuf_closes -= b.obuf_closes;
  t.evicted_clients -= b.evicted_clients;
  for (std::size_t c = 0; c < b.cmd.size() && c < t.cmd.size(); ++c) {
    t.cmd[c].calls -= b.cmd[c].calls;
    t.cmd[c].nanos -= b.cmd[c].nanos;
    t.cmd[c].rejected -= b.cmd[c].rejected;
    t.cmd[c].failed -= b.cmd[c].failed;
    for (std::size_t k = 0; k < kLatencyBuckets; ++k) t.cmd[c].hist[k] -= b.cmd[c].hist[k];
  }
  for (auto it = t.errors_by_code.begin(); it != t.errors_by_code.end();) {
    auto bi = b.errors_by_code.find(it->first);
    if (bi != b.errors_by_code.end()) it->second -= bi->second;
    it = it->second == 0 ? t.errors_by_code.erase(it) : std::next(it);
  }
  return t;
}

void Server::reset_stats() {
  StatTotals t = raw_totals(*this, num_workers(), rejected_.load(std::memory_order_relaxed));
  std::lock_guard<std::mutex> lock(stat_base_mu_);
  stat_base_ = std::move(t);
}

std::uint64_t Server::total_commands() {
  std::uint64_t total = 0;
  for (unsigned i = 0; i < config_.threads && stats_; ++i)
    total += stats_[i].commands.load(std::memory_order_relaxed);
  return total;
}

void Server::sample_ops(std::int64_t now_ms) {
  // Relaxed: only a rate limiter for taking samples; the samples themselves are under sample_mu_.
  if (now_ms - last_sample_ms_.load(std::memory_order_relaxed) < 100) return;
  std::unique_lock<std::mutex> lock(sample_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  last_sample_ms_.store(now_ms, std::memory_order_relaxed);
  sample_ms_[sample_next_] = now_ms;
  sample_ops_[sample_next_] = total_commands();
  sample_next_ = (sample_next_ + 1) % kSamples;
}

double Server::instantaneous_ops_per_sec(std::int64_t now_ms) {
  std::lock_guard<std::mutex> lock(sample_mu_);
  // The oldest sample within the last 1.6 s against the current total.
  std::int64_t t0 = now_ms;
  std::uint64_t ops0 = 0;
  for (int i = 0; i < kSamples; ++i) {
    if (sample_ms_[i] != 0 && sample_ms_[i] < t0 && now_ms - sample_ms_[i] <= 1600) {
      t0 = sample_ms_[i];
      ops0 = sample_ops_[i];
    }
  }
  if (t0 >= now_ms) return 0;
  const std::uint64_t now_ops = total_commands();
  return static_cast<double>(now_ops - ops0) * 1000.0 / static_cast<double>(now_ms - t0);
}

}  // namespace kvlab::server
