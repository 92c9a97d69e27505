// The broker acts only on what it could write to the audit log: Audit turns
// a failed write into the one error every caller sees for it. What already
// happened is recorded with AuditAfterTheFact, which cannot refuse anything:
// the log keeps the record until it can be written
// (docs/security.md#the-audit-log-is-evidence).
#ifndef TERMBRIDGE_BROKER_CORE_AUDIT_GUARD_H_
#define TERMBRIDGE_BROKER_CORE_AUDIT_GUARD_H_

#include <string_view>

#include "absl/status/status.h"
#include "broker/audit/audit_log.h"
#include "nlohmann/json.hpp"

namespace termbridge::core {

// Records one audit event; OK when there is no sink. A failed write is
// PM_TERM_INTERNAL "the audit log cannot be written; the broker refuses to
// act unaudited", with the reason in details.
absl::Status Audit(audit::AuditSink* sink, std::string_view event, nlohmann::json fields);

// Records an event that already happened (a refusal, an exit, a change that
// was made); nothing when there is no sink. A failed write is logged; the
// sink keeps the record and writes it before the next one once it can.
void AuditAfterTheFact(audit::AuditSink* sink, std::string_view event, nlohmann::json fields);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_AUDIT_GUARD_H_
