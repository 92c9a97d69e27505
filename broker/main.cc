// termbridge-broker: owns the host's visible terminals for containerized
// agents. Parses flags, starts BrokerServer, drains on SIGTERM or SIGINT.
#include <csignal>
#include <cstdio>

#include "absl/flags/flag.h"
#include "common/cli/flags.h"
#include "absl/flags/usage.h"
#include "broker/server/broker_server.h"
#include "spdlog/cfg/env.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, listen, "", "gRPC address host:port (env TERMBRIDGE_LISTEN, default 127.0.0.1:45459; port 0 picks one)");
ABSL_FLAG(std::string, state_dir, "", "state directory (env TERMBRIDGE_STATE_DIR, default ~/.local/state/termbridge)");
ABSL_FLAG(std::string, agent_token_file, "", "file holding the agent token (env TERMBRIDGE_AGENT_TOKEN_FILE, default <state-dir>/agent-token, created 0600)");
ABSL_FLAG(std::string, ready_file, "", "write JSON with the bound addresses here once serving (env TERMBRIDGE_READY_FILE)");
ABSL_FLAG(std::string, shell, "", "shell for terminals (env TERMBRIDGE_SHELL, default $SHELL if bash/zsh/sh, else /bin/bash)");
ABSL_FLAG(int, drain_ms, 5000, "how long SIGTERM waits for calls in flight");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("termbridge-broker [flags]: the host side of termbridge");
  termbridge::cli::ParseFlags(argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("broker"));
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug

  // Block the stop signals in every thread; the main thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  termbridge::broker::BrokerConfig config;
  if (!absl::GetFlag(FLAGS_listen).empty()) config.listen = absl::GetFlag(FLAGS_listen);
  config.state_dir = absl::GetFlag(FLAGS_state_dir);
  config.agent_token_file = absl::GetFlag(FLAGS_agent_token_file);
  config.ready_file = absl::GetFlag(FLAGS_ready_file);
  config.shell = absl::GetFlag(FLAGS_shell);
  auto resolved = termbridge::broker::ResolveConfig(config);
  if (!resolved.ok()) {
    spdlog::critical("event=config_error {}", resolved.status().ToString());
    return 2;
  }
  auto server = termbridge::broker::BrokerServer::Start(*resolved);
  if (!server.ok()) {
    spdlog::critical("event=start_failed {}", server.status().ToString());
    return 1;
  }
  int signo = 0;
  sigwait(&stop_signals, &signo);
  spdlog::info("event=signal signo={}", signo);
  (*server)->Drain(absl::Milliseconds(absl::GetFlag(FLAGS_drain_ms)));
  return 0;
}
