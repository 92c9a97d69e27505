// Start-up and shutdown of termbridge-broker.
#include "broker/server/broker_server.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/approval/approval_queue.h"
#include "broker/core/command_gate.h"
#include "broker/core/terminal_registry.h"
#include "broker/core/visibility.h"
#include "broker/git_guard/git_guard.h"
#include "broker/recording/recording.h"
#include "broker/service/broker_service.h"
#include "broker/service/errors.h"
#include "broker/service/health_service.h"
#include "broker/service/operator_service.h"
#include "broker/session/containment.h"
#include "broker/surface/console/console_server.h"
#include "broker/surface/notify/desktop_notifier.h"
#include "broker/surface/window/window_launcher.h"
#include "common/contract/request.h"
#include "common/policy/policy.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

absl::Status MakeDirs(const std::string& path) {
  std::string partial;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    absl::StrAppend(&partial, "/", part);
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create ", partial, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

// The fix a missing credential file's error names (docs/operating.md).
constexpr char kMakeThem[] =
    ": make the credentials with termbridge-make-credentials (deploy/make-credentials.sh in a "
    "source tree)";

// Reads the agent token, creating it (mode 0600) when it does not exist yet.
absl::StatusOr<std::string> LoadOrCreateToken(const std::string& path, bool create) {
  std::ifstream in(path);
  if (in) {
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string token(absl::StripAsciiWhitespace(buffer.str()));
    if (token.size() < 16) {
      return absl::FailedPreconditionError(
          absl::StrCat("agent token in ", path, " is shorter than 16 characters"));
    }
    return token;
  }
  if (!create) {
    return absl::NotFoundError(absl::StrCat("agent token file not readable: ", path, kMakeThem));
  }
  absl::StatusOr<std::string> token = auth::RandomHex(32);
  if (!token.ok()) return token.status();
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  }
  std::string line = *token + "\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  if (!ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return *token;
}

// Writes `content` to `path` atomically (temporary file, then rename).
absl::Status WriteFileAtomically(const std::string& path, const std::string& content) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << content;
    if (!out.flush()) return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadPem(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", what, " file ", path, kMakeThem));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (buffer.str().find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, " file ", path, " is not PEM"));
  }
  return buffer.str();
}

// TLS when a certificate is configured (mTLS when a client CA is, too).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(
    const BrokerConfig& config) {
  if (config.tls_cert.empty()) return grpc::InsecureServerCredentials();
  absl::StatusOr<std::string> cert = ReadPem("tls_cert", config.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls_key", config.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls_client_ca", config.tls_client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

// The operator socket: a separate server, so operator RPCs are never reachable
// over TCP. The socket is created with mode 0600.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartOperatorServer(const std::string& path,
                                                                  grpc::Service* service) {
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("operator socket path exists and is not a socket: ", path));
    }
    unlink(path.c_str());  // stale socket from a broker that did not shut down cleanly
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service);
  mode_t old_mask = umask(0177);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  umask(old_mask);
  if (!server) return absl::UnavailableError(absl::StrCat("cannot listen on unix:", path));
  if (chmod(path.c_str(), 0600) != 0) {
    return absl::InternalError(absl::StrCat("cannot chmod 0600 ", path));
  }
  return server;
}

std::string OperatorTokenPath(const BrokerConfig& config) {
  return config.state_dir + "/operator-token";
}

// The web console, an operator client of the broker's own unix socket. Its
// token is <state_dir>/operator-token (0600), created on first use.
absl::StatusOr<std::unique_ptr<console::ConsoleServer>> StartConsole(const BrokerConfig& config) {
  absl::StatusOr<std::string> token = LoadOrCreateToken(OperatorTokenPath(config), true);
  if (!token.ok()) return token.status();
  console::ConsoleOptions options;
  options.listen = config.console;
  options.operator_token = *token;
  options.operator_socket = config.operator_socket;
  options.assets_dir = config.console_assets;
  if (options.assets_dir.empty()) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    options.assets_dir = console::DefaultAssetsDir(n > 0 ? std::string(exe, n) : std::string());
  }
  absl::StatusOr<std::unique_ptr<console::ConsoleServer>> console =
      console::ConsoleServer::Start(std::move(options));
  if (!console.ok()) {
    return absl::Status(
        console.status().code(),
        absl::StrCat("web console (--console ", config.console, "): ", console.status().message()));
  }
  return console;
}

