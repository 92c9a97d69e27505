// OperatorService's part for a person's own terminals: OpenTerminal,
// RenameTerminal and HandOverTerminal (docs/operating.md, "Your own
// terminals"). Each change is audited before it is answered.
#include <string>

#include "absl/strings/str_cat.h"
#include "broker/auth/agent_directory.h"
#include "broker/core/audit_guard.h"
#include "broker/service/errors.h"
#include "broker/service/operator_common.h"
#include "broker/service/operator_service.h"
#include "broker/service/wire.h"

namespace termbridge::broker {

using contract::ErrorCode;

grpc::Status OperatorService::OpenTerminal(grpc::ServerContext* context,
                                           const v1::OpenTerminalRequest* request,
                                           v1::OpenTerminalResponse* response) {
  TB_OPERATOR_ONLY(context);
  std::string by = OperatorName(request->by());
  absl::StatusOr<core::SessionRecord> opened =
      registry_->OpenForPerson(by, request->name(), request->cwd());
  if (!opened.ok()) return ToGrpcStatus(*context, opened.status());
  opened->terminal->PostNotice(absl::StrCat("terminal opened by ", by, " via ",
                                            SurfaceName(request->surface()),
                                            ": no agent reaches it until it is handed over"));
  FillSessionInfo(*opened, response->mutable_terminal());
  return grpc::Status::OK;
}

grpc::Status OperatorService::RenameTerminal(grpc::ServerContext* context,
                                             const v1::RenameTerminalRequest* request,
                                             v1::TerminalChangeResponse* response) {
  TB_OPERATOR_ONLY(context);
  std::string by = OperatorName(request->by());
  absl::StatusOr<core::SessionRecord> renamed =
      registry_->Rename(request->terminal_id(), request->name());
  if (!renamed.ok()) return ToGrpcStatus(*context, renamed.status());
  core::AuditAfterTheFact(options_.audit, audit::kTerminalRenamed,
                          {{"terminal_id", request->terminal_id()},
                           {"name", renamed->terminal_name},
                           {"by", by},
                           {"surface", SurfaceName(request->surface())}});
  FillSessionInfo(*renamed, response->mutable_terminal());
  return grpc::Status::OK;
}

grpc::Status OperatorService::HandOverTerminal(grpc::ServerContext* context,
                                               const v1::HandOverTerminalRequest* request,
                                               v1::TerminalChangeResponse* response) {
  TB_OPERATOR_ONLY(context);
  std::string by = OperatorName(request->by());
  std::string surface = SurfaceName(request->surface());
  const std::string& agent = request->agent_id();
  if (!agent.empty() && !auth::AgentDirectory::ValidName(agent)) {
    return ToGrpcStatus(*context,
                        MakeError(ErrorCode::kInvalidPayload,
                                  "agent names are 1 to 64 of A-Z a-z 0-9 . _ - (termbridge "
                                  "agents list)",
                                  {{"field", "agent_id"}}));
  }
  // Refusals first (the registry checks again): the audit records only
  // hand-overs that happen.
  absl::StatusOr<core::SessionRecord> found = registry_->FindTerminal(request->terminal_id(), "");
  if (!found.ok()) return ToGrpcStatus(*context, found.status());
  if (found->person.empty()) {
    return ToGrpcStatus(
        *context, MakeError(ErrorCode::kInvalidPayload,
                            "only a terminal a person opened is handed over; this one belongs "
                            "to agent " +
                                found->agent_id,
                            {{"field", "terminal_id"}, {"terminal_id", request->terminal_id()}}));
  }
  // Audited before it takes effect: an agent never gains a terminal the
  // audit does not show it was given.
  if (absl::Status s = core::Audit(options_.audit, audit::kTerminalHandedOver,
                                   {{"terminal_id", request->terminal_id()},
                                    {"agent_id", agent},
                                    {"by", by},
                                    {"surface", surface}});
      !s.ok()) {
    return ToGrpcStatus(*context, s);
  }
  absl::StatusOr<core::SessionRecord> handed = registry_->HandOver(request->terminal_id(), agent);
  if (!handed.ok()) return ToGrpcStatus(*context, handed.status());
  // Requests waiting there and "this terminal" grants were the previous
  // holder's: they end with the hand-over.
  if (options_.approvals != nullptr) options_.approvals->CancelTerminal(request->terminal_id());
  handed->terminal->PostNotice(
      agent.empty()
          ? absl::StrCat("taken back by ", by, " via ", surface, ": no agent reaches this terminal")
          : absl::StrCat("handed to agent ", agent, " by ", by, " via ", surface,
                         ": its commands here pass the policy and the lock"));
  FillSessionInfo(*handed, response->mutable_terminal());
  return grpc::Status::OK;
}

}  // namespace termbridge::broker
