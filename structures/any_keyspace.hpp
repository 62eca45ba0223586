// The server boundary: AnyKeyspace<V> is the virtual face of any KeyValueMap with value type V,
// and KeyspaceAdapter<M> wraps one backend in it. The server picks a backend by name at startup
// (registry.hpp) and then calls through this interface, one indirect call per operation.
// Benchmarks call the templates directly and measure this adapter separately (--via-adapter).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <utility>

#include "structures/common/function_ref.hpp"
#include "structures/keyspace.hpp"

namespace kvlab {

template <class V>
class AnyKeyspace {
 public:
  using mapped_type = V;
  virtual ~AnyKeyspace() = default;

  virtual const BackendTraits& traits() const = 0;
  virtual bool find(std::string_view key, FunctionRef<void(const V&)> visitor) = 0;
  virtual bool insert(std::string_view key, const V& value) = 0;
  virtual bool insert_or_assign(std::string_view key, const V& value) = 0;
  // The same, taking the value over: backends with a moving overload (hash/kvlab) store it without
  // a copy, which for the server's reference-counted values saves two atomic count changes.
  virtual bool insert_or_assign(std::string_view key, V&& value) = 0;
  virtual bool erase(std::string_view key) = 0;
  virtual UpdateOutcome update(std::string_view key, FunctionRef<Update<V>(const V*)> fn) = 0;
  virtual std::size_t size_approx() = 0;
  virtual void for_each(FunctionRef<void(std::string_view, const V&)> fn) = 0;
  // Ordered backends only (traits().ordered); others return false without calling fn.
  virtual bool range(std::string_view lo, std::string_view hi,
                     FunctionRef<bool(std::string_view, const V&)> fn) = 0;
  virtual void clear() = 0;
  // A hint, not an operation: the caller is about to run commands on these keys (a pipelined
  // batch). Backends that can (hash/kvlab) start loading the keys' buckets and entries, and call
  // on_value with each value they reach so the caller can prefetch its memory; others do nothing.
  // Never changes the contents and may skip any key. Returns whether the backend acts on hints at
  // all (callers may ask once with no keys and skip the work of gathering them).
  virtual bool prefetch(std::span<const std::string_view> keys,
                        FunctionRef<void(const V&)> on_value) = 0;
};

template <KeyValueMap M>
class KeyspaceAdapter final : public AnyKeyspace<typename M::mapped_type> {
 public:
  using V = typename M::mapped_type;

  template <class... Args>
  explicit KeyspaceAdapter(Args&&... args) : map_(std::forward<Args>(args)...) {}

  const BackendTraits& traits() const override { return M::kTraits; }
  bool find(std::string_view key, FunctionRef<void(const V&)> visitor) override {
    return map_.find(key, visitor);
  }
  bool insert(std::string_view key, const V& value) override { return map_.insert(key, value); }
  bool insert_or_assign(std::string_view key, const V& value) override {
    return map_.insert_or_assign(key, value);
  }
  bool insert_or_assign(std::string_view key, V&& value) override {
    return map_.insert_or_assign(key, std::move(value));  // the const& overload if no moving one
  }
  bool erase(std::string_view key) override { return map_.erase(key); }
  UpdateOutcome update(std::string_view key, FunctionRef<Update<V>(const V*)> fn) override {
    return map_.update(key, fn);
  }
  std::size_t size_approx() override { return map_.size_approx(); }
  void for_each(FunctionRef<void(std::string_view, const V&)> fn) override { map_.for_each(fn); }
  bool range(std::string_view lo, std::string_view hi,
             FunctionRef<bool(std::string_view, const V&)> fn) override {
    if constexpr (OrderedMap<M>) {
      map_.range(lo, hi, fn);
      return true;
    } else {
      return false;
    }
  }
  void clear() override { map_.clear(); }
  bool prefetch(std::span<const std::string_view> keys,
                FunctionRef<void(const V&)> on_value) override {
    if constexpr (requires { map_.prefetch(keys, on_value); }) {
      map_.prefetch(keys, on_value);
      return true;
    } else {
      return false;
    }
  }

  M& backend() { return map_; }

 private:
  M map_;
};

}  // namespace kvlab
