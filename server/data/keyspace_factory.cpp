// The only server translation unit that instantiates the backends (see keyspace_factory.hpp).
#include "server/data/keyspace_factory.hpp"

#include "structures/backends.hpp"

namespace kvlab::server {

std::unique_ptr<AnyKeyspace<Value>> make_value_keyspace(std::string_view backend,
                                                        std::size_t expected_keys) {
  MapOptions options;
  options.expected_keys = expected_keys;
  return make_keyspace<Value>(backend, options);
}

namespace {
template <ConcurrentQueue Q>
class MessageQueueAdapter final : public MessageQueue {
 public:
  explicit MessageQueueAdapter(const QueueOptions& options) : queue_(options) {}
  bool push(void* item) override { return queue_.push(item); }
  void* try_pop() override {
    std::optional<void*> v = queue_.try_pop();
    return v ? *v : nullptr;
  }
  std::size_t size_approx() override { return queue_.size_approx(); }
  const BackendTraits& traits() const override { return Q::kTraits; }

 private:
  Q queue_;
};
}  // namespace

std::unique_ptr<MessageQueue> make_message_queue(std::string_view name, std::size_t capacity) {
  QueueOptions options;
  options.capacity = capacity;
  std::unique_ptr<MessageQueue> out;
  visit_queue_backend<void*>(
      name, [&]<class Q>() { out = std::make_unique<MessageQueueAdapter<Q>>(options); });
  return out;
}

}  // namespace kvlab::server
