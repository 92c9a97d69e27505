// Operator RPCs over the unix socket.
#include "broker/service/operator_service.h"

#include <openssl/crypto.h>

#include "broker/service/broker_service.h"
#include "broker/service/wire.h"
#include "spdlog/spdlog.h"

namespace termbridge::broker {

OperatorService::OperatorService(std::string agent_token, TerminalRegistry* registry,
                                 audit::AuditSink* audit)
    : agent_token_(std::move(agent_token)), registry_(registry), audit_(audit) {}

grpc::Status OperatorService::RefuseAgentCredentials(const grpc::ServerContext& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return grpc::Status::OK;
  std::string value(it->second.data(), it->second.size());
  const std::string agent = "Bearer " + agent_token_;
  if (value.size() == agent.size() &&
      CRYPTO_memcmp(value.data(), agent.data(), agent.size()) == 0) {
    spdlog::warn("event=operator_refused reason=agent_credentials peer={}", context.peer());
    Audit(audit_, audit::kAuthFailed,
          {{"surface", "operator_socket"}, {"role", "operator"}, {"reason", "agent_credentials"}})
        .IgnoreError();
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        "agent credentials cannot be used for operator RPCs");
  }
  return grpc::Status::OK;
}

grpc::Status OperatorService::ListAll(grpc::ServerContext* context, const v1::ListRequest* request,
                                      v1::ListResponse* response) {
  if (grpc::Status refused = RefuseAgentCredentials(*context); !refused.ok()) return refused;
  for (const SessionRecord& record : registry_->List(request->agent_id())) {
    FillSessionInfo(record, response->add_sessions());
  }
  return grpc::Status::OK;
}

grpc::Status OperatorService::CloseTerminal(grpc::ServerContext* context,
                                            const v1::CloseTerminalRequest* request,
                                            v1::CloseTerminalResponse* response) {
  if (grpc::Status refused = RefuseAgentCredentials(*context); !refused.ok()) return refused;
  absl::StatusOr<SessionRecord> record = registry_->FindTerminal(request->terminal_id(), "");
  if (!record.ok()) return ToGrpcStatus(*context, record.status());
  absl::Status closed = registry_->CloseTerminal(request->terminal_id(), "", "operator_close");
  if (!closed.ok()) return ToGrpcStatus(*context, closed);
  spdlog::info("event=operator_closed terminal_id={}", request->terminal_id());
  FillExit(record->terminal->exit_state(), response->mutable_exit());
  return grpc::Status::OK;
}

}  // namespace termbridge::broker
