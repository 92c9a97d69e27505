// How the agent finds the broker: adapter mode resolution and the bridge
// inputs, read from the environment (docs/CONTRACT.md "Environment
// variables"): the contract's PM_TERM_ADAPTER_MODE, PM_RUNNING_IN_CONTAINER
// and PM_INTERACTIVE_TERMINAL_* names, and termbridge's own
// TERMBRIDGE_BRIDGE_* names (TLS, token, local launch).
#ifndef TERMBRIDGE_AGENT_BRIDGE_BRIDGE_CONFIG_H_
#define TERMBRIDGE_AGENT_BRIDGE_BRIDGE_CONFIG_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::bridge {

enum class AdapterMode { kLocal, kContainerBridge };

struct BridgeConfig {
  AdapterMode mode = AdapterMode::kLocal;
  std::string
      mode_source;  // "request", "PM_TERM_ADAPTER_MODE", "PM_RUNNING_IN_CONTAINER", "default"
  std::vector<std::string> hosts;  // tried in order
  int port = 45459;
  int connect_timeout_ms = 3000;
  int request_timeout_ms = 30000;
  std::string token_file;
  // A claim the broker checks against the credentials (TERMBRIDGE_AGENT_ID);
  // empty: the credentials alone name the agent.
  std::string agent_id;
  bool trace = false;
  // TLS to the broker (termbridge's own inputs, not the contract's):
  // TERMBRIDGE_BRIDGE_TLS_CA_FILE turns TLS on and verifies the broker;
  // _TLS_SERVER_NAME overrides the name checked in its certificate;
  // _TLS_CERT_FILE and _TLS_KEY_FILE present a client certificate (mTLS).
  std::string tls_ca_file;
  std::string tls_server_name;
  std::string tls_cert_file;
  std::string tls_key_file;
  // Local launch (docs/CONTRACT.md "Environment variables"), opt-in:
  // PM_TERM_ADAPTER_MODE=bundled or TERMBRIDGE_BRIDGE_LAUNCH=1. When no broker answers, the agent
  // starts one: PM_INTERACTIVE_TERMINAL_BINARY (absolute), the broker next to
  // the agent binary, then termbridge-broker on PATH; each must become ready
  // within TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS (8000, at most 30000).
  bool launch = false;
  std::string broker_binary;
  int spawn_timeout_ms = 8000;
  std::string state_dir;  // the local broker's state dir (its token lives there)
  std::string path_env;   // PATH, for the last candidate
};

// Looks a variable up; tests inject their own.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// termbridge's own settings that were first spelled PM_INTERACTIVE_TERMINAL_*
// although the contract does not define them. The old name is still read
// when the new one is unset, with a warning on stderr once per process.
struct RenamedSetting {
  const char* name;
  const char* deprecated;
};
inline constexpr RenamedSetting kRenamedSettings[] = {
    {"TERMBRIDGE_BRIDGE_TOKEN_FILE", "PM_INTERACTIVE_TERMINAL_TOKEN_FILE"},
    {"TERMBRIDGE_BRIDGE_TLS_CA_FILE", "PM_INTERACTIVE_TERMINAL_TLS_CA_FILE"},
    {"TERMBRIDGE_BRIDGE_TLS_SERVER_NAME", "PM_INTERACTIVE_TERMINAL_TLS_SERVER_NAME"},
    {"TERMBRIDGE_BRIDGE_TLS_CERT_FILE", "PM_INTERACTIVE_TERMINAL_TLS_CERT_FILE"},
    {"TERMBRIDGE_BRIDGE_TLS_KEY_FILE", "PM_INTERACTIVE_TERMINAL_TLS_KEY_FILE"},
    {"TERMBRIDGE_BRIDGE_LAUNCH", "PM_INTERACTIVE_TERMINAL_LAUNCH"},
    {"TERMBRIDGE_BRIDGE_SPAWN_TIMEOUT_MS", "PM_INTERACTIVE_TERMINAL_SPAWN_TIMEOUT_MS"},
};

// Resolves the mode and reads the bridge inputs. `request_override` is the
// request's runtime.adapter_override ("" when absent). Errors are PM_TERM:
// unknown override values -> INVALID_PAYLOAD; container_bridge without its
// inputs -> INVALID_MODE; malformed numbers -> INVALID_PAYLOAD.
absl::StatusOr<BridgeConfig> ResolveBridgeConfig(const EnvLookup& env,
                                                 const std::string& request_override = "");

// Where this user's termbridge keeps its state: TERMBRIDGE_STATE_DIR, else
// $XDG_STATE_HOME/termbridge, else $HOME/.local/state/termbridge (the
// broker's default --state-dir too).
std::string StateDir(const EnvLookup& env);
// The HTTP bearer token the agent creates when no --http-token-file is
// given: <StateDir>/agent-http-token.
std::string DefaultHttpTokenFile(const EnvLookup& env);

// The default gateway from /proc/net/route (the last alias tried in a
// container), or "" when there is none.
std::string DefaultGateway(const std::string& route_table_path = "/proc/net/route");

}  // namespace termbridge::bridge

#endif  // TERMBRIDGE_AGENT_BRIDGE_BRIDGE_CONFIG_H_