// Puts termbridge-git first in every terminal's PATH (git_guard.h). Without
// it git runs as it is, judged by the repository check alone: said loudly.
void AddGitGuard(const std::string& state_dir,
                 std::vector<std::pair<std::string, std::string>>* env) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  absl::StatusOr<std::string> dir =
      git_guard::PrepareGuardDir(state_dir, n > 0 ? std::string(exe, n) : std::string());
  if (!dir.ok()) {
    spdlog::error(
        "event=git_guard_off reason=\"{}\" (git in terminals reads the repository's "
        "config as it is when it runs)",
        std::string(dir.status().message()));
    return;
  }
  const char* path = std::getenv("PATH");
  env->emplace_back("PATH", absl::StrCat(*dir, ":", path != nullptr ? path : "/usr/bin:/bin"));
  env->emplace_back(git_guard::kGuardDirEnv, *dir);
}

}  // namespace

struct BrokerServer::State {
  BrokerConfig config;
  std::string grpc_address;  // the first of grpc_addresses, as before several
  int grpc_port = 0;
  std::vector<std::string> grpc_addresses;  // each listen address with its bound port
  std::vector<int> grpc_ports;              // filled in by BuildAndStart, one per address
  std::string agent_token;                  // the shared agent token
  std::string token_file;                   // where it is kept
  std::string audit_path;
  std::string broker_instance_id;
  std::unique_ptr<audit::AuditLog> audit;
  std::unique_ptr<policy::PolicyFile> policy;
  std::optional<surface::WindowLauncher> windows;
  std::string window_unavailable;
  core::VisibilityOptions visibility;
  // Outlives the registry: its terminals append to their recordings.
  std::unique_ptr<recording::RecordingStore> recordings;
  // Outlives the registry: its terminals' containments report to it.
  std::unique_ptr<session::Warden> warden;
  // Destroyed in reverse: the queue first (it cancels pending requests into
  // the gate), then the gate (it waits for commands being started), then the
  // registry those starts use.
  std::unique_ptr<core::TerminalRegistry> registry;
  std::unique_ptr<core::CommandGate> gate;
  std::unique_ptr<approval::ApprovalQueue> approvals;
  std::unique_ptr<auth::AgentDirectory> agents;
  std::unique_ptr<BrokerService> service;
  std::unique_ptr<HealthService> health;
  std::unique_ptr<OperatorService> operator_service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<grpc::Server> operator_server;
  // An operator client of operator_server: stopped before it.
  std::unique_ptr<console::ConsoleServer> console;
};

BrokerServer::BrokerServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

BrokerServer::~BrokerServer() { Drain(absl::ZeroDuration()); }

const std::string& BrokerServer::grpc_address() const { return state_->grpc_address; }
const std::string& BrokerServer::operator_socket() const { return state_->config.operator_socket; }

absl::StatusOr<std::unique_ptr<BrokerServer>> BrokerServer::Start(const BrokerConfig& config) {
  auto state = std::make_unique<State>();
  state->config = config;
  if (absl::Status s = OpenStores(config, state.get()); !s.ok()) return s;
  PrepareVisibility(config, state.get());
  if (absl::Status s = BuildCore(config, state.get()); !s.ok()) return s;
  if (absl::Status s = StartServices(config, state.get()); !s.ok()) return s;
  if (absl::Status s = WriteReadyFile(config, *state); !s.ok()) return s;
  return std::unique_ptr<BrokerServer>(new BrokerServer(std::move(state)));
}

