// termbridge: the operator's command line for termbridge-broker, over the
// broker's unix socket. Parses flags and hands the subcommand to RunCommand.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "broker/cli/operator_cli.h"
#include "common/cli/flags.h"

ABSL_FLAG(bool, json, false, "print JSON for scripts");
ABSL_FLAG(std::string, state_dir, "", "broker state dir (env TERMBRIDGE_STATE_DIR)");
ABSL_FLAG(std::string, operator_socket, "", "operator socket (default <state-dir>/operator.sock)");
ABSL_FLAG(int, timeout_ms, 10000, "deadline for each call to the broker");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "termbridge [--json] [--state-dir DIR] <command>\n"
      "  sessions              every terminal and session the broker holds\n"
      "  close <terminal_id>   close a terminal, killing its process group");
  std::vector<std::string> positional = termbridge::cli::ParseFlags(argc, argv);
  termbridge::cli::CliOptions options;
  options.json = absl::GetFlag(FLAGS_json);
  options.timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  options.operator_socket = termbridge::cli::ResolveOperatorSocket(
      absl::GetFlag(FLAGS_operator_socket), absl::GetFlag(FLAGS_state_dir));
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  return termbridge::cli::RunCommand(args, options, std::cout, std::cerr);
}
