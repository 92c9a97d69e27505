// The termbridge operator CLI's commands, over the broker's operator unix
// socket. Each command prints for people by default and JSON with --json,
// and returns the process exit code (0 ok, 1 failed, 2 usage).
#ifndef TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_
#define TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_

#include <ostream>
#include <string>
#include <vector>

namespace termbridge::cli {

struct CliOptions {
  std::string operator_socket;  // resolved socket path
  bool json = false;
  int timeout_ms = 10000;
};

// Default socket: TERMBRIDGE_OPERATOR_SOCKET, else <state-dir>/operator.sock
// with the state dir from `state_dir`, TERMBRIDGE_STATE_DIR or the default.
std::string ResolveOperatorSocket(const std::string& socket_flag, const std::string& state_dir);

// args[0] is the subcommand ("sessions", "close").
int RunCommand(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
               std::ostream& err);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_
