// The edge between the core's problems and the contract's errors: every
// Status the broker answers with becomes a PM_TERM error here, once. A
// core::Problem maps by the table below (docs/ARCHITECTURE.md, "Errors");
// a Status that already carries a PM_TERM payload keeps it; anything else is
// classified by its canonical code (contract::FromStatus).
//
//   invalid_request, limit_reached, conflict  PM_TERM_INVALID_PAYLOAD
//   unknown_id, ended                         PM_TERM_NOT_FOUND
//   denied_by_policy                          PM_TERM_BLOCKED_DESTRUCTIVE
//   declined                                  PM_TERM_DECLINED
//   timed_out                                 PM_TERM_TIMEOUT
//   no_viewer                                 PM_TERM_GUI_UNAVAILABLE (details.reason no_viewer)
//   terminal_failed                           PM_TERM_DISCONNECTED
//   audit_unavailable, internal               PM_TERM_INTERNAL
#ifndef TERMBRIDGE_BROKER_SERVICE_ERRORS_H_
#define TERMBRIDGE_BROKER_SERVICE_ERRORS_H_

#include <string>

#include "absl/status/status.h"
#include "common/contract/errors.h"

namespace termbridge::broker {

// The PM_TERM error for `status`. Requires !status.ok().
contract::PmTermError ContractError(const absl::Status& status);

// Its code's name ("PM_TERM_DECLINED"), for audit records.
std::string ContractCodeName(const absl::Status& status);

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_ERRORS_H_
