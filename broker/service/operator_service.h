// OperatorService serves termbridge.v1.TerminalOperator: what a person at the
// host may do that an agent may not (see every agent's terminals, close any
// of them). The broker serves it only on the operator unix socket, whose file
// mode (0600, in a 0700 state dir) is the operator's credential; a caller that
// presents the agent token is refused, so a leaked agent token that somehow
// reaches the socket still cannot act as an operator.
#ifndef TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_
#define TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_

#include <string>

#include "broker/service/terminal_registry.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::broker {

class OperatorService final : public v1::TerminalOperator::Service {
 public:
  OperatorService(std::string agent_token, TerminalRegistry* registry,
                  audit::AuditSink* audit = nullptr);

  grpc::Status ListAll(grpc::ServerContext* context, const v1::ListRequest* request,
                       v1::ListResponse* response) override;
  grpc::Status CloseTerminal(grpc::ServerContext* context, const v1::CloseTerminalRequest* request,
                             v1::CloseTerminalResponse* response) override;

 private:
  // PERMISSION_DENIED when the caller presents the agent token.
  grpc::Status RefuseAgentCredentials(const grpc::ServerContext& context) const;

  const std::string agent_token_;
  TerminalRegistry* const registry_;
  audit::AuditSink* const audit_;
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_
