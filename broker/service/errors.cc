// Core problems to PM_TERM errors (the table is in errors.h).
#include "broker/service/errors.h"

#include <optional>

#include "broker/core/problem.h"
#include "common/contract/gui_unavailable.h"

namespace termbridge::broker {
namespace {

using contract::ErrorCode;
using core::Problem;

ErrorCode CodeFor(Problem problem) {
  switch (problem) {
    case Problem::kInvalidRequest:
    case Problem::kLimitReached:
    case Problem::kConflict:
      return ErrorCode::kInvalidPayload;
    case Problem::kUnknownId:
    case Problem::kEnded:
      return ErrorCode::kNotFound;
    case Problem::kDeniedByPolicy:
      return ErrorCode::kBlockedDestructive;
    case Problem::kDeclined:
      return ErrorCode::kDeclined;
    case Problem::kTimedOut:
      return ErrorCode::kTimeout;
    case Problem::kNoViewer:
      return ErrorCode::kGuiUnavailable;
    case Problem::kTerminalFailed:
      return ErrorCode::kDisconnected;
    case Problem::kAuditUnavailable:
    case Problem::kInternal:
      return ErrorCode::kInternal;
  }
  return ErrorCode::kInternal;
}

}  // namespace

contract::PmTermError ContractError(const absl::Status& status) {
  std::optional<core::ProblemInfo> problem = core::ProblemOf(status);
  if (!problem) return contract::FromStatus(status);
  contract::PmTermError error;
  error.code = CodeFor(problem->kind);
  error.message = std::string(status.message());
  error.details = std::move(problem->details);
  if (problem->kind == Problem::kNoViewer && !error.details.contains("reason")) {
    error.details["reason"] = contract::gui_unavailable::kNoViewer;
  }
  return error;
}

std::string ContractCodeName(const absl::Status& status) {
  return std::string(contract::CodeName(ContractError(status).code));
}

}  // namespace termbridge::broker
