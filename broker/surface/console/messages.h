// The console's wire format between the broker and the page. Operator gRPC
// messages become JSON objects the page renders; terminal output travels as
// binary WebSocket frames; what the page sends back (acks, resize, signals,
// approval decisions) is parsed and validated here before it becomes a
// gRPC frame or request. No I/O: everything is unit tested.
//
// WebSocket /ws/attach, server to page:
//   binary: 8-byte big-endian output offset, then the output bytes
//   text:   {"type":"gap","from":F,"to":T} | {"type":"notice","text":...}
//           {"type":"exited","exit":{...}} | {"type":"end","status":...}
//           {"type":"error","message":...} (a refused page message)
// page to server:
//   binary: input bytes for the PTY
//   text:   {"type":"ack","bytes":N} | {"type":"resize","cols":C,"rows":R}
//           {"type":"signal","signal":"SIGINT"}
// WebSocket /ws/events, server to page (text only):
//   {"type":"terminal","kind":"opened"|"closed"|"snapshot_done"|...,"terminal":{...}}
//   (WatchTerminals' kind as it is; the page takes any other kind with a
//   terminal as news about it)
//   {"type":"approval","kind":"requested"|"decided"|"snapshot_done","approval":{...}}
//   {"type":"end","stream":"terminals"|"approvals","status":...}
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_MESSAGES_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "grpcpp/support/status.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.pb.h"

namespace termbridge::console {

nlohmann::json ExitJson(const v1::ExitInfo& exit);
nlohmann::json ApprovalStateJson(const v1::ApprovalState& state);
nlohmann::json SessionInfoJson(const v1::SessionInfo& info);
nlohmann::json ApprovalJson(const v1::Approval& approval);
nlohmann::json TerminalEventJson(const v1::TerminalEvent& event);
nlohmann::json ApprovalEventJson(const v1::ApprovalEvent& event);

// The JSON text for a non-output Attach frame (gap, notice, exited), or ""
// for an output frame (which travels as EncodeOutputFrame instead).
std::string AttachFrameText(const v1::AttachServerFrame& frame);
// A binary frame: the offset as 8 big-endian bytes, then the data.
std::string EncodeOutputFrame(uint64_t offset, std::string_view data);

// How a gRPC call ended, for the page: {"status":"NOT_FOUND","message":...,
// "pm_code":"PM_TERM_..."}. `error_detail` is the serialized ErrorDetail
// from trailing metadata, or "".
nlohmann::json StatusJson(const grpc::Status& status, std::string_view error_detail);
// The HTTP status for a failed operator call (404, 400, 409, 501, 503, ...).
int HttpStatusFor(grpc::StatusCode code);

// A text message from the page on /ws/attach.
struct PageMessage {
  enum class Kind { kAck, kResize, kSignal };
  Kind kind = Kind::kAck;
  uint64_t bytes = 0;  // kAck
  uint32_t cols = 0;   // kResize
  uint32_t rows = 0;
  int signal = 0;  // kSignal: SIGINT, SIGTERM or SIGQUIT
};
absl::StatusOr<PageMessage> ParsePageMessage(std::string_view text);

// The body of POST /api/approvals/decide: {"approval_id","decision","note",
// "rules_toml","expires_in_seconds"}. Decision is one of once, terminal,
// always, deny; rules_toml (a narrowed rule) only with always;
// expires_in_seconds (a time box, at most 30 days) only with terminal or
// always; surface is "console".
absl::StatusOr<v1::DecideApprovalRequest> ParseDecision(std::string_view body);
// The body of POST /api/terminals/lock: {"terminal_id","mode"}; mode is
// shared, user_only or agent_only; surface is "console".
absl::StatusOr<v1::SetLockRequest> ParseSetLock(std::string_view body);
// The body of POST /api/terminals/open: {"name","cwd"} (both optional);
// surface is "console", `by` left to the broker (the operator's user).
absl::StatusOr<v1::OpenTerminalRequest> ParseOpenTerminal(std::string_view body);
// The body of POST /api/terminals/rename: {"terminal_id","name"} (both
// required); surface is "console".
absl::StatusOr<v1::RenameTerminalRequest> ParseRenameTerminal(std::string_view body);
// The body of POST /api/terminals/hand: {"terminal_id","agent_id"}; an empty
// or missing agent_id takes the terminal back; surface is "console".
absl::StatusOr<v1::HandOverTerminalRequest> ParseHandOver(std::string_view body);
// The body of POST /api/terminals/close: {"terminal_id"}.
absl::StatusOr<v1::CloseTerminalRequest> ParseCloseTerminal(std::string_view body);

// Attach query parameters: /ws/attach?terminal=t_1&offset=N (or no offset:
// replay what the ring still holds).
struct AttachTarget {
  std::string terminal_id;
  bool from_start = true;
  uint64_t offset = 0;
};
absl::StatusOr<AttachTarget> ParseAttachTarget(std::string_view query);

// Splits a request target into path and query ("/a?b=c" -> "/a", "b=c").
std::pair<std::string_view, std::string_view> SplitTarget(std::string_view target);
// The percent-decoded value of `name` in a query string, or nullopt.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name);

// Serializes JSON for the wire; invalid UTF-8 becomes U+FFFD, never an exception.
std::string Dump(const nlohmann::json& json);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_MESSAGES_H_
