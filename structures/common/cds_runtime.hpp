// libcds lifetime, handled in one place and invisible to callers.
//
// libcds needs cds::Initialize(), one cds::gc::HP singleton sized for the hungriest container
// (SkipListMap: 2 * 32 levels + 3 hazard pointers per thread), and every thread to call
// Manager::attachThread() before touching a container and detachThread() before it exits.
// Every libcds-backed operation in kvlab starts with ensure_attached(): the first call in a thread
// initializes libcds if needed and attaches the thread; a thread_local guard detaches it when the
// thread exits. So a thread that touches a libcds backend without being attached cannot exist.
//
// REQUIRES: libcds-backed containers are not objects of static storage duration (they must be
// destroyed while some thread is still attached; locals, members and heap objects are fine).
#pragma once

namespace kvlab::cds_runtime {

namespace detail {
struct Attachment {
  Attachment();
  ~Attachment();
  Attachment(const Attachment&) = delete;
  Attachment& operator=(const Attachment&) = delete;
};
}  // namespace detail

// Cheap after the first call in a thread: a thread_local initialization check.
inline void ensure_attached() { thread_local detail::Attachment attachment; }

// Hazard pointers per thread that the HP singleton was created with.
unsigned hazard_pointers_per_thread();
// Threads that may be attached at the same time.
unsigned max_threads();

}  // namespace kvlab::cds_runtime
