// LiveSet tracks what a running console has under way (open connections,
// gRPC calls to the operator socket), so that Stop can shut each of them
// down and wait until they are gone before the io_context and the gRPC
// channel they use are destroyed. Items are held weakly: an item removes
// itself when it ends.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_LIVE_SET_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_LIVE_SET_H_

#include <cstdint>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace termbridge::console {

// Something Stop can end: a connection closes, a gRPC call is cancelled.
class Stoppable {
 public:
  virtual ~Stoppable() = default;
  // Starts ending; must not block and may be called more than once.
  virtual void Shutdown() = 0;
};

class LiveSet {
 public:
  // Registers `item` and returns its id, or 0 (nothing registered) once
  // ShutdownAll has begun: the caller must then not start.
  uint64_t Add(std::weak_ptr<Stoppable> item);
  // Unregisters an id from Add (0 is ignored).
  void Remove(uint64_t id);
  // Refuses new items, then calls Shutdown on every live one, without
  // holding the lock (Shutdown may end an item, which calls Remove).
  void ShutdownAll();
  // Waits until every item was removed. Returns false after `timeout`.
  bool WaitEmpty(absl::Duration timeout);
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  std::map<uint64_t, std::weak_ptr<Stoppable>> items_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_LIVE_SET_H_
