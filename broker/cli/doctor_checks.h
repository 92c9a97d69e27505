// The checks of `termbridge doctor` (docs/troubleshooting.md): each looks at
// one thing a set-up needs (credentials and their modes, the policy file, the
// audit log, a way for a person to see terminals, the listen address as a
// container sees it, the TLS certificate's names and dates) and returns
// findings that say what is wrong and what to do. They read files, the
// environment and the output of podman/docker, never the broker itself:
// doctor_cli.cc asks the broker and passes what it learnt in.
#ifndef TERMBRIDGE_BROKER_CLI_DOCTOR_CHECKS_H_
#define TERMBRIDGE_BROKER_CLI_DOCTOR_CHECKS_H_

#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace termbridge::doctor {

enum class Status { kOk, kWarn, kFail };
std::string_view StatusName(Status status);  // "ok", "warn", "fail"

// One finding: `fix` says what to do, and is empty when there is nothing to do.
struct Finding {
  std::string id;  // stable, for scripts: "broker", "credentials.agent_token", ...
  Status status = Status::kOk;
  std::string message;
  std::string fix;
};

// {"checks":[{id,status,message,fix}],"ok":bool}; ok is false when any failed.
nlohmann::json ReportJson(const std::vector<Finding>& findings);
// One line per finding ("ok    id  message"), then "      fix: ..." when there is one.
std::string ReportText(const std::vector<Finding>& findings);
bool AnyFailed(const std::vector<Finding>& findings);

// Looks up an environment variable; nullopt when unset or empty.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// --- credentials and files (doctor_checks.cc) ---

// The state directory: owned by this user and closed to others (0700).
// Missing is fine (the broker makes it).
Finding CheckStateDir(const std::string& dir);

struct SecretFileRules {
  // Missing is a failure (an explicit agent_token_file) rather than "the
  // broker makes it" (the default agent-token, the operator token).
  bool required = false;
  // Readable by others is fine when its directory keeps them out (no search
  // permission for group and others): deploy/make-credentials.sh leaves the
  // agent token 0644 in a 0700 directory so a container's user can read it.
  // Files the broker makes in its state dir are 0600 and stay so.
  bool readable_in_private_dir = false;
  // The file holds a token: at least 16 characters once trimmed.
  bool token = false;
};
// A file holding a secret: a regular file this user can read, that group and
// others cannot write, and (per `rules`) cannot read.
Finding CheckSecretFile(const std::string& id, const std::string& what, const std::string& path,
                        const SecretFileRules& rules);

// agent_tokens_dir: a private directory of NAME.token files. "" = not set.
Finding CheckAgentTokensDir(const std::string& dir);

// The policy file, parsed with the broker's own loader (common/policy): a
// missing file is the built-in policy; one that does not load is a failure.
// Writable by group or others is a warning (they could loosen it).
Finding CheckPolicyFile(const std::string& path);

// The audit log: "audit.writable" (the broker can append to it or create it,
// on a file system that is not read-only or full) and "audit.chain"
// (VerifyAuditFiles on the live file).
std::vector<Finding> CheckAuditLog(const std::string& path);

// --- a person can see terminals (doctor_checks.cc) ---

struct ViewerInputs {
  // The running broker's window command, or why it has none. nullopt: no
  // broker answered, the check resolves `window_command` itself.
  std::optional<std::string> broker_window_command;
  std::string broker_window_unavailable;
  std::string window_command = "auto";  // the setting
  std::string state_dir;
  std::string console;           // address as bound (broker running) or configured; "" = off
  bool console_answers = false;  // a TCP connect to `console` succeeded
  bool broker_running = false;
  bool require_viewer = true;
  EnvLookup env;
  std::string x11_socket_dir = "/tmp/.X11-unix";  // where :N's socket is (tests move it)
};
// viewer.display, viewer.window, viewer.console and viewer.watch.
std::vector<Finding> CheckViewer(const ViewerInputs& inputs);

