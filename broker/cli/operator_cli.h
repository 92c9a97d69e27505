// The termbridge operator CLI's commands, over the broker's operator unix
// socket. Each command prints for people by default and JSON with --json,
// and returns the process exit code (0 ok, 1 failed, 2 usage).
#ifndef TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_
#define TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace termbridge::cli {

struct CliOptions {
  std::string operator_socket;  // resolved socket path
  std::string state_dir;        // resolved state dir (audit verify reads its audit.jsonl)
  bool json = false;
  int timeout_ms = 10000;
  std::string note;      // approvals deny: delivered to the agent
  std::string approver;  // who decides (default $USER)
  std::string lane;      // policy check: interactive (default) or headless
  std::string cwd;       // policy check: where the line would run ("" = here); open: its cwd
  std::string name;      // open: the new terminal's name
  bool all = false;      // approvals list: also the recently decided ones
  bool once = false;     // approvals watch: print the snapshot and stop
  std::string scope;     // approvals approve: once (default), terminal or always
  // approvals approve --scope always: the narrowed rules' TOML file ("-": stdin).
  std::string rule_file;
  // approvals approve --scope terminal|always: the grant's time limit (90s,
  // 15m, 2h, 3d; "" none).
  std::string grant_for;
  // policy replay: the candidate policy file ("" the broker's), and which
  // audited commands (RFC 3339 or a duration ago; an agent).
  std::string policy_file;
  std::string since;
  std::string until;
  std::string agent;
  // attach: the resume offset; -1 replays everything still in the ring.
  int64_t offset = -1;
  // attach: the key that detaches, and the key that, followed by k, closes
  // the terminal ("^]", "ctrl-x", one character, or "none").
  std::string detach_key = "^]";
  std::string command_key = "^\\";
  // attach: Resume.viewer, "attach" (by hand) or "window" (a native window).
  std::string viewer = "attach";
  // agents add: write the new token to this file (0600) instead of printing it.
  std::string token_file;
  // attach and watch: ring the terminal's bell when a request waits for a person.
  bool bell = true;
  // attach and watch: when the broker goes away, redial and resume instead
  // of exiting (reconnect.h).
  bool reconnect = true;
  // recordings export: the new file to write ("" or "-": standard output).
  std::string output;
  // replay: how much faster than it happened (0: no waiting), and the
  // longest pause kept, in seconds (0: all of them).
  double speed = 1.0;
  double max_idle_s = 2.0;
  // doctor: the broker's TOML file (as its --config), the settings given as
  // flags here (state_dir, operator_socket), whether to run a probe
  // container, and names agents dial that the TLS certificate must hold.
  std::string config_file;
  std::map<std::string, std::string> broker_settings;
  bool probe_container = false;
  std::vector<std::string> tls_names;
};

// Default socket: TERMBRIDGE_OPERATOR_SOCKET, else <state-dir>/operator.sock
// with the state dir from `state_dir`, TERMBRIDGE_STATE_DIR or the default.
std::string ResolveOperatorSocket(const std::string& socket_flag, const std::string& state_dir);
// The state dir: `state_dir`, else TERMBRIDGE_STATE_DIR, else
// $XDG_STATE_HOME/termbridge or ~/.local/state/termbridge.
std::string ResolveStateDir(const std::string& state_dir);

// args[0] is the subcommand ("sessions", "close").
int RunCommand(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
               std::ostream& err);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_OPERATOR_CLI_H_
