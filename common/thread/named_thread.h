// Threads that have an owner and a name. NamedThread is a std::thread that
// names itself (pthread_setname_np: top -H, gdb, /proc/<pid>/task/*/comm)
// before it runs its body, and that its destructor joins: whoever holds it
// owns it, and nothing is ever detached. ThreadGroup owns the threads a
// server starts one per connection or per call: it bounds how many run at
// once, joins those that have finished at the next Start, and joins all of
// them at JoinAll or destruction. docs/ARCHITECTURE.md ("Threads") lists
// every thread of the binaries with its name, its starter and its joiner.
#ifndef TERMBRIDGE_COMMON_THREAD_NAMED_THREAD_H_
#define TERMBRIDGE_COMMON_THREAD_NAMED_THREAD_H_

#include <cstddef>
#include <list>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace termbridge::thread {

// The longest thread name Linux keeps (bytes, without the NUL).
inline constexpr size_t kMaxNameBytes = 15;

// Names the calling thread; a name longer than kMaxNameBytes is cut there.
void NameCurrentThread(std::string_view name);

// One thread, named, joined by its owner (at the latest in the destructor).
class NamedThread {
 public:
  NamedThread() = default;  // holds no thread
  // Starts `body` on a new thread called `name` (set before `body` runs).
  // Like std::thread, throws std::system_error when the system cannot start
  // a thread; ThreadGroup::Start turns that into a Status.
  NamedThread(std::string_view name, absl::AnyInvocable<void() &&> body);
  NamedThread(NamedThread&& other) noexcept = default;
  // Joins the thread this one held, then takes `other`'s.
  NamedThread& operator=(NamedThread&& other) noexcept;
  ~NamedThread();  // Join()

  // Blocks until the thread has ended; no-op when there is none (any more).
  // Never from the thread itself.
  void Join();
  bool joinable() const { return thread_.joinable(); }
  std::thread::id id() const { return thread_.get_id(); }

 private:
  std::thread thread_;
};

// Threads that all have one name, started one per connection or per call.
class ThreadGroup {
 public:
  // `name`: every thread's name (at most kMaxNameBytes). `max_running`: the
  // most bodies that run at once (at least 1).
  ThreadGroup(std::string name, size_t max_running);
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;
  ~ThreadGroup();  // JoinAll()

  // Runs `body` on a new thread of the group, after joining the threads that
  // finished since the last Start. Refuses, without running `body`:
  // ResourceExhausted when max_running bodies are running or the system
  // cannot start a thread, FailedPrecondition once JoinAll has begun. The
  // message names the group and the bound, for the caller's own error.
  absl::Status Start(absl::AnyInvocable<void() &&> body);

  // Bodies started that have not returned.
  size_t running() const;
  // Threads not yet joined: running, or finished since the last Start.
  size_t held() const;
  const std::string& name() const { return name_; }

  // Refuses every later Start, waits until every body has returned (the
  // owner must first make them return: close their sockets, cancel their
  // calls) and joins every thread. Never from a thread of the group.
  void JoinAll();

 private:
  const std::string name_;
  const size_t max_running_;
  mutable absl::Mutex mu_;
  std::list<NamedThread> running_ ABSL_GUARDED_BY(mu_);   // bodies not yet returned
  std::list<NamedThread> finished_ ABSL_GUARDED_BY(mu_);  // to join at the next Start
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace termbridge::thread

#endif  // TERMBRIDGE_COMMON_THREAD_NAMED_THREAD_H_
