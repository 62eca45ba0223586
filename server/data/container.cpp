// The out-of-line deleter that Object::release() calls for container types (see container.hpp).
#include "server/data/container.hpp"

namespace kvlab::server {

void destroy_container(Object* o) noexcept {
  auto* c = static_cast<ContainerBase*>(o);
  c->destroy_(c);
}

}  // namespace kvlab::server
