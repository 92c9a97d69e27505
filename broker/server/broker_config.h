// BrokerConfig is every setting of termbridge-broker, resolved from four
// layers with one precedence: command-line flag, then TERMBRIDGE_* environment
// variable, then the TOML config file, then the built-in default. Each setting
// has one key used in all layers: flag --ring-bytes, environment
// TERMBRIDGE_RING_BYTES, TOML `ring_bytes = ...` (see kSettings in the .cc and
// docs/configuration.md).
#ifndef TERMBRIDGE_BROKER_SERVER_BROKER_CONFIG_H_
#define TERMBRIDGE_BROKER_SERVER_BROKER_CONFIG_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::broker {

struct BrokerConfig {
  // The agents' addresses, host:port each (port 0 picks a free one): --listen
  // given more than once, a comma-separated TERMBRIDGE_LISTEN or a TOML array.
  std::vector<std::string> listen;
  std::string operator_socket;  // unix socket for operator RPCs (mode 0600)
  std::string state_dir;
  std::string agent_token_file;  // empty: <state_dir>/agent-token, created if missing
  // NAME.token files, one per agent (deploy/make-credentials.sh --agent NAME).
  std::string agent_tokens_dir;
  std::string shared_agent_name = "agent";  // the agent the shared agent token names
  std::string ready_file;
  std::string shell;
  std::string tls_cert;  // PEM; required (with tls_key) for a non-loopback listen
  std::string tls_key;
  std::string tls_client_ca;  // PEM; when set, clients must present a certificate it signed
  size_t ring_bytes = 8 << 20;
  // Every terminal's output on disk in <state_dir>/recordings (docs/operating.md,
  // "Recordings"), pruned oldest first past these.
  bool record = true;
  int64_t recording_max_terminal_bytes = int64_t{512} << 20;
  int64_t recording_max_total_bytes = int64_t{4} << 30;
  int max_terminals_per_agent = 16;
  int max_terminals_total = 64;
  uint32_t max_input_bytes = 64 << 10;
  int64_t idle_timeout_s = 0;          // 0: terminals never time out for idleness
  int64_t max_runtime_s = 0;           // 0: no hard maximum
  std::vector<std::string> cwd_roots;  // empty: any existing absolute directory
  std::vector<std::string> env_allow;  // names an agent may set; empty: any
  int64_t drain_ms = 5000;
  size_t max_finished_sessions = 256;  // finished sessions kept readable
  std::string policy_file;             // default <state_dir>/policy.toml (missing: built-in)
  int64_t approval_timeout_s = 300;    // a pending approval ends as PM_TERM_TIMEOUT after this
  // What one agent may have waiting for a person, and what one proposal may
  // hold (docs/limits.md).
  int64_t max_pending_approvals_per_agent = 16;
  int64_t max_pending_proposals_per_agent = 16;
  int64_t max_proposal_words = 32;
  int64_t max_proposal_rule_bytes = 1024;
  int64_t max_proposal_reason_bytes = 1024;
  // Commands are written into a PTY only once a person watches the terminal.
  // Turning it off is for unattended test rigs: commands then run unseen
  // (docs/security.md, "Not closed here").
  bool require_viewer = true;
  int64_t spawn_timeout_ms = 8000;      // how long a command waits for a viewer (max 30000)
  std::string window_command = "auto";  // native window template; "auto", "none" or a command
  // Desktop notification of a request waiting for a person: "auto" (notify-send
  // when a display is set), "off", or the path of a notify-send-like program.
  std::string notify = "auto";
  std::string console;         // web console address ("" = off), e.g. 127.0.0.1:45460
  std::string console_assets;  // the console's page and xterm.js (default: next to the binary)
  // The broker belongs on the host (docs/operating.md "Running the broker on
  // a host and the agent in a container"): inside a container it starts only
  // when this is set (test rigs, CI sandboxes).
  bool allow_in_container = false;
  std::string config_file;  // the TOML file that was read, if any
};

// Looks up an environment variable; returns nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup ProcessEnv();

// `flags` maps setting keys ("listen", "ring_bytes", ...) to the values given
// on the command line; absent keys were not given. `config_file` is the TOML
// file to read (from --config): empty means TERMBRIDGE_CONFIG, else
// $XDG_CONFIG_HOME/termbridge/broker.toml if it exists. A bad file, an unknown
// key or a bad value is an error naming the key (and line, for the file).
absl::StatusOr<BrokerConfig> ResolveConfig(const std::map<std::string, std::string>& flags,
                                           const std::string& config_file, const EnvLookup& env);

// The setting keys, in documentation order.
std::vector<std::string> SettingKeys();

// The signs that this process runs in a container, each as "what: where"
// (empty when there are none): /run/.containerenv (podman), /.dockerenv
// (docker), a `container` environment variable (systemd-nspawn, podman, lxc)
// and container names in /proc/1/cgroup. `root` prefixes the paths (tests).
std::vector<std::string> ContainerSigns(const EnvLookup& env, const std::string& root = "");

// FAILED_PRECONDITION naming the signs when `signs` is not empty and
// config.allow_in_container is false.
absl::Status RefuseInContainer(const BrokerConfig& config, const std::vector<std::string>& signs);

// True for 127.0.0.0/8, localhost and [::1].
bool IsLoopbackAddress(const std::string& host_port);

// The command line with every occurrence of flag `name` (--name=V, --name V,
// -name V; dashes or underscores) joined into one --name=V1,V2 at the place
// of the first, so a list flag can be given more than once. args[0] is the
// program; nothing after "--" is touched.
std::vector<std::string> JoinRepeatedFlag(const std::vector<std::string>& args,
                                          const std::string& name);

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVER_BROKER_CONFIG_H_
