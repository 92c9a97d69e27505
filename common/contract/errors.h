// The PM_TERM error taxonomy (docs/CONTRACT.md, 'Errors') and its deterministic
// fallbacks. Inside the code errors travel as absl::Status; a PM_TERM code and
// its details ride along as a Status payload, so the edges (gRPC, MCP) can
// turn any Status into the canonical error payload without guessing from text.
#ifndef TERMBRIDGE_COMMON_CONTRACT_ERRORS_H_
#define TERMBRIDGE_COMMON_CONTRACT_ERRORS_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace termbridge::contract {

enum class ErrorCode {
  kInvalidAction,
  kInvalidPayload,
  kInvalidMode,
  kDeclined,
  kTimeout,
  kDisconnected,
  kGuiUnavailable,
  kBlockedDestructive,
  kNotFound,
  kInternal,
};

// One row of the taxonomy table (docs/CONTRACT.md, 'Errors') plus its fallback.
struct ErrorSpec {
  std::string_view name;      // "PM_TERM_TIMEOUT"
  std::string_view category;  // "runtime_timeout"
  bool retriable;
  std::string_view strategy;     // fallback.strategy, e.g. "suggest_retry_headless_or_interactive"
  std::string_view next_action;  // fallback.next_action: "execute", "list", "none", ...
  std::string_view recommended_mode;  // fallback.recommended_mode: "headless", "interactive" or ""
  std::string_view user_message;      // fallback.user_message
  absl::StatusCode status_code;       // the canonical absl code this maps to
};

const ErrorSpec& Spec(ErrorCode code);
std::string_view CodeName(ErrorCode code);
std::optional<ErrorCode> ParseCode(std::string_view name);

// A PM_TERM failure: the code, a human message and machine-readable details.
struct PmTermError {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  nlohmann::json details = nlohmann::json::object();
};

// Builds an absl::Status carrying `error` as a payload.
absl::Status MakeError(ErrorCode code, std::string message,
                       nlohmann::json details = nlohmann::json::object());
absl::Status ToStatus(const PmTermError& error);
// Reads the PM_TERM payload back. A Status without one is classified by its
// canonical code (DEADLINE_EXCEEDED -> TIMEOUT, NOT_FOUND -> NOT_FOUND,
// INVALID_ARGUMENT -> INVALID_PAYLOAD, UNAVAILABLE -> DISCONNECTED, everything
// else -> INTERNAL with a sanitized message). Requires !status.ok().
PmTermError FromStatus(const absl::Status& status);

// The payload type URL used with absl::Status::SetPayload.
inline constexpr std::string_view kPayloadTypeUrl = "type.googleapis.com/termbridge.v1.PmTermError";

}  // namespace termbridge::contract

#endif  // TERMBRIDGE_COMMON_CONTRACT_ERRORS_H_
