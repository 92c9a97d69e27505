// The PM_TERM taxonomy table (docs/CONTRACT.md, 'Errors') with its fallback rows, and
// the conversion between PM_TERM errors and absl::Status. The code and details
// travel as a JSON payload under kPayloadTypeUrl; the message is the Status's.
#include "common/contract/errors.h"

#include <array>
#include <string>
#include <utility>

#include "absl/strings/cord.h"

namespace termbridge::contract {
namespace {

// The original design gave only the TIMEOUT fallback; the other fallback rows
// below are ours (docs/CONTRACT.md, 'Where the code differs from the original
// design'): next_action is the action to take next for an execute request
// ("none" when the request must change first), and recommended_mode is set
// only where the strategy names a mode
// (suggest_retry_headless_or_interactive, fallback_to_headless_if_allowed).
// ErrorResponse adapts next_action/recommended_mode to follow-up actions.
constexpr std::array<ErrorSpec, 10> kSpecs = {{
    {"PM_TERM_INVALID_ACTION", "validation", false, "reject_no_retry", "none", "",
     "The action is not recognized. Use one of execute, read_output, terminate or list.",
     absl::StatusCode::kInvalidArgument},
    {"PM_TERM_INVALID_PAYLOAD", "validation", false, "reject_no_retry", "none", "",
     "The request does not match the contract. Fix the field named in error.details and send it "
     "again.",
     absl::StatusCode::kInvalidArgument},
    {"PM_TERM_INVALID_MODE", "validation", false, "reject_no_retry", "none", "",
     "The requested mode is not supported here. Use one of the modes listed in error.details.",
     absl::StatusCode::kInvalidArgument},
    {"PM_TERM_DECLINED", "user_decision", false, "report_decline", "none", "",
     "The person at the terminal declined this command. It will not be retried automatically.",
     absl::StatusCode::kPermissionDenied},
    {"PM_TERM_TIMEOUT", "runtime_timeout", true, "suggest_retry_headless_or_interactive", "execute",
     "headless", "The interactive path timed out. You can retry now or run in headless mode.",
     absl::StatusCode::kDeadlineExceeded},
    {"PM_TERM_DISCONNECTED", "transport", true, "suggest_reconnect_retry", "execute", "",
     "The connection to the terminal host dropped. Reconnect and retry.",
     absl::StatusCode::kUnavailable},
    {"PM_TERM_GUI_UNAVAILABLE", "runtime_unavailable", true, "fallback_to_headless_if_allowed",
     "execute", "headless",
     "The visible host terminal is not available. Start the host broker, or run in headless mode "
     "if policy allows it.",
     absl::StatusCode::kUnavailable},
    {"PM_TERM_BLOCKED_DESTRUCTIVE", "authorization", false, "reject_with_safety_hint", "none", "",
     "The command was blocked by the safety policy. Change the command or ask an operator to "
     "change the policy.",
     absl::StatusCode::kPermissionDenied},
    {"PM_TERM_NOT_FOUND", "identity", false, "refresh_list_then_retry", "list", "",
     "The terminal or session was not found. List the current sessions and retry with a valid id.",
     absl::StatusCode::kNotFound},
    {"PM_TERM_INTERNAL", "internal", true, "deterministic_internal_fallback", "execute", "",
     "An internal error occurred. Retry once; if it persists, report the trace_id.",
     absl::StatusCode::kInternal},
}};

constexpr std::array<ErrorCode, 10> kCodes = {
    ErrorCode::kInvalidAction,  ErrorCode::kInvalidPayload,
    ErrorCode::kInvalidMode,    ErrorCode::kDeclined,
    ErrorCode::kTimeout,        ErrorCode::kDisconnected,
    ErrorCode::kGuiUnavailable, ErrorCode::kBlockedDestructive,
    ErrorCode::kNotFound,       ErrorCode::kInternal,
};

// The message PM_TERM_INTERNAL carries for a Status we could not classify:
// the original text may hold paths or library internals, so it is dropped.
constexpr char kSanitizedInternalMessage[] = "internal error";

}  // namespace

const ErrorSpec& Spec(ErrorCode code) {
  size_t index = static_cast<size_t>(code);
  if (index >= kSpecs.size()) index = static_cast<size_t>(ErrorCode::kInternal);
  return kSpecs[index];
}

std::string_view CodeName(ErrorCode code) { return Spec(code).name; }

std::optional<ErrorCode> ParseCode(std::string_view name) {
  for (ErrorCode code : kCodes) {
    if (Spec(code).name == name) return code;
  }
  return std::nullopt;
}

absl::Status MakeError(ErrorCode code, std::string message, nlohmann::json details) {
  PmTermError error;
  error.code = code;
  error.message = std::move(message);
  error.details = details.is_object() ? std::move(details) : nlohmann::json::object();
  return ToStatus(error);
}

absl::Status ToStatus(const PmTermError& error) {
  const ErrorSpec& spec = Spec(error.code);
  absl::Status status(spec.status_code, error.message);
  nlohmann::json payload = {
      {"code", std::string(spec.name)},
      {"details", error.details.is_object() ? error.details : nlohmann::json::object()}};
  // `replace` keeps invalid UTF-8 in details from throwing: it becomes U+FFFD.
  status.SetPayload(
      std::string(kPayloadTypeUrl),
      absl::Cord(payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return status;
}

PmTermError FromStatus(const absl::Status& status) {
  PmTermError error;
  if (status.ok()) {
    error.code = ErrorCode::kInternal;
    error.message = "FromStatus called with an OK status";
    return error;
  }
  if (auto cord = status.GetPayload(std::string(kPayloadTypeUrl)); cord) {
    nlohmann::json payload =
        nlohmann::json::parse(std::string(*cord), nullptr, /*allow_exceptions=*/false);
    if (payload.is_object() && payload.contains("code") && payload["code"].is_string()) {
      if (std::optional<ErrorCode> code = ParseCode(payload["code"].get<std::string>()); code) {
        error.code = *code;
        error.message = std::string(status.message());
        if (payload.contains("details") && payload["details"].is_object()) {
          error.details = payload["details"];
        }
        return error;
      }
    }
  }
  error.message = std::string(status.message());
  switch (status.code()) {
    case absl::StatusCode::kDeadlineExceeded:
      error.code = ErrorCode::kTimeout;
      break;
    case absl::StatusCode::kNotFound:
      error.code = ErrorCode::kNotFound;
      break;
    case absl::StatusCode::kInvalidArgument:
      error.code = ErrorCode::kInvalidPayload;
      break;
    case absl::StatusCode::kUnavailable:
      error.code = ErrorCode::kDisconnected;
      break;
    default:
      error.code = ErrorCode::kInternal;
      error.message = kSanitizedInternalMessage;
      // The canonical code name is safe to show and helps triage.
      error.details = {{"status_code", absl::StatusCodeToString(status.code())}};
      break;
  }
  return error;
}

}  // namespace termbridge::contract