// The state directory, the agents' credentials, the audit log, the policy
// (with the broker's own files protected) and the approval queue.
absl::Status BrokerServer::OpenStores(const BrokerConfig& config, State* state) {
  if (absl::Status s = MakeDirs(config.state_dir); !s.ok()) return s;
  bool default_token = config.agent_token_file.empty();
  state->token_file = default_token ? config.state_dir + "/agent-token" : config.agent_token_file;
  absl::StatusOr<std::string> token = LoadOrCreateToken(state->token_file, default_token);
  if (!token.ok()) return token.status();
  state->agent_token = *token;

  if (!auth::AgentDirectory::ValidName(config.shared_agent_name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared_agent_name '", config.shared_agent_name,
                     "' is not an agent name (1 to 64 of A-Z a-z 0-9 . _ -)"));
  }
  auth::AgentDirectory::Options agent_options;
  agent_options.store_path = config.state_dir + "/agents.json";
  agent_options.tokens_dir = config.agent_tokens_dir;
  agent_options.shared_token = *token;
  agent_options.shared_name = config.shared_agent_name;
  agent_options.certificates_name_agents = !config.tls_client_ca.empty();
  absl::StatusOr<std::unique_ptr<auth::AgentDirectory>> agents =
      auth::AgentDirectory::Open(agent_options);
  if (!agents.ok()) return agents.status();
  state->agents = std::move(*agents);

  state->audit_path = config.state_dir + "/audit.jsonl";
  absl::StatusOr<std::unique_ptr<audit::AuditLog>> audit = audit::AuditLog::Open(state->audit_path);
  if (!audit.ok()) return audit.status();
  state->audit = std::move(*audit);

  // Every terminal's output, in the state directory (so builtin.broker-state
  // keeps agents' commands away from it).
  if (config.record) {
    recording::RecordingLimits limits;
    limits.max_terminal_bytes = config.recording_max_terminal_bytes;
    limits.max_total_bytes = config.recording_max_total_bytes;
    audit::AuditSink* audit_sink = state->audit.get();
    absl::StatusOr<std::unique_ptr<recording::RecordingStore>> recordings =
        recording::RecordingStore::Open(
            config.state_dir + "/recordings", limits,
            [audit_sink](const recording::RecordingEvent& event) {
              if (event.kind != recording::RecordingEvent::kWriteFailed) return;
              // The ring still has the bytes; the recording will not.
              // Most likely the disk is full: the log keeps the record
              // until it can write it.
              audit_sink
                  ->AppendAfterTheFact(audit::kRecordingGap, {{"terminal_id", event.terminal_id},
                                                              {"from", event.from},
                                                              {"reason", event.reason}})
                  .IgnoreError();
            });
    if (!recordings.ok()) return recordings.status();
    state->recordings = std::move(*recordings);
  }

  state->policy = std::make_unique<policy::PolicyFile>(config.policy_file);
  if (absl::Status loaded = state->policy->Load(); !loaded.ok()) return loaded;
  // Nothing the policy allows reads or writes the broker's own state: its
  // tokens, socket, policy, audit log, TLS material and shell channels
  // (builtin.broker-state; docs/security.md).
  std::vector<std::string> protected_paths = {
      config.state_dir,     state->token_file,      config.agent_tokens_dir, state->audit_path,
      config.policy_file,   config.operator_socket, config.tls_cert,         config.tls_key,
      config.tls_client_ca, config.config_file};
  protected_paths.erase(std::remove(protected_paths.begin(), protected_paths.end(), ""),
                        protected_paths.end());
  state->policy->SetProtectedPaths(std::move(protected_paths));
  approval::QueueOptions queue_options;
  queue_options.timeout = absl::Seconds(config.approval_timeout_s);
  queue_options.audit = state->audit.get();
  queue_options.max_pending_approvals_per_agent = config.max_pending_approvals_per_agent;
  queue_options.max_pending_proposals_per_agent = config.max_pending_proposals_per_agent;
  queue_options.proposal_limits.max_words = config.max_proposal_words;
  queue_options.proposal_limits.max_rule_bytes = config.max_proposal_rule_bytes;
  queue_options.proposal_limits.max_reason_bytes = config.max_proposal_reason_bytes;
  state->approvals = std::make_unique<approval::ApprovalQueue>(queue_options);

  return absl::OkStatus();
}

