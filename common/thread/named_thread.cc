// NamedThread and ThreadGroup (see named_thread.h). A group's thread moves
// itself from running_ to finished_ as its last act under the lock; whoever
// calls Start next, or JoinAll, joins it.
#include "common/thread/named_thread.h"

#include <pthread.h>

#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace termbridge::thread {

void NameCurrentThread(std::string_view name) {
  std::string cut(name.substr(0, kMaxNameBytes));
  pthread_setname_np(pthread_self(), cut.c_str());
}

NamedThread::NamedThread(std::string_view name, absl::AnyInvocable<void() &&> body)
    : thread_([name = std::string(name), body = std::move(body)]() mutable {
        NameCurrentThread(name);
        std::move(body)();
      }) {}

NamedThread& NamedThread::operator=(NamedThread&& other) noexcept {
  if (this != &other) {
    Join();
    thread_ = std::move(other.thread_);
  }
  return *this;
}

NamedThread::~NamedThread() { Join(); }

void NamedThread::Join() {
  if (thread_.joinable()) thread_.join();
}

ThreadGroup::ThreadGroup(std::string name, size_t max_running)
    : name_(std::move(name)), max_running_(max_running < 1 ? 1 : max_running) {}

ThreadGroup::~ThreadGroup() { JoinAll(); }

absl::Status ThreadGroup::Start(absl::AnyInvocable<void() &&> body) {
  std::list<NamedThread> ended;  // joined when this returns, outside the lock
  absl::MutexLock lock(&mu_);
  ended.splice(ended.end(), finished_);
  if (closed_) {
    return absl::FailedPreconditionError(absl::StrCat(name_, ": shutting down"));
  }
  if (running_.size() >= max_running_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(name_, ": ", running_.size(), " threads running, the most allowed"));
  }
  // The new thread needs mu_ to move its own entry, so the entry is in place
  // (assigned below) before the thread can touch it.
  auto self = running_.emplace(running_.end());
  try {
    *self = NamedThread(name_, [this, self, body = std::move(body)]() mutable {
      std::move(body)();
      body = nullptr;  // its captures end before the group counts it finished
      absl::MutexLock lock(&mu_);
      finished_.splice(finished_.end(), running_, self);
    });
  } catch (const std::system_error& e) {
    running_.erase(self);
    return absl::ResourceExhaustedError(
        absl::StrCat(name_, ": cannot start a thread (", e.what(), ")"));
  }
  return absl::OkStatus();
}

size_t ThreadGroup::running() const {
  absl::MutexLock lock(&mu_);
  return running_.size();
}

size_t ThreadGroup::held() const {
  absl::MutexLock lock(&mu_);
  return running_.size() + finished_.size();
}

void ThreadGroup::JoinAll() {
  std::list<NamedThread> ended;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    mu_.Await(absl::Condition(
        +[](std::list<NamedThread>* running) { return running->empty(); }, &running_));
    ended.splice(ended.end(), finished_);
  }
  ended.clear();  // joins each
}

}  // namespace termbridge::thread
