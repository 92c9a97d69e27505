// termbridge-broker: owns the host's visible terminals for containerized
// agents. Parses flags, resolves the configuration, starts BrokerServer and
// drains on SIGTERM or SIGINT.
#include <csignal>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_join.h"
#include "broker/server/broker_server.h"
#include "broker/server/process_tuning.h"
#include "common/cli/flags.h"
#include "spdlog/cfg/env.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

// Every setting is also TERMBRIDGE_<KEY> in the environment and <key> in the
// TOML file; flags win over the environment, which wins over the file.
ABSL_FLAG(std::string, config, "",
          "TOML config file (env TERMBRIDGE_CONFIG; default ~/.config/termbridge/broker.toml if "
          "present)");
ABSL_FLAG(std::string, listen, "",
          "gRPC address host:port, repeated or comma-separated for several (default "
          "127.0.0.1:45459; port 0 picks one; non-loopback needs TLS)");
ABSL_FLAG(std::string, operator_socket, "",
          "operator unix socket (default <state-dir>/operator.sock, mode 0600)");
ABSL_FLAG(std::string, state_dir, "",
          "state directory (default ~/.local/state/termbridge, mode 0700)");
ABSL_FLAG(std::string, agent_token_file, "",
          "file holding the agent token (default <state-dir>/agent-token, created 0600)");
ABSL_FLAG(std::string, agent_tokens_dir, "",
          "directory of NAME.token files, one per agent (each names agent NAME)");
ABSL_FLAG(std::string, shared_agent_name, "",
          "the agent name the shared agent token carries (default agent)");
ABSL_FLAG(std::string, ready_file, "", "write JSON with the bound addresses here once serving");
ABSL_FLAG(std::string, shell, "",
          "shell for terminals (default $SHELL if bash/zsh/sh, else /bin/bash, else /bin/sh)");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM server certificate (required with --tls-key for a non-loopback listen)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls-cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA: require client certificates signed by it (mTLS)");
ABSL_FLAG(std::string, ring_bytes, "", "output kept per terminal, bytes (default 8388608)");
ABSL_FLAG(std::string, notify, "",
          "desktop notification of requests waiting for a person: auto, off or a program");
ABSL_FLAG(std::string, record, "",
          "record every terminal's output in <state-dir>/recordings (default true)");
ABSL_FLAG(std::string, recording_max_terminal_bytes, "",
          "largest recording of one terminal before its oldest bytes go (default 512 MiB)");
ABSL_FLAG(std::string, recording_max_total_bytes, "",
          "all recordings together before the oldest go (default 4 GiB)");
ABSL_FLAG(std::string, max_terminals_per_agent, "", "live terminals per agent (default 16)");
ABSL_FLAG(std::string, max_terminals_total, "", "live terminals in total (default 64)");
ABSL_FLAG(std::string, max_input_bytes, "", "largest input chunk accepted, bytes (default 65536)");
ABSL_FLAG(std::string, idle_timeout_s, "",
          "close a terminal idle this long, seconds (default 0: never)");
ABSL_FLAG(std::string, max_runtime_s, "",
          "close a terminal after this long, seconds (default 0: no limit)");
ABSL_FLAG(std::string, cwd_roots, "", "comma-separated roots a cwd must lie under (default: any)");
ABSL_FLAG(std::string, env_allow, "",
          "comma-separated environment names an agent may set (default: any)");
ABSL_FLAG(std::string, drain_ms, "", "how long SIGTERM waits for calls in flight (default 5000)");
ABSL_FLAG(std::string, max_finished_sessions, "", "finished sessions kept readable (default 256)");
ABSL_FLAG(std::string, policy, "",
          "policy TOML file, reloaded when it changes (default <state-dir>/policy.toml; missing: "
          "built-in policy)");
ABSL_FLAG(std::string, approval_timeout_s, "",
          "a pending approval times out after this, seconds (default 300)");
ABSL_FLAG(std::string, require_viewer, "",
          "write commands into a PTY only while a person watches it (default true)");
ABSL_FLAG(std::string, spawn_timeout_ms, "",
          "how long a command waits for a viewer, ms (default 8000, max 30000)");
ABSL_FLAG(std::string, window_command, "",
          "native window template: auto, none, or a command with {attach} (default auto)");
ABSL_FLAG(std::string, console, "",
          "serve the web console at this address (e.g. 127.0.0.1:45460; default off)");
ABSL_FLAG(std::string, console_assets, "",
          "directory of the console page and xterm.js (default: <binary dir>/../console-assets, "
          "then <binary dir>/../share/termbridge/console-assets)");
ABSL_FLAG(std::string, max_pending_approvals_per_agent, "",
          "commands one agent may have waiting for a person (default 16)");
ABSL_FLAG(std::string, max_pending_proposals_per_agent, "",
          "rule proposals one agent may have waiting for a person (default 16)");
ABSL_FLAG(std::string, max_proposal_words, "", "words in one proposed rule (default 32)");
ABSL_FLAG(std::string, max_proposal_rule_bytes, "",
          "bytes of one proposed rule, words joined by spaces (default 1024)");
ABSL_FLAG(std::string, max_proposal_reason_bytes, "",
          "bytes of a proposal's reason (default 1024)");
ABSL_FLAG(bool, allow_in_container, false,
          "start even inside a container (test rigs; by default the broker refuses: it belongs on "
          "the host)");

