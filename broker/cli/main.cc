// termbridge: the operator's command line for termbridge-broker, over the
// broker's unix socket. Parses flags and hands the subcommand to RunCommand.
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "broker/cli/history_cli.h"
#include "broker/cli/operator_cli.h"
#include "common/cli/flags.h"

ABSL_FLAG(bool, json, false, "print JSON for scripts");
ABSL_FLAG(std::string, state_dir, "", "broker state dir (env TERMBRIDGE_STATE_DIR)");
ABSL_FLAG(std::string, operator_socket, "", "operator socket (default <state-dir>/operator.sock)");
ABSL_FLAG(int, timeout_ms, 10000, "deadline for each call to the broker");
ABSL_FLAG(std::string, note, "", "approvals deny: a note delivered to the agent");
ABSL_FLAG(std::string, approver, "", "approvals approve/deny: who decides (default $USER)");
ABSL_FLAG(std::string, scope, "once", "approvals approve: once, terminal or always");
ABSL_FLAG(std::string, rule, "",
          "approvals approve --scope always: write these narrower rules instead (a TOML file of "
          "[[rule]] tables, - for stdin)");
ABSL_FLAG(std::string, for, "",
          "approvals approve --scope terminal|always: the grant ends after this long (90s, 15m, "
          "2h, 3d)");
ABSL_FLAG(std::string, policy, "",
          "policy replay: the candidate policy file (default: the broker's)");
ABSL_FLAG(std::string, lane, "interactive", "policy check: interactive or headless");
ABSL_FLAG(std::string, cwd, "",
          "policy check: the directory the line would run in (default: here); open: the "
          "terminal's directory (default: your home)");
ABSL_FLAG(std::string, name, "", "open: the terminal's name (default: from its cwd)");
ABSL_FLAG(bool, all, false, "approvals list: include recently decided requests");
ABSL_FLAG(bool, once, false, "approvals watch: print what is pending and exit");
ABSL_FLAG(int64_t, offset, -1, "attach: resume from this byte offset (default: replay the ring)");
ABSL_FLAG(std::string, detach_key, "^]", "attach: the key that detaches (^X, ctrl-X or none)");
ABSL_FLAG(std::string, command_key, "^\\", "attach: followed by k closes the terminal, d detaches");
ABSL_FLAG(std::string, viewer, "attach", "attach: who is watching, attach or window");
ABSL_FLAG(std::string, output, "", "recordings export: write to this new file (default stdout)");
ABSL_FLAG(bool, bell, true, "attach, watch: ring the bell when a request waits for a person");
ABSL_FLAG(bool, reconnect, true,
          "attach, watch: when the broker goes away, keep trying and resume (false: exit, for "
          "scripts)");
ABSL_FLAG(double, speed, 1.0, "replay: speed factor (0: no pauses)");
ABSL_FLAG(double, max_idle, 2.0, "replay: longest pause in seconds (0: keep every pause)");
ABSL_FLAG(std::string, token_file, "",
          "agents add: write the token to this new file (0600) instead of printing it");
ABSL_FLAG(std::string, config, "",
          "doctor: the broker's TOML config file (default as the broker: TERMBRIDGE_CONFIG, "
          "~/.config/termbridge/broker.toml)");
ABSL_FLAG(bool, probe_container, false,
          "doctor: run a tiny container (image already present) that tries the broker's port");
ABSL_FLAG(std::vector<std::string>, tls_name, {},
          "doctor: comma-separated names agents dial, which the TLS certificate must hold");
ABSL_FLAG(std::string, agent, "", "approvals history, policy replay: only this agent's requests");
ABSL_FLAG(std::string, terminal, "", "approvals history: only requests for this terminal");
ABSL_FLAG(std::string, decision, "",
          "approvals history: allow, deny, ask (every one a person was asked), approved, denied, "
          "timed_out");
ABSL_FLAG(std::string, since, "",
          "approvals history, policy replay: from this time (RFC 3339, or 2h, 3d ago)");
ABSL_FLAG(std::string, until, "",
          "approvals history, policy replay: up to this time (RFC 3339, or 2h, 3d ago)");
