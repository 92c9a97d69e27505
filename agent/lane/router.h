// Router is the agent's unified dispatcher (docs/CONTRACT.md, 'Lanes'; the walk
// is in docs/ARCHITECTURE.md, 'The life of an execute'): it normalizes a tool
// call into the canonical request, resolves its lane, sends interactive work
// to the broker (failing closed when the broker is unreachable: there is no
// in-process fallback) and shapes the canonical response or error payload.
#ifndef TERMBRIDGE_AGENT_LANE_ROUTER_H_
#define TERMBRIDGE_AGENT_LANE_ROUTER_H_

#include <functional>

#include "absl/status/statusor.h"
#include "agent/bridge/broker_client.h"
#include "agent/lane/headless_lane.h"
#include "agent/lane/output_budget.h"
#include "common/contract/request.h"
#include "common/policy/policy.h"
#include "nlohmann/json.hpp"

namespace termbridge::lane {

// The longest wait of a call (execute's runtime.timeout_ms, read_output's
// wait_ms), in ms: the broker's own cap (its max_wait_ms), applied to the
// headless lane too (docs/CONTRACT.md, "Deadlines").
inline constexpr int64_t kMaxWaitMs = 60000;

struct RouterOptions {
  contract::DeprecationPhase phase = contract::DeprecationPhase::kA;
  int default_wait_ms = 10000;  // how long execute waits for a command to end by default
  // The headless lane's policy when no broker answers: this file (empty or
  // missing: the built-in default policy).
  std::string local_policy_file;
};

// The headless lane's policy and where it comes from, as results report it
// (policy.source and policy.source_reason, docs/CONTRACT.md).
struct PolicyInForce {
  std::shared_ptr<const policy::Policy> policy;
  std::string source;  // "broker", "local_file" or "builtin"
  // Why the built-in policy applies although a local policy file is set (it
  // is missing, or no version of it was valid); "" otherwise.
  std::string source_reason;
};

struct RouterResult {
  nlohmann::json response;  // the canonical response or error payload
  bool is_error = false;
};

class Router {
 public:
  // `bridge_config` is the environment's resolution result: when it is an
  // error, every interactive call returns that error.
  Router(RouterOptions options, absl::StatusOr<bridge::BridgeConfig> bridge_config);

  RouterResult Handle(const nlohmann::json& arguments);
  // The strict headless tool, memory_terminal: run, read_output, kill,
  // get_allowlist, update_allowlist.
  RouterResult HandleHeadlessTool(const nlohmann::json& arguments);

 private:
  absl::StatusOr<nlohmann::json> Interactive(const contract::CanonicalRequest& request,
                                             std::string* status, std::string* session_id,
                                             std::string* terminal_id);
  int WaitBudgetMs(std::optional<int64_t> requested) const;
  // The output budget of an interactive read (output_budget.h), at most the
  // broker's read bound; none for format "screen" (a snapshot is whole).
  std::optional<uint32_t> InteractiveBudget(const contract::CanonicalRequest& request);
  absl::StatusOr<nlohmann::json> Headless(const contract::CanonicalRequest& request,
                                          std::string* status, std::string* session_id);
  // The broker's current policy, else the local file, else the default.
  PolicyInForce HeadlessPolicy(const std::string& trace_id);
  absl::StatusOr<nlohmann::json> MergedList(const contract::CanonicalRequest& request);

  const RouterOptions options_;
  const absl::Status bridge_status_;
  std::unique_ptr<bridge::BrokerClient> client_;
  HeadlessLane headless_;
  policy::PolicyFile local_policy_;
};

}  // namespace termbridge::lane

#endif  // TERMBRIDGE_AGENT_LANE_ROUTER_H_