// How a person is shown a terminal: a native window when one can open, and
// the surfaces named when none watches.
void BrokerServer::PrepareVisibility(const BrokerConfig& config, State* state) {
  surface::WindowOptions window_options;
  window_options.command_template = config.window_command;
  window_options.state_dir = config.state_dir;
  absl::StatusOr<surface::WindowLauncher> windows = surface::WindowLauncher::Create(window_options);
  if (windows.ok()) {
    state->windows = *windows;
  } else {
    state->window_unavailable = std::string(windows.status().message());
  }
  state->visibility.require_viewer = config.require_viewer;
  state->visibility.spawn_timeout = absl::Milliseconds(config.spawn_timeout_ms);
  state->visibility.window_unavailable_reason = state->window_unavailable;
  if (!config.console.empty()) {
    state->visibility.other_surfaces.push_back(
        absl::StrCat("console: no tab open at ", config.console));
  }
  state->visibility.other_surfaces.push_back("watch: no termbridge watch running");
  if (state->windows) {
    const surface::WindowLauncher* launcher = &*state->windows;
    state->visibility.open_window = [launcher](const std::string& terminal_id) {
      return launcher->Open(terminal_id);
    };
  }

  // A request that waits for a person also shows on the desktop.
  surface::NotifierOptions notify_options;
  notify_options.mode = config.notify;
  absl::StatusOr<surface::DesktopNotifier> notifier =
      surface::DesktopNotifier::Create(notify_options);
  if (!notifier.ok()) {
    spdlog::info("event=desktop_notify_off reason=\"{}\"",
                 std::string(notifier.status().message()));
    return;
  }
  spdlog::info("event=desktop_notify_on program={}", notifier->program());
  state->approvals->Watch(
      [notifier = *notifier](std::string_view kind, const approval::Entry& entry) {
        if (kind != "requested") return;
        const approval::Request& request = entry.request;
        std::string body =
            absl::StrCat(request.command, "\nagent ", request.agent_id, " · ",
                         request.terminal_id.empty() ? "new terminal" : request.terminal_id,
                         "\ntermbridge approvals approve ", entry.approval_id);
        if (absl::Status s = notifier.Notify("termbridge: approval needed", body); !s.ok()) {
          spdlog::warn("event=desktop_notify_failed reason=\"{}\"", std::string(s.message()));
        }
      });
}

// The domain: containment (ending what a previous broker left running), the
// terminal registry behind the visibility guarantee, and the command gate.
absl::Status BrokerServer::BuildCore(const BrokerConfig& config, State* state) {
  // Every terminal's processes end with it; what a broker killed before us
  // left running ends now (docs/security.md).
  session::WardenOptions warden_options;
  warden_options.state_dir = config.state_dir;
  absl::StatusOr<std::unique_ptr<session::Warden>> warden = session::Warden::Start(warden_options);
  if (!warden.ok()) return warden.status();
  state->warden = std::move(*warden);
  for (const session::Leftover& leftover : state->warden->EndLeftovers(/*end=*/true)) {
    spdlog::warn("event=leftover_processes terminal_id={} broker_pid={} pids={} ended={}",
                 leftover.terminal_id, leftover.broker_pid, leftover.pids.size(), leftover.ended);
    state->audit
        ->AppendAfterTheFact("leftover_processes", {{"terminal_id", leftover.terminal_id},
                                                    {"broker_pid", leftover.broker_pid},
                                                    {"pids", leftover.pids},
                                                    {"ended", leftover.ended}})
        .IgnoreError();
  }

  core::RegistryOptions registry_options;
  registry_options.audit = state->audit.get();
  registry_options.recordings = state->recordings.get();
  registry_options.warden = state->warden.get();
  registry_options.max_finished_sessions = config.max_finished_sessions;
  const core::VisibilityOptions* visibility = &state->visibility;
  registry_options.before_send = [visibility](const core::SessionRecord& record) {
    return core::AwaitViewer(record, *visibility);
  };
  registry_options.runtime_dir = config.state_dir + "/shell";
  registry_options.ring_bytes = config.ring_bytes;
  registry_options.max_terminals_per_agent = config.max_terminals_per_agent;
  registry_options.max_terminals_total = config.max_terminals_total;
  registry_options.shell = config.shell;
  registry_options.cwd_roots = config.cwd_roots;
  registry_options.env_allow = config.env_allow;
  registry_options.terminal_env = core::AgentTerminalEnv();
  AddGitGuard(config.state_dir, &registry_options.terminal_env);
  registry_options.idle_timeout = absl::Seconds(config.idle_timeout_s);
  registry_options.max_runtime = absl::Seconds(config.max_runtime_s);
  state->registry = std::make_unique<core::TerminalRegistry>(registry_options);
  core::PostApprovalNotices(state->approvals.get(), state->registry.get());
  state->gate = std::make_unique<core::CommandGate>(state->policy.get(), state->approvals.get(),
                                                    state->registry.get(), state->audit.get(),
                                                    ContractCodeName);

  return absl::OkStatus();
}

