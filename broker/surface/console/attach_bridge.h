// AttachBridge joins one browser tab's WebSocket (/ws/attach) to one
// operator Attach stream on the broker, as viewer "console". Output frames
// go to the page (binary, with their offsets); input, resize and signals go
// back to the PTY. Reading the gRPC stream is paced by a FlowWindow: while
// more than 1 MiB the page has not acknowledged is in flight, the bridge
// reads nothing, and the broker turns the backlog into a gap for this
// attachment only. The gRPC reactor holds itself alive until OnDone; the
// WebSocket holds it through its handler, and it sees the WebSocket only
// weakly, so neither keeps the other alive.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_ATTACH_BRIDGE_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_ATTACH_BRIDGE_H_

#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "broker/surface/console/console_context.h"
#include "broker/surface/console/flow_window.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/ws_session.h"

namespace termbridge::console {

class AttachBridge final
    : public WsHandler,
      public Stoppable,
      public grpc::ClientBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>,
      public std::enable_shared_from_this<AttachBridge> {
 public:
  static constexpr size_t kInputChunkBytes = 4096;  // well under the broker's max_input_bytes
  static constexpr size_t kMaxQueuedFrames = 1024;

  AttachBridge(ConsoleContext* context, std::weak_ptr<WsSession> ws, AttachTarget target);

  // WsHandler.
  void OnOpen() override;
  void OnText(std::string_view text) override;
  void OnBinary(std::string_view data) override;
  void OnClosed() override;
  // Stoppable: cancels the call.
  void Shutdown() override;

  // grpc::ClientBidiReactor.
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone(const grpc::Status& status) override;

 private:
  void QueueWrite(v1::AttachClientFrame frame);
  void SendToPage(std::string text);
  void Cancel();

  ConsoleContext* const context_;
  const std::weak_ptr<WsSession> ws_;
  const AttachTarget target_;
  grpc::ClientContext client_context_;
  v1::AttachServerFrame in_;            // touched only by the read in flight
  std::shared_ptr<AttachBridge> self_;  // set from OnOpen until OnDone
  uint64_t live_id_ = 0;

  absl::Mutex mu_;
  FlowWindow flow_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::AttachClientFrame> writes_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // Holds keep OnDone from running while another thread may still start an
  // operation: one while writes may be queued, one while reading is paused.
  bool write_hold_ ABSL_GUARDED_BY(mu_) = false;
  bool pause_hold_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_ATTACH_BRIDGE_H_
