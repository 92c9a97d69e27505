// Registry of live connections and calls for an orderly Stop (see live_set.h).
#include "broker/surface/console/live_set.h"

#include <vector>

namespace termbridge::console {

uint64_t LiveSet::Add(std::weak_ptr<Stoppable> item) {
  absl::MutexLock lock(&mu_);
  if (closed_) return 0;
  uint64_t id = next_id_++;
  items_.emplace(id, std::move(item));
  return id;
}

void LiveSet::Remove(uint64_t id) {
  if (id == 0) return;
  absl::MutexLock lock(&mu_);
  items_.erase(id);
}

void LiveSet::ShutdownAll() {
  std::vector<std::shared_ptr<Stoppable>> live;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    for (auto& [id, weak] : items_) {
      if (auto item = weak.lock()) live.push_back(std::move(item));
    }
  }
  for (auto& item : live) item->Shutdown();
}

bool LiveSet::WaitEmpty(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(
      absl::Condition(
          +[](std::map<uint64_t, std::weak_ptr<Stoppable>>* items) { return items->empty(); },
          &items_),
      timeout);
}

size_t LiveSet::size() const {
  absl::MutexLock lock(&mu_);
  return items_.size();
}

}  // namespace termbridge::console
