// BrokerServer wires the broker together: state directory, agent token,
// terminal registry, the gRPC server (TerminalBroker, grpc.health.v1 and
// server reflection) and the ready file tests and scripts wait on.
#ifndef TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_
#define TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/server/broker_config.h"

namespace termbridge::broker {

class BrokerServer {
 public:
  static absl::StatusOr<std::unique_ptr<BrokerServer>> Start(const BrokerConfig& config);
  ~BrokerServer();

  const std::string& grpc_address() const;
  const std::string& operator_socket() const;
  // Reports NOT_SERVING, stops accepting calls, lets calls in flight finish
  // until `deadline`, then closes every terminal.
  void Drain(absl::Duration deadline);
  // SIGHUP after logrotate moved the audit log: continue in a new file at
  // the same path (see AuditLog::Reopen). True if it reopened.
  absl::StatusOr<bool> ReopenAuditLog();

 private:
  struct State;
  explicit BrokerServer(std::unique_ptr<State> state);
  // Start's steps, in order (broker_server.cc).
  static absl::Status OpenStores(const BrokerConfig& config, State* state);
  static void PrepareVisibility(const BrokerConfig& config, State* state);
  static absl::Status BuildCore(const BrokerConfig& config, State* state);
  static absl::Status StartServices(const BrokerConfig& config, State* state);
  static absl::Status WriteReadyFile(const BrokerConfig& config, const State& state);
  std::unique_ptr<State> state_;
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_
