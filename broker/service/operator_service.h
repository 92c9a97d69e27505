// OperatorService serves termbridge.v1.TerminalOperator: what a person at the
// host may do that an agent may not (see every agent's terminals, watch and
// type into them, close any of them, decide approvals, read and check the
// policy). The broker serves it only on the operator unix socket, whose file
// mode (0600, in a 0700 state dir) is the operator's credential; a caller that
// presents the agent token is refused, so a leaked agent token that somehow
// reaches the socket still cannot act as an operator.
#ifndef TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_
#define TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_

#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "broker/core/terminal_registry.h"
#include "broker/service/broker_service.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::broker {

using OperatorServiceBase =
    v1::TerminalOperator::WithCallbackMethod_Attach<v1::TerminalOperator::Service>;

class OperatorService final : public OperatorServiceBase {
 public:
  // `options` supplies the audit sink, the policy, the approval queue, the
  // input limit and the agent directory, whose credentials this service
  // refuses. `agents_service` (may be null) is where revocation ends an
  // agent's open calls.
  OperatorService(ServiceOptions options, core::TerminalRegistry* registry,
                  BrokerService* agents_service = nullptr);

  grpc::Status ListAll(grpc::ServerContext* context, const v1::ListRequest* request,
                       v1::ListResponse* response) override;
  grpc::Status CloseTerminal(grpc::ServerContext* context, const v1::CloseTerminalRequest* request,
                             v1::CloseTerminalResponse* response) override;
  grpc::Status SetLock(grpc::ServerContext* context, const v1::SetLockRequest* request,
                       v1::SetLockResponse* response) override;
  grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* Attach(
      grpc::CallbackServerContext* context) override;
  grpc::Status WatchTerminals(grpc::ServerContext* context,
                              const v1::WatchTerminalsRequest* request,
                              grpc::ServerWriter<v1::TerminalEvent>* writer) override;
  grpc::Status ListApprovals(grpc::ServerContext* context, const v1::ListApprovalsRequest* request,
                             v1::ListApprovalsResponse* response) override;
  grpc::Status WatchApprovals(grpc::ServerContext* context, const v1::ListApprovalsRequest* request,
                              grpc::ServerWriter<v1::ApprovalEvent>* writer) override;
  grpc::Status DecideApproval(grpc::ServerContext* context,
                              const v1::DecideApprovalRequest* request,
                              v1::DecideApprovalResponse* response) override;
  grpc::Status GetPolicy(grpc::ServerContext* context, const v1::GetPolicyRequest* request,
                         v1::GetPolicyResponse* response) override;
  grpc::Status CheckPolicy(grpc::ServerContext* context, const v1::CheckPolicyRequest* request,
                           v1::CheckPolicyResponse* response) override;
  grpc::Status AddAgent(grpc::ServerContext* context, const v1::AddAgentRequest* request,
                        v1::AddAgentResponse* response) override;
  grpc::Status ListAgents(grpc::ServerContext* context, const v1::ListAgentsRequest* request,
                          v1::ListAgentsResponse* response) override;
  grpc::Status RevokeAgent(grpc::ServerContext* context, const v1::RevokeAgentRequest* request,
                           v1::RevokeAgentResponse* response) override;
  // Recordings (operator_recordings.cc).
  grpc::Status ListRecordings(grpc::ServerContext* context,
                              const v1::ListRecordingsRequest* request,
                              v1::ListRecordingsResponse* response) override;
  grpc::Status ExportRecording(grpc::ServerContext* context,
                               const v1::ExportRecordingRequest* request,
                               grpc::ServerWriter<v1::RecordingChunk>* writer) override;
  // What GetBrokerInfo answers once the broker serves (UNAVAILABLE before).
  grpc::Status GetBrokerInfo(grpc::ServerContext* context, const v1::BrokerInfoRequest* request,
                             v1::BrokerInfo* response) override;
  void SetBrokerInfo(v1::BrokerInfo info);
  // Grants in force, with their time limits (operator_grants.cc).
  grpc::Status ListGrants(grpc::ServerContext* context, const v1::ListGrantsRequest* request,
                          v1::ListGrantsResponse* response) override;
  // A person's own terminals: open, rename, hand over (operator_terminals.cc).
  grpc::Status OpenTerminal(grpc::ServerContext* context, const v1::OpenTerminalRequest* request,
                            v1::OpenTerminalResponse* response) override;
  grpc::Status RenameTerminal(grpc::ServerContext* context,
                              const v1::RenameTerminalRequest* request,
                              v1::TerminalChangeResponse* response) override;
  grpc::Status HandOverTerminal(grpc::ServerContext* context,
                                const v1::HandOverTerminalRequest* request,
                                v1::TerminalChangeResponse* response) override;

 private:
  // PERMISSION_DENIED when the caller presents any agent's credentials.
  absl::Status RefuseAgentCredentials(const grpc::ServerContextBase& context) const;

  const ServiceOptions options_;
  core::TerminalRegistry* const registry_;
  BrokerService* const agents_service_;
  absl::Mutex info_mu_;
  std::optional<v1::BrokerInfo> info_ ABSL_GUARDED_BY(info_mu_);
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_OPERATOR_SERVICE_H_
