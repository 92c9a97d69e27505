// Running one tools/call: the handler runs on a thread of the transport's
// handler group ("tb-mcp-handler") while the request's thread waits for it,
// sends heartbeat progress, and watches for cancellation. A cancelled call
// stops being waited for at once, whether or not its handler notices: the
// handler's work (a command in a terminal) goes on, its eventual result is
// dropped, and the group joins its thread. Everything a call sends before
// its reply goes through its CallStream, which falls silent once the call
// ends.
#ifndef TERMBRIDGE_AGENT_MCP_TOOL_CALL_H_
#define TERMBRIDGE_AGENT_MCP_TOOL_CALL_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/mcp/mcp_server.h"
#include "common/thread/named_thread.h"

namespace termbridge::mcp {

// Shared by the waiting thread, the handler thread and cancellation.
struct CallControl {
  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  ToolResult result ABSL_GUARDED_BY(mu);

  void Cancel() {
    absl::MutexLock lock(&mu);
    cancelled = true;
  }
  bool IsCancelled() {
    absl::MutexLock lock(&mu);
    return cancelled;
  }
};

// The notifications of one call, in order, until Close().
class CallStream {
 public:
  // `progress_token` null: the client asked for no progress.
  CallStream(Sink notify, nlohmann::json progress_token);

  // Sends `message` unless the stream is closed or has no sink; true if sent.
  bool Send(const nlohmann::json& message);
  // notifications/progress, if wanted; drops values that do not increase.
  void Progress(double progress, std::optional<double> total, const std::string& message);
  // A heartbeat: the elapsed seconds, unless the tool reports progress itself
  // or did so within `interval`.
  void Heartbeat(absl::Duration elapsed, absl::Duration interval);
  bool can_send() const;
  void Close();

 private:
  const Sink notify_;
  const nlohmann::json token_;
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool tool_reported_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<double> last_ ABSL_GUARDED_BY(mu_);
  absl::Time last_time_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// The most tool handlers a transport runs at once, the abandoned ones (of
// cancelled calls, still waiting for the broker) included.
inline constexpr size_t kMaxToolHandlers = 256;

// Runs `handler` on a new thread of `handlers` and waits until it returns
// (true), or the call is cancelled through `control` or `peer_gone` (false;
// the handler runs on and `handlers` joins it). Sends heartbeats on `stream`
// every `heartbeat` (zero: none) meanwhile. ResourceExhausted, with
// `handler` not run, when `handlers` refuses a thread (at its bound).
absl::StatusOr<bool> RunToolCall(thread::ThreadGroup& handlers, std::function<ToolResult()> handler,
                                 std::shared_ptr<CallControl> control, CallStream& stream,
                                 const std::function<bool()>& peer_gone, absl::Duration heartbeat);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_TOOL_CALL_H_