// --- containers (doctor_network.cc) ---

struct ProgramOutput {
  int exit_code = -1;  // -1: killed (timeout) or a signal
  std::string out;
  std::string err;
};
// Runs argv (PATH lookup) with no input, capturing both outputs; kills it
// after `timeout`. NOT_FOUND when the program does not exist.
absl::StatusOr<ProgramOutput> RunProgram(const std::vector<std::string>& argv,
                                         absl::Duration timeout);
using ProgramRunner =
    std::function<absl::StatusOr<ProgramOutput>(const std::vector<std::string>& argv)>;

struct ContainerNetwork {
  std::string tool;  // "podman" or "docker"
  std::string name;
  std::string subnet;
  std::string gateway;  // the host's address on it, where containers reach the host
};

struct ContainerTools {
  std::vector<std::string> present;  // "podman", "docker": found on PATH
  std::vector<ContainerNetwork> networks;
  std::vector<std::string> notes;  // what could not be learnt ("docker: no daemon")
};

// Which of podman and docker exist (`on_path`), and their bridge networks'
// gateways: `podman network ls --format json` and `docker network inspect
// bridge`, through `run`. Starts no container.
ContainerTools DiscoverContainerTools(const ProgramRunner& run,
                                      const std::function<bool(const std::string&)>& on_path);

// True when an agent dialing `ip` reaches a server listening on
// `listen` (host:port): the same address, or a wildcard (0.0.0.0, [::], "").
bool ListenCovers(const std::string& listen, const std::string& ip);

// Connects to host:port over TCP within `timeout`; OK when it connects.
absl::Status TcpProbe(const std::string& host_port, absl::Duration timeout);
// Probes a gateway:port. FAILED_PRECONDITION means the gateway address is not
// on this host yet (podman makes a network's bridge with its first container),
// which is not a fault.
using TcpProber = std::function<absl::Status(const std::string& host_port)>;
// True when `ip` is an address of one of this host's interfaces.
bool IsLocalAddress(const std::string& ip);

// container_reach: whether containers of `tools` can reach a broker
// listening on `listen` (host:port each, as bound when `port_known`). With a
// known port, each covered gateway is probed from this host with `probe`.
Finding CheckContainerReach(const std::vector<std::string>& listen, bool port_known,
                            const ContainerTools& tools, const TcpProber& probe);

// container_reach.probe (--probe-container): runs a tiny container (an image
// already present: localhost/termbridge-agent, else debian:bookworm-slim;
// never pulled) on each network of `tools` that tries the broker's port at
// host.containers.internal and the gateway.
Finding ProbeFromContainer(const std::string& port, const ContainerTools& tools,
                           const ProgramRunner& run);

// --- TLS (doctor_tls.cc) ---

struct TlsInputs {
  std::string cert;  // PEM paths; cert "" = no TLS
  std::string key;
  std::string client_ca;  // "" = no mTLS
  // Names clients dial or check (TERMBRIDGE_TLS_SERVER_NAME), DNS names or
  // IP addresses: each must be in the certificate's subjectAltName.
  std::vector<std::string> names;
  std::time_t now = 0;  // 0: the current time
  int warn_days_before_expiry = 30;
};
// tls: the certificate parses, is valid now and for warn_days_before_expiry
// more, names every one of `names`, and matches the key; the client CA parses.
std::vector<Finding> CheckTls(const TlsInputs& inputs);

// The names a broker listening on `listen` is dialed by: the listen host
// when it is a specific address, host.containers.internal (what the agent
// image checks) when it is not loopback and containers are here, and `extra`.
std::vector<std::string> TlsNamesFor(const std::vector<std::string>& listen, bool containers_here,
                                     const std::vector<std::string>& extra);

}  // namespace termbridge::doctor

#endif  // TERMBRIDGE_BROKER_CLI_DOCTOR_CHECKS_H_
