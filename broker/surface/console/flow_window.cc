// Byte accounting for console flow control (see flow_window.h).
#include "broker/surface/console/flow_window.h"

#include "absl/strings/str_cat.h"

namespace termbridge::console {

bool FlowWindow::AfterChunk(uint64_t bytes) {
  sent_ += bytes;
  paused_ = !Open();
  return !paused_;
}

bool FlowWindow::OnAck(uint64_t bytes, absl::Status* error) {
  if (bytes > unacked()) {
    *error = absl::InvalidArgumentError(
        absl::StrCat("ack of ", bytes, " bytes exceeds the ", unacked(), " unacked"));
    bytes = unacked();
  }
  acked_ += bytes;
  if (!paused_ || !Open()) return false;
  paused_ = false;
  return true;
}

}  // namespace termbridge::console
