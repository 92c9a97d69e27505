// BrokerServer wires the broker together: state directory, agent token,
// terminal registry, the gRPC server (TerminalBroker, grpc.health.v1 and
// server reflection) and the ready file tests and scripts wait on.
#ifndef TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_
#define TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace termbridge::broker {

// Settings after precedence is applied: flag, then TERMBRIDGE_* environment
// variable, then built-in default.
struct BrokerConfig {
  std::string listen = "127.0.0.1:45459";  // host:port; port 0 picks a free one
  std::string state_dir;                   // empty: $XDG_STATE_HOME/termbridge or ~/.local/state/termbridge
  std::string agent_token_file;            // empty: <state_dir>/agent-token, created if missing
  std::string ready_file;                  // empty: none
  size_t ring_bytes = 8 << 20;
  int max_terminals_per_agent = 16;
  int max_terminals_total = 64;
  std::string shell;
};

// Fills empty fields of `config` from TERMBRIDGE_* variables and defaults.
absl::StatusOr<BrokerConfig> ResolveConfig(BrokerConfig config);

class BrokerServer {
 public:
  static absl::StatusOr<std::unique_ptr<BrokerServer>> Start(const BrokerConfig& config);
  ~BrokerServer();

  const std::string& grpc_address() const;
  // Reports NOT_SERVING, stops accepting calls, lets calls in flight finish
  // until `deadline`, then closes every terminal.
  void Drain(absl::Duration deadline);

 private:
  struct State;
  explicit BrokerServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVER_BROKER_SERVER_H_
