// Audit and AuditAfterTheFact: the broker's two ways to write an audit
// record, one that refuses the action when the record cannot be written and
// one for what already happened, whose record the log keeps until it can.
#include "broker/core/audit_guard.h"

#include <string>
#include <utility>

#include "broker/core/problem.h"
#include "common/contract/errors.h"
#include "spdlog/spdlog.h"

namespace termbridge::core {

absl::Status Audit(audit::AuditSink* sink, std::string_view event, nlohmann::json fields) {
  if (sink == nullptr) return absl::OkStatus();
  absl::Status status = sink->Append(event, std::move(fields)).status();
  if (!status.ok()) {
    spdlog::error("event=audit_failed audit_event={} status=\"{}\"", std::string(event),
                  status.ToString());
    return Fail(Problem::kAuditUnavailable,
                "the audit log cannot be written; the broker refuses to act "
                "unaudited",
                {{"reason", std::string(status.message())}});
  }
  return absl::OkStatus();
}

void AuditAfterTheFact(audit::AuditSink* sink, std::string_view event, nlohmann::json fields) {
  if (sink == nullptr) return;
  absl::Status status = sink->AppendAfterTheFact(event, std::move(fields));
  if (!status.ok()) {
    spdlog::error("event=audit_failed audit_event={} after_the_fact=true status=\"{}\"",
                  std::string(event), status.ToString());
  }
}

}  // namespace termbridge::core
