// BrokerService is the gRPC face of the broker: it authenticates each call,
// turns requests into TerminalRegistry operations and converts absl::Status
// results into gRPC status plus a typed PM_TERM ErrorDetail in the trailing
// metadata ("termbridge-error-bin"). Unary calls may wait (bounded by
// max_wait_ms) for output or exit, so they run on the sync server's thread
// pool; Attach is a callback reactor with one write in flight.
#ifndef TERMBRIDGE_BROKER_SERVICE_BROKER_SERVICE_H_
#define TERMBRIDGE_BROKER_SERVICE_BROKER_SERVICE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/audit/audit_log.h"
#include "broker/auth/agent_directory.h"
#include "broker/core/audit_guard.h"
#include "broker/core/command_gate.h"
#include "broker/core/terminal_registry.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::broker {

struct ServiceOptions {
  // Who may call, and by which name (docs/security.md "Agent identity").
  // Without a directory (unit tests), agent_token is the one credential and
  // names the agent "agent".
  auth::AgentDirectory* agents = nullptr;
  std::string agent_token;
  std::string broker_instance_id;
  std::string version = "0.1.0";
  uint32_t max_wait_ms = 60000;
  uint32_t default_read_bytes = 64 << 10;
  uint32_t max_read_bytes = 1 << 20;
  uint32_t max_input_bytes = 64 << 10;
  // Every command request, start, input and authentication failure is recorded
  // here before it is acknowledged (may be null in unit tests).
  audit::AuditSink* audit = nullptr;
  // Policy and approvals. Required for Execute: without a gate it refuses
  // (PM_TERM_INTERNAL), it never runs a command unchecked.
  core::CommandGate* gate = nullptr;
  policy::PolicyFile* policy = nullptr;
  approval::ApprovalQueue* approvals = nullptr;
  std::vector<std::string> extra_capabilities;  // e.g. "surface.window", "surface.none"
};

// Metadata key of the serialized termbridge.v1.ErrorDetail on failed calls.
inline constexpr char kErrorDetailKey[] = "termbridge-error-bin";

using BrokerServiceBase =
    v1::TerminalBroker::WithCallbackMethod_Attach<v1::TerminalBroker::Service>;

class BrokerService final : public BrokerServiceBase {
 public:
  BrokerService(ServiceOptions options, core::TerminalRegistry* registry);

  grpc::Status Handshake(grpc::ServerContext* context, const v1::HandshakeRequest* request,
                         v1::HandshakeResponse* response) override;
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                       v1::ExecuteResponse* response) override;
  grpc::Status ReadOutput(grpc::ServerContext* context, const v1::ReadOutputRequest* request,
                          v1::ReadOutputResponse* response) override;
  grpc::Status Terminate(grpc::ServerContext* context, const v1::TerminateRequest* request,
                         v1::TerminateResponse* response) override;
  grpc::Status List(grpc::ServerContext* context, const v1::ListRequest* request,
                    v1::ListResponse* response) override;
  grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* Attach(
      grpc::CallbackServerContext* context) override;
  grpc::Status ProposeRule(grpc::ServerContext* context, const v1::ProposeRuleRequest* request,
                           v1::ProposeRuleResponse* response) override;
  grpc::Status GetAgentPolicy(grpc::ServerContext* context, const v1::AgentPolicyRequest* request,
                              v1::GetPolicyResponse* response) override;

  // Blocks until no call or stream is in flight, or `timeout` passes. Returns
  // true when idle. Drain uses it so shutdown need not wait for idle
  // connections, only for work.
  bool WaitIdle(absl::Duration timeout);

  // Ends every call and stream `agent` has in flight (its credentials were
  // revoked); returns how many.
  size_t EndCallsOf(const std::string& agent);

  // How many calls and streams `agent` has in flight.
  size_t OpenCallsOf(const std::string& agent) const;

  // Counts one call in flight for as long as it lives.
  class CallScope {
   public:
    explicit CallScope(BrokerService* service);
    ~CallScope();
    CallScope(const CallScope&) = delete;
    CallScope& operator=(const CallScope&) = delete;

    // Names the caller, so that revoking `agent` ends this call.
    void Bind(const std::string& agent, grpc::ServerContextBase* context);

   private:
    BrokerService* service_;
    std::string agent_;
    grpc::ServerContextBase* context_ = nullptr;
  };

 private:
  // The caller's agent name, from its credentials; a failure is logged and audited.
  absl::StatusOr<std::string> Authenticate(const grpc::ServerContextBase& context,
                                           absl::string_view method) const;
  absl::StatusOr<std::string> Identify(const grpc::ServerContextBase& context) const;
  // A request's agent_id may only repeat the caller's identity; another name
  // is refused and audited.
  absl::Status CheckClaim(const std::string& agent, const std::string& claimed,
                          const grpc::ServerContextBase& context, absl::string_view method) const;

  const ServiceOptions options_;
  core::TerminalRegistry* const registry_;
  absl::Mutex in_flight_mu_;
  int in_flight_ ABSL_GUARDED_BY(in_flight_mu_) = 0;
  mutable absl::Mutex calls_mu_;
  std::multimap<std::string, grpc::ServerContextBase*> calls_ ABSL_GUARDED_BY(calls_mu_);
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_BROKER_SERVICE_H_
