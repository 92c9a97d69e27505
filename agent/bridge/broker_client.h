// BrokerClient is the agent's connection to termbridge-broker. It picks the
// first host alias that accepts a TCP connection, performs the version and
// capability handshake, attaches the agent token and a deadline to every
// call, and maps every failure to a PM_TERM code (docs/CONTRACT.md "Errors"):
// nothing listening -> GUI_UNAVAILABLE, deadline -> TIMEOUT, a channel that
// dropped after it was up -> DISCONNECTED, a typed broker detail -> that code.
// Deadlines (docs/troubleshooting.md "When the broker stops answering"): a
// call gets its own wait (capped by the broker's max_wait_ms) plus
// request_timeout_ms. A broker that is hung (the connection stands, nothing
// answers) ends the call with TIMEOUT: at its deadline, or, during a long
// wait, once a keepalive ping has gone unanswered for request_timeout_ms plus
// two ping intervals. A broker that is gone (the connection is closed or
// reset: killed, restarted, a proxy cut it) ends it with DISCONNECTED at once.
// Every GUI_UNAVAILABLE names its cause in details.reason
// (common/contract/gui_unavailable.h).
// After a failure the next call reconnects, so a restarted broker is picked
// up. A connection that drops while no call is in flight (a broker restart,
// a cut proxy) is noticed by the tb-bridge-watch thread, which keeps the
// channel polled, and the next call connects anew instead of failing on the
// dead one (docs/operating.md "When the connection to the broker drops").
#ifndef TERMBRIDGE_AGENT_BRIDGE_BROKER_CLIENT_H_
#define TERMBRIDGE_AGENT_BRIDGE_BROKER_CLIENT_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/bridge/bridge_config.h"
#include "common/thread/named_thread.h"
#include "grpcpp/grpcpp.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::bridge {

class BrokerClient {
 public:
  explicit BrokerClient(BridgeConfig config);
  ~BrokerClient();  // stops and joins tb-bridge-watch
  BrokerClient(const BrokerClient&) = delete;
  BrokerClient& operator=(const BrokerClient&) = delete;

  // `phase` names the step for PM_TERM_TIMEOUT details ("execute", "read", ...).
  absl::StatusOr<v1::ExecuteResponse> Execute(v1::ExecuteRequest request);
  absl::StatusOr<v1::ReadOutputResponse> ReadOutput(v1::ReadOutputRequest request);
  absl::StatusOr<v1::TerminateResponse> Terminate(v1::TerminateRequest request);
  absl::StatusOr<v1::ListResponse> List(v1::ListRequest request);
  absl::StatusOr<v1::ProposeRuleResponse> ProposeRule(v1::ProposeRuleRequest request);
  absl::StatusOr<v1::GetPolicyResponse> GetPolicy(v1::AgentPolicyRequest request);
  // The handshake of the current connection, connecting first if needed.
  absl::StatusOr<v1::HandshakeResponse> Handshake(const std::string& trace_id);

  const BridgeConfig& config() const { return config_; }

  // Blocks until no connection is held (none was made yet, or the last one
  // dropped and was let go) or `timeout` passes; true when none is held.
  bool AwaitNoConnectionForTest(absl::Duration timeout);

 private:
  struct Connection {
    std::string address;
    std::string token;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::TerminalBroker::Stub> stub;
    v1::HandshakeResponse handshake;
  };

  // Returns the live connection, establishing it (probe, channel, handshake) if needed.
  absl::StatusOr<std::shared_ptr<Connection>> Connect(const std::string& trace_id);
  void Forget(const std::shared_ptr<Connection>& connection);
  // Body of tb-bridge-watch: waits on the held connection's channel (which
  // polls its socket) and lets the connection go once it is no longer ready.
  void WatchConnections();
  void PrepareContext(grpc::ClientContext* context, const Connection& connection,
                      int64_t timeout_ms) const;
  // `wait_ms` is the part of the call's deadline that was its own wait.
  absl::Status MapError(const grpc::Status& status, const grpc::ClientContext& context,
                        const Connection& connection, const std::string& phase, int timeout_ms,
                        bool was_ready = false, int64_t wait_ms = 0);

  // `wait_ms` is the call's own wait (0 for none): the deadline is that wait,
  // at most the broker's max_wait_ms, plus request_timeout_ms.
  template <typename Request, typename Response, typename Method>
  absl::StatusOr<Response> Call(Request request, Method method, const std::string& phase,
                                uint32_t wait_ms);

  const BridgeConfig config_;
  absl::Mutex mu_;
  std::shared_ptr<Connection> connection_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Mutex launch_mu_;  // one local broker launch at a time
  // Started with the first connection; joined in the destructor.
  thread::NamedThread watcher_ ABSL_GUARDED_BY(mu_);
};

}  // namespace termbridge::bridge

#endif  // TERMBRIDGE_AGENT_BRIDGE_BROKER_CLIENT_H_
