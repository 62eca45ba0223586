#include "structures/common/cds_runtime.hpp"

#include <cds/gc/hp.h>
#include <cds/init.h>
#include <cds/threading/model.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "structures/common/pool.hpp"

namespace kvlab::cds_runtime {
namespace {

// SkipListMap needs c_nMaxHeight * 2 + 3 = 67 guards; round up.
constexpr unsigned kHazardPointers = 72;

unsigned compute_max_threads() {
  return std::max(256u, 2 * std::thread::hardware_concurrency() + 64);
}

// Constructed on first attach; destroyed at exit after every thread_local Attachment of the main
// thread (thread storage is destroyed before static storage), so the HP singleton outlives them.
class Runtime {
 public:
  Runtime() : max_threads_(compute_max_threads()) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>(kHazardPointers, max_threads_);
  }
  ~Runtime() {
    gc_.reset();    // frees every retired node still pending
    pool::close();  // which may have cached blocks after this thread's exit drain ran
    cds::Terminate();
  }
  unsigned max_threads() const { return max_threads_; }

 private:
  unsigned max_threads_;
  std::unique_ptr<cds::gc::HP> gc_;
};

Runtime& runtime() {
  static Runtime r;
  return r;
}

}  // namespace

namespace detail {
Attachment::Attachment() {
  runtime();
  cds::threading::Manager::attachThread();
}
Attachment::~Attachment() { cds::threading::Manager::detachThread(); }
}  // namespace detail

unsigned hazard_pointers_per_thread() { return kHazardPointers; }
unsigned max_threads() { return runtime().max_threads(); }

}  // namespace kvlab::cds_runtime
