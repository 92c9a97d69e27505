// Problems as absl::Status payloads: the kind's name and the details travel
// as one JSON object under kProblemTypeUrl; the message is the Status's.
#include "broker/core/problem.h"

#include <utility>

#include "absl/strings/cord.h"

namespace termbridge::core {
namespace {

struct Row {
  Problem kind;
  std::string_view name;
  absl::StatusCode code;
};

constexpr Row kRows[] = {
    {Problem::kInvalidRequest, "invalid_request", absl::StatusCode::kInvalidArgument},
    {Problem::kLimitReached, "limit_reached", absl::StatusCode::kResourceExhausted},
    {Problem::kUnknownId, "unknown_id", absl::StatusCode::kNotFound},
    {Problem::kEnded, "ended", absl::StatusCode::kNotFound},
    {Problem::kDeniedByPolicy, "denied_by_policy", absl::StatusCode::kPermissionDenied},
    {Problem::kDeclined, "declined", absl::StatusCode::kFailedPrecondition},
    {Problem::kConflict, "conflict", absl::StatusCode::kAborted},
    {Problem::kTimedOut, "timed_out", absl::StatusCode::kDeadlineExceeded},
    {Problem::kNoViewer, "no_viewer", absl::StatusCode::kUnavailable},
    {Problem::kTerminalFailed, "terminal_failed", absl::StatusCode::kUnavailable},
    {Problem::kAuditUnavailable, "audit_unavailable", absl::StatusCode::kInternal},
    {Problem::kInternal, "internal", absl::StatusCode::kInternal},
};

const Row& RowOf(Problem problem) {
  for (const Row& row : kRows) {
    if (row.kind == problem) return row;
  }
  return kRows[sizeof kRows / sizeof kRows[0] - 1];
}

}  // namespace

std::string_view ProblemName(Problem problem) { return RowOf(problem).name; }

absl::Status Fail(Problem problem, std::string message, nlohmann::json details) {
  const Row& row = RowOf(problem);
  absl::Status status(row.code, message);
  nlohmann::json payload = {
      {"kind", std::string(row.name)},
      {"details", details.is_object() ? std::move(details) : nlohmann::json::object()}};
  // Details may quote an agent's bytes cut anywhere: invalid UTF-8 is
  // replaced, never thrown on.
  status.SetPayload(
      std::string(kProblemTypeUrl),
      absl::Cord(payload.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  return status;
}

std::optional<ProblemInfo> ProblemOf(const absl::Status& status) {
  auto cord = status.GetPayload(std::string(kProblemTypeUrl));
  if (!cord) return std::nullopt;
  nlohmann::json payload = nlohmann::json::parse(std::string(*cord), nullptr, false);
  if (!payload.is_object() || !payload["kind"].is_string()) return std::nullopt;
  for (const Row& row : kRows) {
    if (row.name == payload["kind"].get<std::string>()) {
      ProblemInfo info{row.kind};
      if (payload["details"].is_object()) info.details = payload["details"];
      return info;
    }
  }
  return std::nullopt;
}

}  // namespace termbridge::core
