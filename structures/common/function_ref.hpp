// A non-owning reference to a callable, for the one virtual boundary (AnyKeyspace): passes a
// lambda through a virtual call without allocating. The referenced callable must outlive the call.
#pragma once

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace kvlab {

template <class Signature>
class FunctionRef;

template <class R, class... Args>
class FunctionRef<R(Args...)> {
 public:
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> &&
             std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): used like a parameter type
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* o, Args... args) -> R {
          return std::invoke(*static_cast<std::remove_reference_t<F>*>(o),
                             std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace kvlab
