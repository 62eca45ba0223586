// The keyspace factory of the libFuzzer build of command_fuzz (tests/fuzz/run.sh), in place of
// server/data/keyspace_factory.cpp: the same two functions, with only the backends the target uses
// (command_fuzz.cpp kBackends) and the default pub/sub inbox, so that the fuzz build does not
// instantiate every libcds and TBB container (minutes of clang with ASan). Other names answer
// nullptr, as unknown names do in the real factory. The g++ regression build links the real one.
#include <optional>

#include "server/data/keyspace_factory.hpp"
#include "structures/hash/cds_michael.hpp"
#include "structures/hash/kvlab.hpp"
#include "structures/hash/locked.hpp"
#include "structures/queue/kvlab_mpsc.hpp"
#include "structures/skiplist/kvlab.hpp"

namespace kvlab::server {

namespace {
template <class M>
std::unique_ptr<AnyKeyspace<Value>> make_if(std::string_view name, const MapOptions& options) {
  if (M::kTraits.name != name) return nullptr;
  return std::make_unique<KeyspaceAdapter<M>>(options);
}
}  // namespace

std::unique_ptr<AnyKeyspace<Value>> make_value_keyspace(std::string_view backend,
                                                        std::size_t expected_keys) {
  MapOptions options;
  options.expected_keys = expected_keys;
  std::unique_ptr<AnyKeyspace<Value>> out;
  if (!out) out = make_if<hash::Kvlab<Value>>(backend, options);
  if (!out) out = make_if<hash::Locked<Value>>(backend, options);
  if (!out) out = make_if<skiplist::Kvlab<Value>>(backend, options);
  if (!out) out = make_if<hash::CdsMichael<Value>>(backend, options);
  return out;
}

namespace {
class Inbox final : public MessageQueue {
 public:
  explicit Inbox(const QueueOptions& options) : queue_(options) {}
  bool push(void* item) override { return queue_.push(item); }
  void* try_pop() override {
    std::optional<void*> v = queue_.try_pop();
    return v ? *v : nullptr;
  }
  std::size_t size_approx() override { return queue_.size_approx(); }
  const BackendTraits& traits() const override { return queue::KvlabMpsc<void*>::kTraits; }

 private:
  queue::KvlabMpsc<void*> queue_;
};
}  // namespace

std::unique_ptr<MessageQueue> make_message_queue(std::string_view name, std::size_t capacity) {
  if (name != queue::KvlabMpsc<void*>::kTraits.name) return nullptr;
  QueueOptions options;
  options.capacity = capacity;
  return std::make_unique<Inbox>(options);
}

}  // namespace kvlab::server