// The agents' gRPC server, the operator socket and the console.
absl::Status BrokerServer::StartServices(const BrokerConfig& config, State* state) {
  ServiceOptions service_options;
  service_options.agent_token = state->agent_token;
  service_options.agents = state->agents.get();
  service_options.broker_instance_id = state->broker_instance_id = contract::NewId("b_");
  service_options.max_input_bytes = config.max_input_bytes;
  service_options.audit = state->audit.get();
  service_options.gate = state->gate.get();
  service_options.policy = state->policy.get();
  service_options.approvals = state->approvals.get();
  service_options.extra_capabilities.push_back(state->windows ? "surface.window"
                                                              : "surface.window.unavailable");
  if (!config.console.empty()) service_options.extra_capabilities.push_back("surface.console");
  service_options.extra_capabilities.push_back(config.require_viewer ? "visibility.required"
                                                                     : "visibility.off");
  state->service = std::make_unique<BrokerService>(service_options, state->registry.get());

  // Our own grpc.health.v1 service, so reflection can describe it.
  grpc::EnableDefaultHealthCheckService(false);
  state->health = std::make_unique<HealthService>();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentials(config);
  if (!credentials.ok()) return credentials.status();
  state->grpc_ports.assign(config.listen.size(), 0);  // sized once: the builder keeps pointers
  for (size_t i = 0; i < config.listen.size(); ++i) {
    builder.AddListeningPort(config.listen[i], *credentials, &state->grpc_ports[i]);
  }
  builder.RegisterService(state->service.get());
  builder.RegisterService(state->health.get());
  // Keepalive: ping idle clients every 10 s and drop them after 5 s of silence.
  // Clients may ping every 500 ms while the broker sends nothing: the agent
  // pings every second during a long wait (agent/bridge/broker_client.cc),
  // and a faster ping would earn a GOAWAY (too_many_pings) after two strikes.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  state->server = builder.BuildAndStart();
  if (!state->server) {
    for (size_t i = 0; i < config.listen.size(); ++i) {
      if (state->grpc_ports[i] == 0) {  // the builder stops at the first address it cannot bind
        return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen[i]));
      }
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", absl::StrJoin(config.listen, ", ")));
  }
  for (size_t i = 0; i < config.listen.size(); ++i) {
    state->grpc_addresses.push_back(absl::StrCat(
        config.listen[i].substr(0, config.listen[i].rfind(':')), ":", state->grpc_ports[i]));
  }
  state->operator_service = std::make_unique<OperatorService>(
      service_options, state->registry.get(), state->service.get());
  absl::StatusOr<std::unique_ptr<grpc::Server>> operator_server =
      StartOperatorServer(config.operator_socket, state->operator_service.get());
  if (!operator_server.ok()) return operator_server.status();
  state->operator_server = std::move(*operator_server);
  if (!config.console.empty()) {
    absl::StatusOr<std::unique_ptr<console::ConsoleServer>> console = StartConsole(config);
    if (!console.ok()) return console.status();
    state->console = std::move(*console);
  }
  state->health->SetServing(true);
  state->grpc_address = state->grpc_addresses.front();
  state->grpc_port = state->grpc_ports.front();
  spdlog::info(
      "event=serving grpc={} tls={} mtls={} operator_socket={} state_dir={} "
      "agent_token_file={} shell={} config_file={} policy={} require_viewer={} "
      "windows=\"{}\" console={}",
      absl::StrJoin(state->grpc_addresses, ","), !config.tls_cert.empty(),
      !config.tls_client_ca.empty(), config.operator_socket, config.state_dir, state->token_file,
      state->registry->shell(), config.config_file.empty() ? "none" : config.config_file,
      config.policy_file, config.require_viewer,
      state->windows ? state->windows->command_template() : state->window_unavailable,
      state->console ? absl::StrCat("http://", config.console.substr(0, config.console.rfind(':')),
                                    ":", state->console->port(), "/")
                     : "off");
  // What `termbridge doctor` asks the operator socket (GetBrokerInfo).
  v1::BrokerInfo info;
  info.set_broker_version(service_options.version);
  info.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  info.set_broker_instance_id(state->broker_instance_id);
  info.set_pid(getpid());
  info.set_started_at_unix_ms(absl::ToUnixMillis(absl::Now()));
  for (const std::string& address : state->grpc_addresses) info.add_listen(address);
  info.set_tls_cert(config.tls_cert);
  info.set_tls_key(config.tls_key);
  info.set_tls_client_ca(config.tls_client_ca);
  info.set_state_dir(config.state_dir);
  info.set_config_file(config.config_file);
  info.set_policy_file(config.policy_file);
  info.set_audit_log(state->audit_path);
  info.set_agent_token_file(state->token_file);
  info.set_agent_tokens_dir(config.agent_tokens_dir);
  info.set_operator_socket(config.operator_socket);
  if (state->console) {
    info.set_console(absl::StrCat(config.console.substr(0, config.console.rfind(':')), ":",
                                  state->console->port()));
  }
  if (state->windows) info.set_window_command(state->windows->command_template());
  info.set_window_unavailable(state->window_unavailable);
  info.set_require_viewer(config.require_viewer);
  state->operator_service->SetBrokerInfo(std::move(info));

  return absl::OkStatus();
}

