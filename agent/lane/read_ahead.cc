// The read-ahead thread and the pages it holds (read_ahead.h).
#include "agent/lane/read_ahead.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace termbridge::lane {

ReadAhead::ReadAhead(Fetch fetch)
    : fetch_(std::move(fetch)), thread_("tb-read-ahead", [this] { Run(); }) {}

ReadAhead::~ReadAhead() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.Join();
}

std::string ReadAhead::KeyOf(const v1::ReadOutputRequest& request) {
  return absl::StrCat(request.session_id(), "\n", request.terminal_id(), "\n", request.cursor(),
                      "\n", request.max_bytes(), "\n", static_cast<int>(request.format()));
}

void ReadAhead::Start(v1::ReadOutputRequest next) {
  next.set_wait_ms(0);
  next.clear_until();
  next.clear_match();
  next.clear_idle_ms();
  next.set_tail(false);
  std::string key = KeyOf(next);
  absl::MutexLock lock(&mu_);
  if (stopping_ || pages_.count(key) > 0) return;
  auto page = std::make_shared<Page>();
  page->request = std::move(next);
  page->started = absl::Now();
  pages_.emplace(key, std::move(page));
  queue_.push_back(std::move(key));
  Trim();
}

std::optional<absl::StatusOr<v1::ReadOutputResponse>> ReadAhead::Take(
    const v1::ReadOutputRequest& request) {
  const std::string key = KeyOf(request);
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(key);
  if (it == pages_.end()) return std::nullopt;
  const std::shared_ptr<Page> page = it->second;
  // Waiting for the read under way beats asking the broker a second time.
  auto settled = [this, &page, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto held = pages_.find(key);
    return page->reply.has_value() || stopping_ || held == pages_.end() || held->second != page;
  };
  mu_.Await(absl::Condition(&settled));
  if (!page->reply) return std::nullopt;  // dropped meanwhile
  if (auto held = pages_.find(key); held != pages_.end() && held->second == page) {
    pages_.erase(held);
  }
  return std::move(*page->reply);
}

void ReadAhead::Trim() {
  const absl::Time now = absl::Now();
  for (auto it = pages_.begin(); it != pages_.end();) {
    if (!it->second->reading && now - it->second->started > kKeep) {
      it = pages_.erase(it);
    } else {
      ++it;
    }
  }
  while (pages_.size() > kMaxPages) {
    auto oldest = std::min_element(pages_.begin(), pages_.end(), [](const auto& a, const auto& b) {
      return a.second->started < b.second->started;
    });
    pages_.erase(oldest);
  }
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [this](const std::string& key) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                return pages_.count(key) == 0;
                              }),
               queue_.end());
}

void ReadAhead::Run() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    // Wake for work, to stop, or to let pages nobody took expire.
    auto work = [this]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&work), kKeep);
    if (stopping_) {
      pages_.clear();
      return;
    }
    Trim();
    if (queue_.empty()) continue;
    const std::string key = queue_.front();
    queue_.pop_front();
    std::shared_ptr<Page> page = pages_.at(key);
    page->reading = true;
    v1::ReadOutputRequest request = page->request;
    mu_.Unlock();
    absl::StatusOr<v1::ReadOutputResponse> reply = fetch_(std::move(request));
    mu_.Lock();
    page->reading = false;
    page->reply = std::move(reply);
  }
}

}  // namespace termbridge::lane
