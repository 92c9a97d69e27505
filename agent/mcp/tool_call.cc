// The waiting side and the handler side of one tool call.
#include "agent/mcp/tool_call.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

// How often the waiting thread looks at cancellation and the peer.
constexpr absl::Duration kTick = absl::Milliseconds(50);

}  // namespace

CallStream::CallStream(Sink notify, nlohmann::json progress_token)
    : notify_(std::move(notify)), token_(std::move(progress_token)) {}

bool CallStream::can_send() const {
  absl::MutexLock lock(&mu_);
  return notify_ != nullptr && !closed_;
}

bool CallStream::Send(const nlohmann::json& message) {
  absl::MutexLock lock(&mu_);
  if (closed_ || !notify_) return false;
  notify_(message);  // under mu_: keeps the stream's order
  return true;
}

void CallStream::Progress(double progress, std::optional<double> total,
                          const std::string& message) {
  if (token_.is_null()) return;
  {
    absl::MutexLock lock(&mu_);
    tool_reported_ = true;
  }
  nlohmann::json params = {{"progressToken", token_}, {"progress", progress}};
  if (total) params["total"] = *total;
  if (!message.empty()) params["message"] = message;
  absl::MutexLock lock(&mu_);
  if (closed_ || !notify_) return;
  if (last_ && progress <= *last_) {
    spdlog::debug("event=progress_dropped progress={} last={}", progress, *last_);
    return;
  }
  last_ = progress;
  last_time_ = absl::Now();
  notify_(Notification("notifications/progress", std::move(params)));
}

void CallStream::Heartbeat(absl::Duration elapsed, absl::Duration interval) {
  if (token_.is_null()) return;
  double seconds = std::floor(absl::ToDoubleSeconds(elapsed));
  absl::MutexLock lock(&mu_);
  if (closed_ || !notify_ || tool_reported_) return;
  if (absl::Now() - last_time_ < interval || (last_ && seconds <= *last_)) return;
  last_ = seconds;
  last_time_ = absl::Now();
  notify_(Notification("notifications/progress",
                       {{"progressToken", token_},
                        {"progress", seconds},
                        {"message", absl::StrFormat("waiting for the tool (%.0f s)", seconds)}}));
}

void CallStream::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

absl::StatusOr<bool> RunToolCall(thread::ThreadGroup& handlers, std::function<ToolResult()> handler,
                                 std::shared_ptr<CallControl> control, CallStream& stream,
                                 const std::function<bool()>& peer_gone, absl::Duration heartbeat) {
  absl::Status started = handlers.Start([handler = std::move(handler), control] {
    ToolResult result = handler();
    absl::MutexLock lock(&control->mu);
    control->result = std::move(result);
    control->done = true;
  });
  if (!started.ok()) return started;

  const absl::Time start = absl::Now();
  absl::MutexLock lock(&control->mu);
  auto finished = [&]() ABSL_SHARED_LOCKS_REQUIRED(control->mu) {
    return control->done || control->cancelled;
  };
  while (true) {
    control->mu.AwaitWithTimeout(absl::Condition(&finished), kTick);
    if (control->done) return true;
    if (control->cancelled) return false;
    control->mu.Unlock();
    bool gone = peer_gone && peer_gone();
    if (!gone && heartbeat > absl::ZeroDuration()) stream.Heartbeat(absl::Now() - start, heartbeat);
    control->mu.Lock();
    if (gone) {
      control->cancelled = true;
      spdlog::info("event=call_cancelled reason=peer_closed_stream");
      return false;
    }
  }
}

}  // namespace termbridge::mcp
