// What went wrong in the broker's domain, in its own words. The core (this
// folder) returns absl::Status; when the cause matters to a caller, the
// Status carries a Problem payload: its kind and machine-readable details
// (the field, the limit, the phase...). broker/service turns a Problem into
// the contract's PM_TERM code at the edge (broker/service/errors.h, and the
// table in docs/ARCHITECTURE.md, "Errors"); the core never names those codes.
#ifndef TERMBRIDGE_BROKER_CORE_PROBLEM_H_
#define TERMBRIDGE_BROKER_CORE_PROBLEM_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace termbridge::core {

enum class Problem {
  kInvalidRequest,    // the request is unfit as sent; details.field names what
  kLimitReached,      // a configured bound is reached; details.limit names it
  kUnknownId,         // no such terminal, session or request for this caller
  kEnded,             // it existed, and has ended (a terminal exited, a request went)
  kDeniedByPolicy,    // the host policy denies the command
  kDeclined,          // a person declined, or the terminal is not the agent's to use now
  kConflict,          // the terminal changed under the request: nothing was sent
  kTimedOut,          // a wait ended: for a decision, or for a program to read its input
  kNoViewer,          // no person watches the terminal, and none could be shown it
  kTerminalFailed,    // the terminal could not be written to
  kAuditUnavailable,  // the audit log cannot be written: nothing is done unaudited
  kInternal,          // the broker could not do it (a spawn, a file); details say why
};

std::string_view ProblemName(Problem problem);  // "invalid_request", ...

struct ProblemInfo {
  Problem kind = Problem::kInternal;
  nlohmann::json details = nlohmann::json::object();
};

// A Status of `problem`'s canonical code with `message`, carrying the kind
// and `details` as its payload.
absl::Status Fail(Problem problem, std::string message,
                  nlohmann::json details = nlohmann::json::object());

// The Problem a Status carries, if any (requires nothing of the Status).
std::optional<ProblemInfo> ProblemOf(const absl::Status& status);

// The payload type URL used with absl::Status::SetPayload.
inline constexpr std::string_view kProblemTypeUrl = "type.googleapis.com/termbridge.core.Problem";

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_PROBLEM_H_