// The ready file tests and scripts wait on (none configured: nothing).
absl::Status BrokerServer::WriteReadyFile(const BrokerConfig& config, const State& state) {
  if (config.ready_file.empty()) return absl::OkStatus();
  // grpc_address and grpc_port: the first listen address (as before there
  // were several); grpc_addresses and grpc_ports: every one, in order.
  nlohmann::json ready = {{"grpc_address", state.grpc_address},
                          {"grpc_port", state.grpc_port},
                          {"grpc_addresses", state.grpc_addresses},
                          {"grpc_ports", state.grpc_ports},
                          {"tls", !config.tls_cert.empty()},
                          {"operator_socket", config.operator_socket},
                          {"audit_log", state.audit_path},
                          {"pid", getpid()},
                          {"state_dir", config.state_dir},
                          {"agent_token_file", state.token_file},
                          {"policy_file", config.policy_file},
                          {"windows", state.windows ? "available" : state.window_unavailable},
                          {"broker_instance_id", state.broker_instance_id}};
  if (state.console) {
    // The login link carries the operator token: the ready file is in the
    // private (0700) state dir, like the token file itself.
    ready["console_url"] = state.console->login_url();
    ready["console_port"] = state.console->port();
    ready["operator_token_file"] = OperatorTokenPath(config);
  }
  return WriteFileAtomically(config.ready_file, ready.dump() + "\n");
}

absl::StatusOr<bool> BrokerServer::ReopenAuditLog() { return state_->audit->Reopen(); }

void BrokerServer::Drain(absl::Duration deadline) {
  if (!state_ || !state_->server) return;
  state_->health->SetServing(false);
  spdlog::info("event=draining deadline_ms={}", absl::ToInt64Milliseconds(deadline));
  // Terminals close first so that waits in flight (Execute, ReadOutput) and
  // Attach streams see the exit and finish instead of holding the shutdown.
  // Then calls in flight get until `deadline` to finish; idle connections
  // don't hold the shutdown (gRPC would otherwise wait for clients to hang up).
  state_->registry->CloseAll();
  bool idle = state_->service->WaitIdle(deadline);
  if (!idle) spdlog::warn("event=drain_deadline_passed cancelling calls still in flight");
  state_->health->WaitDelivered(absl::Seconds(1));
  state_->health->Shutdown();
  if (state_->console) state_->console->Stop();
  state_->server->Shutdown(absl::ToChronoTime(absl::Now()));
  state_->server->Wait();
  if (state_->operator_server) {
    state_->operator_server->Shutdown(absl::ToChronoTime(absl::Now()));
    state_->operator_server->Wait();
    unlink(state_->config.operator_socket.c_str());
  }
  state_->server.reset();
  spdlog::info("event=stopped");
}

}  // namespace termbridge::broker