ABSL_FLAG(int64_t, limit, 0, "approvals history: only the newest N (0: all)");

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "termbridge [--json] [--state-dir DIR] <command>\n"
      "  sessions                        every terminal and session the broker holds\n"
      "  open [--name N] [--cwd DIR]     open a terminal of your own (no agent reaches it)\n"
      "  rename <terminal> <name>        name a terminal\n"
      "  hand <terminal> <agent>         give your terminal to an agent; hand <terminal> -\n"
      "                                  takes it back\n"
      "  close <terminal_id>             close a terminal, killing its process group\n"
      "  approvals list [--all]          pending approval requests (long texts abridged)\n"
      "  approvals show <id>             one request, whole\n"
      "  approvals watch [--once]        follow requests and decisions\n"
      "  approvals approve <id> [--scope once|terminal|always] [--for 1h] [--rule FILE|-]\n"
      "                                  --for: the grant ends then; --rule: write these\n"
      "                                  narrower rules instead of what always shows\n"
      "  approvals deny <id> [--note TEXT]\n"
      "  approvals history [--agent A] [--terminal T] [--decision D] [--since 2h] [--until T]\n"
      "                    [--limit N]   past requests and decisions, from the audit log\n"
      "  policy show                     the policy in force and its file\n"
      "  policy check [--lane headless] [--cwd DIR] <command line>   explain a decision\n"
      "  policy replay [--policy FILE] [--since 2h] [--until T] [--agent A]\n"
      "                                  audited commands judged again: the decisions that\n"
      "                                  would change under the policy in force or FILE\n"
      "  grants                          terminal grants and expiring rules in force, time left\n"
      "  agents add NAME [--token-file F] issue an agent its own token (printed once, or to F)\n"
      "  agents list                     the agents the broker knows, revoked ones too\n"
      "  agents revoke NAME              refuse NAME's credentials from now on, end its calls\n"
      "  lock <terminal_id> shared|user_only|agent_only  whose input reaches the terminal\n"
      "  attach <terminal> [--offset N]  mirror a terminal here: type into it, Ctrl-] detaches,\n"
      "                                  Ctrl-\\ k closes it (--detach-key, --command-key)\n"
      "  watch                           follow every terminal's output (counts as a viewer)\n"
      "                                  attach and watch redial a broker that went away\n"
      "                                  (--reconnect=false: exit instead)\n"
      "  audit verify [FILE...]          check the audit log's hash chain (rotated files oldest\n"
      "                                  first; default <state-dir>/audit.jsonl)\n"
      "  recordings list                 every terminal's recording, earlier broker runs too\n"
      "  recordings export <terminal> [--output F]  the recording as asciicast v2 (asciinema)\n"
      "  replay <terminal> [--speed N] [--max-idle S]  play a recording in this terminal\n"
      "  history <terminal>              its commands: who sent them, the decision, exit code,\n"
      "                                  duration and recording offsets (from the audit log)\n"
      "  doctor [KEY=VALUE...]           check the set-up, each problem with its fix; KEY=VALUE\n"
      "                                  as broker flags (listen=0.0.0.0:45459); --config F,\n"
      "                                  --tls-name N, --probe-container; exit 1 if one fails");
  std::vector<std::string> positional = termbridge::cli::ParseFlags(argc, argv);
  termbridge::cli::CliOptions options;
  options.json = absl::GetFlag(FLAGS_json);
  options.timeout_ms = absl::GetFlag(FLAGS_timeout_ms);
  options.note = absl::GetFlag(FLAGS_note);
  options.approver = absl::GetFlag(FLAGS_approver);
  options.scope = absl::GetFlag(FLAGS_scope);
  options.rule_file = absl::GetFlag(FLAGS_rule);
  options.grant_for = absl::GetFlag(FLAGS_for);
  options.policy_file = absl::GetFlag(FLAGS_policy);
  options.since = absl::GetFlag(FLAGS_since);
  options.until = absl::GetFlag(FLAGS_until);
  options.agent = absl::GetFlag(FLAGS_agent);
  options.lane = absl::GetFlag(FLAGS_lane);
  options.cwd = absl::GetFlag(FLAGS_cwd);
  options.name = absl::GetFlag(FLAGS_name);
  options.all = absl::GetFlag(FLAGS_all);
  options.once = absl::GetFlag(FLAGS_once);
  options.offset = absl::GetFlag(FLAGS_offset);
  options.detach_key = absl::GetFlag(FLAGS_detach_key);
  options.command_key = absl::GetFlag(FLAGS_command_key);
  options.viewer = absl::GetFlag(FLAGS_viewer);
  options.token_file = absl::GetFlag(FLAGS_token_file);
  options.output = absl::GetFlag(FLAGS_output);
  options.speed = absl::GetFlag(FLAGS_speed);
  options.bell = absl::GetFlag(FLAGS_bell);
  options.reconnect = absl::GetFlag(FLAGS_reconnect);
  options.max_idle_s = absl::GetFlag(FLAGS_max_idle);
  options.config_file = absl::GetFlag(FLAGS_config);
  options.probe_container = absl::GetFlag(FLAGS_probe_container);
  options.tls_names = absl::GetFlag(FLAGS_tls_name);
  if (std::string dir = absl::GetFlag(FLAGS_state_dir); !dir.empty()) {
    options.broker_settings["state_dir"] = dir;
  }
  if (std::string socket = absl::GetFlag(FLAGS_operator_socket); !socket.empty()) {
    options.broker_settings["operator_socket"] = socket;
  }
  options.state_dir = termbridge::cli::ResolveStateDir(absl::GetFlag(FLAGS_state_dir));
  options.operator_socket = termbridge::cli::ResolveOperatorSocket(
      absl::GetFlag(FLAGS_operator_socket), absl::GetFlag(FLAGS_state_dir));
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (args.size() >= 2 && args[0] == "approvals" && args[1] == "history") {
    termbridge::cli::HistoryOptions filters{
        absl::GetFlag(FLAGS_agent), absl::GetFlag(FLAGS_terminal), absl::GetFlag(FLAGS_decision),
        absl::GetFlag(FLAGS_since), absl::GetFlag(FLAGS_until),    absl::GetFlag(FLAGS_limit)};
    return termbridge::cli::ApprovalsHistory(args, options, filters, std::cout, std::cerr);
  }
  if (!args.empty() && args[0] == "history") {
    return termbridge::cli::TerminalHistory(args, options, std::cout, std::cerr);
  }
  return termbridge::cli::RunCommand(args, options, std::cout, std::cerr);
}
