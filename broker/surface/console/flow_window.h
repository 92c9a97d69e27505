// Flow control between one terminal's Attach stream and the browser tab that
// renders it. The console forwards output chunks to the browser and counts
// them as unacked until the page reports, from xterm.js's write callback,
// that it has rendered them. While more than the window is unacked the
// console stops reading the gRPC stream; the broker's attachment then falls
// behind in the terminal's ring and later sends a gap, so a fast producer
// neither floods the browser nor stalls the PTY. This class is only the
// accounting (no locks, no I/O): the caller serializes calls.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_FLOW_WINDOW_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_FLOW_WINDOW_H_

#include <cstdint>

#include "absl/status/status.h"

namespace termbridge::console {

class FlowWindow {
 public:
  static constexpr uint64_t kDefaultLimitBytes = 1 << 20;  // 1 MiB

  explicit FlowWindow(uint64_t limit_bytes = kDefaultLimitBytes) : limit_(limit_bytes) {}

  // A chunk of `bytes` output bytes went to the browser (0 for frames that
  // carry no output: gaps, notices). Returns true when the caller should
  // read the next frame now, false when reading pauses until an ack.
  bool AfterChunk(uint64_t bytes);

  // The browser rendered `bytes` more. Returns true exactly when this ack
  // ends a pause, that is when the caller must restart reading. An ack for
  // more than is unacked is clamped and reported in `*error`.
  bool OnAck(uint64_t bytes, absl::Status* error);

  uint64_t unacked() const { return sent_ - acked_; }
  uint64_t sent() const { return sent_; }
  bool paused() const { return paused_; }
  uint64_t limit() const { return limit_; }

 private:
  bool Open() const { return unacked() < limit_; }

  const uint64_t limit_;
  uint64_t sent_ = 0;
  uint64_t acked_ = 0;
  bool paused_ = false;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_FLOW_WINDOW_H_
