// Local launch of termbridge-broker (docs/CONTRACT.md "Environment
// variables"), for an agent that runs on the host with
// PM_TERM_ADAPTER_MODE=bundled (or TERMBRIDGE_BRIDGE_LAUNCH=1): find the
// broker binary (the configured absolute path, then the one bundled next to
// the agent, then PATH), start it on the configured loopback port in its own
// session, and wait for its ready file. A candidate that exits or stays
// silent past the spawn timeout is stopped (only the process we started),
// retried once when the failure looks transient (the port was busy, a
// start-up race), then the next one is tried. The broker outlives the agent:
// it is the host's, shared by agents.
#ifndef TERMBRIDGE_AGENT_BRIDGE_BROKER_LAUNCHER_H_
#define TERMBRIDGE_AGENT_BRIDGE_BROKER_LAUNCHER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/bridge/bridge_config.h"
#include "nlohmann/json.hpp"

namespace termbridge::bridge {

struct BrokerCandidate {
  std::string source;  // "configured", "bundled", "PATH"
  std::string path;
};

// The candidates in discovery order; `agent_exe` is this agent's binary.
std::vector<BrokerCandidate> BrokerCandidates(const BridgeConfig& config,
                                              const std::string& agent_exe);

struct LaunchedBroker {
  pid_t pid = 0;
  int port = 0;
  BrokerCandidate candidate;
  nlohmann::json attempts;  // every candidate tried before, with why it failed
};

// Starts the first candidate that becomes ready. PM_TERM_GUI_UNAVAILABLE
// with details.reason "launch_failed" and details.candidates_tried when none
// does.
absl::StatusOr<LaunchedBroker> LaunchBroker(const BridgeConfig& config,
                                            const std::vector<BrokerCandidate>& candidates);

}  // namespace termbridge::bridge

#endif  // TERMBRIDGE_AGENT_BRIDGE_BROKER_LAUNCHER_H_
