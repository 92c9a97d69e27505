// Conversions between the broker's domain types and the termbridge.v1 wire
// messages, shared by the unary handlers and the Attach reactor.
#ifndef TERMBRIDGE_BROKER_SERVICE_WIRE_H_
#define TERMBRIDGE_BROKER_SERVICE_WIRE_H_

#include <string_view>

#include "absl/status/status.h"
#include "broker/core/command_gate.h"
#include "broker/core/terminal_registry.h"
#include "broker/session/ring_buffer.h"
#include "broker/session/terminal.h"
#include "grpcpp/grpcpp.h"
#include "termbridge/v1/broker.pb.h"

namespace termbridge::broker {

// Converts a failed absl::Status to a grpc::Status and attaches the PM_TERM
// ErrorDetail to the call's trailing metadata.
grpc::Status ToGrpcStatus(grpc::ServerContextBase& context, const absl::Status& status);

void FillExit(const session::ExitState& state, v1::ExitInfo* out);
void FillSessionInfo(const core::SessionRecord& record, v1::SessionInfo* out);
void FillApproval(const core::GateState& state, v1::ApprovalState* out);
void FillApprovalEntry(const approval::Entry& entry, v1::Approval* out);

// A session's slice of its terminal's stream and its state. For a command in
// a persistent shell this comes from the shell's marks; otherwise the session
// is the terminal's whole output from start_offset, ending with its process.
struct SessionView {
  uint64_t begin = 0;  // first byte of the session's output
  uint64_t end = 0;    // one past the last byte readable now
  bool finished = false;
  // Not finished yet, but its end is in the stream: the tracker is about to say so.
  bool ending = false;
  v1::ExitInfo exit;
};
// Take the view before reading output: when it says finished, [begin, end) is complete.
SessionView ViewSession(const core::SessionRecord& record);

// Returns how many leading bytes of `bytes` can be decoded now without
// splitting a UTF-8 character or an escape sequence that more output would
// complete. Returns bytes.size() when `final` (no more output can come).
size_t CompletePrefix(std::string_view bytes, bool final);

// Fills `out` from a ring slice in the requested format; `final` says the
// producer has exited and the slice reaches the end of its output.
void FillOutput(session::OutputSlice slice, v1::OutputFormat format, bool final,
                uint64_t end_offset, v1::Output* out);

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_WIRE_H_