namespace {

std::map<std::string, std::string> GivenFlags() {
  const std::pair<const char*, const absl::Flag<std::string>*> flags[] = {
      {"listen", &FLAGS_listen},
      {"operator_socket", &FLAGS_operator_socket},
      {"state_dir", &FLAGS_state_dir},
      {"agent_token_file", &FLAGS_agent_token_file},
      {"agent_tokens_dir", &FLAGS_agent_tokens_dir},
      {"shared_agent_name", &FLAGS_shared_agent_name},
      {"ready_file", &FLAGS_ready_file},
      {"shell", &FLAGS_shell},
      {"tls_cert", &FLAGS_tls_cert},
      {"tls_key", &FLAGS_tls_key},
      {"tls_client_ca", &FLAGS_tls_client_ca},
      {"ring_bytes", &FLAGS_ring_bytes},
      {"record", &FLAGS_record},
      {"notify", &FLAGS_notify},
      {"recording_max_terminal_bytes", &FLAGS_recording_max_terminal_bytes},
      {"recording_max_total_bytes", &FLAGS_recording_max_total_bytes},
      {"max_terminals_per_agent", &FLAGS_max_terminals_per_agent},
      {"max_terminals_total", &FLAGS_max_terminals_total},
      {"max_input_bytes", &FLAGS_max_input_bytes},
      {"idle_timeout_s", &FLAGS_idle_timeout_s},
      {"max_runtime_s", &FLAGS_max_runtime_s},
      {"cwd_roots", &FLAGS_cwd_roots},
      {"env_allow", &FLAGS_env_allow},
      {"drain_ms", &FLAGS_drain_ms},
      {"max_finished_sessions", &FLAGS_max_finished_sessions},
      {"policy", &FLAGS_policy},
      {"approval_timeout_s", &FLAGS_approval_timeout_s},
      {"require_viewer", &FLAGS_require_viewer},
      {"spawn_timeout_ms", &FLAGS_spawn_timeout_ms},
      {"window_command", &FLAGS_window_command},
      {"console", &FLAGS_console},
      {"console_assets", &FLAGS_console_assets},
      {"max_pending_approvals_per_agent", &FLAGS_max_pending_approvals_per_agent},
      {"max_pending_proposals_per_agent", &FLAGS_max_pending_proposals_per_agent},
      {"max_proposal_words", &FLAGS_max_proposal_words},
      {"max_proposal_rule_bytes", &FLAGS_max_proposal_rule_bytes},
      {"max_proposal_reason_bytes", &FLAGS_max_proposal_reason_bytes},
  };
  std::map<std::string, std::string> given;
  for (const auto& [key, flag] : flags) {
    if (std::string value = absl::GetFlag(*flag); !value.empty()) given[key] = value;
  }
  if (absl::GetFlag(FLAGS_allow_in_container)) given["allow_in_container"] = "true";
  return given;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("termbridge-broker [flags]: the host side of termbridge");
  // --listen may be given more than once: one --listen=A,B for absl.
  std::vector<std::string> args =
      termbridge::broker::JoinRepeatedFlag(std::vector<std::string>(argv, argv + argc), "listen");
  std::vector<char*> arg_pointers;
  for (std::string& arg : args) arg_pointers.push_back(arg.data());
  arg_pointers.push_back(nullptr);
  termbridge::cli::ParseFlags(static_cast<int>(args.size()), arg_pointers.data());
  spdlog::set_default_logger(spdlog::stderr_color_mt("broker"));
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug
  termbridge::broker::SkipMutexDeadlockDetection();
  if (!termbridge::broker::KeepFreedMemoryForReuse()) {
    spdlog::warn("event=malloc_tuning_refused (output streams will page-fault more)");
  }

  // Block the signals the main thread handles in every thread; it waits for
  // them: SIGTERM and SIGINT drain and stop, SIGHUP reopens the audit log.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  // A file-size limit (ulimit -f) makes writes fail with EFBIG, which the
  // audit log reports; the default action would kill the broker instead.
  std::signal(SIGXFSZ, SIG_IGN);

  auto config = termbridge::broker::ResolveConfig(GivenFlags(), absl::GetFlag(FLAGS_config),
                                                  termbridge::broker::ProcessEnv());
  if (!config.ok()) {
    spdlog::critical("event=config_error {}", config.status().ToString());
    return 2;
  }
  const std::vector<std::string> container_signs =
      termbridge::broker::ContainerSigns(termbridge::broker::ProcessEnv());
  if (absl::Status refused = termbridge::broker::RefuseInContainer(*config, container_signs);
      !refused.ok()) {
    spdlog::critical("event=config_error {}", refused.ToString());
    return 2;
  }
  if (!container_signs.empty()) {
    spdlog::warn(
        "event=running_in_container signs=\"{}\" allowed_by=allow_in_container: its "
        "terminals run in this container, not on the host",
        absl::StrJoin(container_signs, ", "));
  }
  auto server = termbridge::broker::BrokerServer::Start(*config);
  if (!server.ok()) {
    // A file the configuration names is missing (a credential): a broken
    // configuration like those above, exit 2, which the systemd unit does not
    // retry (deploy/termbridge-broker.service).
    const bool config_error = absl::IsNotFound(server.status());
    spdlog::critical("event={} {}", config_error ? "config_error" : "start_failed",
                     server.status().ToString());
    return config_error ? 2 : 1;
  }
  int signo = 0;
  for (;;) {
    sigwait(&stop_signals, &signo);
    spdlog::info("event=signal signo={}", signo);
    if (signo != SIGHUP) break;
    absl::StatusOr<bool> reopened = (*server)->ReopenAuditLog();
    if (!reopened.ok()) {
      spdlog::error("event=audit_reopen_failed {}", reopened.status().ToString());
    } else {
      spdlog::info("event=audit_reopen reopened={}", *reopened);
    }
  }
  (*server)->Drain(absl::Milliseconds(config->drain_ms));
  return 0;
}
