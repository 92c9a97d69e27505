// EventsBridge feeds a page's /ws/events WebSocket from two operator server
// streams: WatchTerminals (which terminals exist, opened and closed) and
// WatchApprovals (pending requests and decisions). Each stream starts with a
// snapshot and a "snapshot_done" event, so a page that reconnects rebuilds
// its state from what it receives. When both streams have ended, the
// WebSocket closes and the page reconnects.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_EVENTS_BRIDGE_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_EVENTS_BRIDGE_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "broker/surface/console/console_context.h"
#include "broker/surface/console/ws_session.h"

namespace termbridge::console {

class EventsBridge final : public WsHandler, public std::enable_shared_from_this<EventsBridge> {
 public:
  EventsBridge(ConsoleContext* context, std::weak_ptr<WsSession> ws);

  void OnOpen() override;
  void OnText(std::string_view text) override {}  // the page sends nothing here
  void OnBinary(std::string_view data) override {}
  void OnClosed() override;

 private:
  void StreamEnded(std::string_view stream, const grpc::Status& status, std::string_view detail);

  ConsoleContext* const context_;
  const std::weak_ptr<WsSession> ws_;
  std::shared_ptr<Stoppable> terminals_;
  std::shared_ptr<Stoppable> approvals_;
  absl::Mutex mu_;
  int ended_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_EVENTS_BRIDGE_H_
