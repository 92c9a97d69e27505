// TerminalRegistry is the broker's table of live terminals and the sessions
// (command executions) run in them. It mints the opaque ids, records which
// agent owns what, and enforces the per-agent and total limits. It knows
// nothing about gRPC: its errors are absl::Status with a core::Problem
// (broker/core/problem.h), which broker/service turns into wire errors.
#ifndef TERMBRIDGE_BROKER_CORE_TERMINAL_REGISTRY_H_
#define TERMBRIDGE_BROKER_CORE_TERMINAL_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/audit/audit_log.h"
#include "broker/recording/recording.h"
#include "broker/session/command_tracker.h"
#include "broker/session/containment.h"
#include "broker/session/shell_integration.h"
#include "broker/session/terminal.h"
#include "common/thread/named_thread.h"

namespace termbridge::core {

struct SessionRecord;

struct RegistryOptions {
  size_t ring_bytes = 8 << 20;
  int max_terminals_total = 64;
  int max_terminals_per_agent = 16;
  std::string shell;  // empty: resolved from $SHELL, then /bin/bash, then /bin/sh
  // Environment variables passed from the broker's own environment to children.
  // cwd must lie under one of these roots (empty: any existing absolute dir).
  std::vector<std::string> cwd_roots;
  // Environment names an agent may set (empty: any). Checked before spawning.
  std::vector<std::string> env_allow;
  // A terminal with no new output for this long is closed (zero: never).
  absl::Duration idle_timeout = absl::ZeroDuration();
  // A terminal is closed this long after it opened (zero: no limit).
  absl::Duration max_runtime = absl::ZeroDuration();
  // Finished sessions stay readable; beyond this many, the oldest are
  // forgotten (PM_TERM_NOT_FOUND), and exited terminals none of the kept
  // sessions use are dropped with their ring buffers.
  size_t max_finished_sessions = 256;
  // Exited terminals kept listed (each a record: exit state and the output
  // its ring held); beyond this many, the oldest are forgotten with their
  // sessions.
  size_t max_closed_terminals = 256;
  // Output kept by exited terminals, in bytes, all together; past it, the
  // oldest exited terminals drop theirs (reads report a gap), newest kept.
  size_t max_closed_output_bytes = 64 << 20;
  // Contains each terminal's processes (may be null: then only what stays
  // in the terminal's session ends with it). See broker/session/containment.h.
  session::Warden* warden = nullptr;
  // Starts each terminal's program; empty: a real PTY (PtyProcess::Spawn).
  // Tests give a fake (broker/session/testing/fake_process.h).
  session::ProcessSpawner spawner;
  // Directory for shell integration rc files. Empty: every command runs in a
  // terminal of its own (`shell -c`), ending with its process.
  std::string runtime_dir;
  // How long a new shell may take to draw its first prompt.
  absl::Duration shell_ready_timeout = absl::Seconds(5);
  // Where terminal_opened, command_exited and terminal_closed records go (may be null).
  audit::AuditSink* audit = nullptr;
  // Records every terminal's output (may be null: then reads older than the
  // ring are a gap). A recording that cannot start leaves its terminal
  // unrecorded, never unopened.
  recording::RecordingStore* recordings = nullptr;
  std::vector<std::string> env_passthrough = {"PATH", "HOME",   "USER", "LOGNAME",
                                              "LANG", "LC_ALL", "TZ"};
  // Set in every terminal after the passthrough (and before what the agent
  // sets): keeps pagers, prompts and configuration-run programs out of the
  // way. Defaults: kAgentTerminalEnv.
  std::vector<std::pair<std::string, std::string>> terminal_env;
  // Runs after a command's terminal is chosen (or opened) and before the
  // command's bytes are written into it; an error stops the command there.
  // The visibility guarantee lives here: it waits for a viewer.
  std::function<absl::Status(const SessionRecord&)> before_send;
};

// What terminals for agents start with besides the passthrough: no pager
// (PAGER=cat and the per-program pagers), less without shell escapes
// (LESSSECURE=1), no credential prompts from git, and git's
// configuration-run programs off (GIT_CONFIG_COUNT entries override the
// repository's own config; see docs/security.md).
const std::vector<std::pair<std::string, std::string>>& AgentTerminalEnv();

// One request to run a command (or open a terminal), the one shape it has
// from the service to the PTY: broker/service fills it from the wire, the
// gate judges it and completes it (session_id, as_input, new_terminal), the
// registry runs it. Adding a field: docs/ARCHITECTURE.md, "Adding a field".
struct ExecuteRequest {
  std::string agent_id;  // who asks: named by its credentials, never by the request
  std::string command;   // a shell command line; empty with open_only
  std::vector<std::string> args;
  std::string cwd;
  std::vector<std::pair<std::string, std::string>> env;
  std::string terminal_id;  // send into this terminal instead of opening one
  bool open_only = false;
  std::string session_id;  // preset id (minted before an approval wait); empty: new
  // How the line was judged: as input for the command running in
  // terminal_id (true) or as a new command. The registry delivers it only
  // that way; if the terminal changed meanwhile, nothing is sent.
  bool as_input = false;
  // With as_input: the command session it was judged as input for; another
  // command running by then gets nothing.
  std::string input_session;
  // Judged for a new terminal (no target): never sent to an existing one.
  bool new_terminal = false;
  // A name for the terminal it opens (cleaned: terminal_names.h); empty:
  // derived from the cwd and the command.
  std::string terminal_name;
  // A person opens a terminal of their own (OpenForPerson): who. agent_id
  // is then empty, and no agent reaches it until it is handed over.
  std::string person;
  // Where it came from, for the audit and the approval surfaces.
  std::string lane = "interactive";
  std::string trace_id;
  std::string request_id;
};

// The line a command's terminal receives: the command, then its arguments
// shell-quoted.
std::string CommandLine(const ExecuteRequest& params);

// One execution: a command sent into a terminal.
struct SessionRecord {
  std::string session_id;
  std::string terminal_id;
  std::string agent_id;
  std::string command;
  std::string cwd;
  absl::Time started_at;
  uint64_t start_offset = 0;  // the terminal's offset when the command was sent
  std::shared_ptr<session::Terminal> terminal;
  // The terminal's holder generation when the command was placed: what the
  // command writes is refused once the terminal has changed hands since.
  uint64_t holder_generation = 0;
  // Set when the terminal is a persistent integrated shell: the command's
  // output range and exit come from it, not from the terminal's process.
  std::shared_ptr<session::CommandTracker> tracker;
  // How commands reach that shell (its command file and trigger).
  std::shared_ptr<const session::ShellLaunch> shell;
  // The terminal's name and, for a person's own terminal, who opened it
  // (ListTerminals and List fill them).
  std::string terminal_name;
  std::string person;
};

// The PM_TERM error for what a terminal said about input written to it (or a
// resize): FailedPrecondition, its program exited (NOT_FOUND: nothing more
// can be delivered); DeadlineExceeded, the program has not read the input
// already waiting (TIMEOUT, phase input: retry once it reads); Aborted, the
// terminal changed hands (CONFLICT, reason handed_over); Cancelled, a person
// locked it user_only (DECLINED). Any other status comes back unchanged; OK
// stays OK.
absl::Status TerminalInputError(const absl::Status& status, const std::string& terminal_id,
                                size_t bytes);

// Where a command sent now would go, and what would read it.
struct CommandTarget {
  std::string terminal_id;  // "" for a new terminal
  // A command runs there: the line is input for it, not a new command.
  bool input = false;
  // With input: executable names in the terminal's foreground process group
  // (or, while only the shell holds it, the programs of the running line).
  std::vector<std::string> readers;
  // With input: false when what reads the line cannot be known (only the
  // shell is in the foreground and the running line is unknown or runs words
  // known only at run time): the gate then asks.
  bool readers_known = true;
  // With input: false when the shell cannot discard what a program leaves
  // unread (plain sh), so agent input is never delivered.
  bool takes_agent_input = true;
  // A program in the terminal reads a line with echo off (Terminal::
  // secret_prompt): only a person types it, so the gate refuses at once
  // whatever the line would be (input, or a command whose trigger keys would
  // land in the secret).
  bool secret_prompt = false;
  // The directory the command would run in (the shell's current directory
  // for an existing terminal); "" when unknown.
  std::string cwd;
  // The directory the terminal was opened in: the workspace its reads are
  // scoped to when no cwd_roots are set.
  std::string workspace;
  // The request named a terminal that is not the caller's (unknown, another
  // agent's, or a person's not handed to it): nothing else is planned.
  bool foreign = false;
  // The shell that reads the line, and its kind (session::ResolvedShellKind):
  // only bash reads lines as the policy's parser does; another shell gets
  // only lines every shell reads alike without a person (TightenDecision).
  std::string shell = "bash";
  session::ShellKind shell_kind = session::ShellKind::kBash;
  // An existing bash terminal's state as its shell wrote it at its first
  // prompt and after its last command (shell_state.h), read when a command
  // (not input) is planned; nullopt when a file could not be read. Only when
  // shell_state_known: a new terminal, one before its first prompt, or a
  // shell that writes none, has none.
  // A person's command is running there (typed, not the agent's).
  bool person_command = false;
  // With input: the agent's command session that reads it ("" when unknown).
  std::string input_session;
  bool shell_state_known = false;
  std::optional<std::string> initial_shell_state;
  std::optional<std::string> shell_state;
};

// What the command gate needs of the terminals: where a command would go,
// and running it once it is judged. TerminalRegistry is the broker's; the
// gate's unit tests give it a fake (no process is started).
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Where a command with these params would be sent right now (the explicit
  // target, or the agent's idle default terminal; "" for a new one), and
  // what would read it there.
  virtual CommandTarget PlanCommand(const ExecuteRequest& params) const = 0;
  // Runs a judged command: into its planned terminal, or a new one.
  virtual absl::StatusOr<SessionRecord> Execute(const ExecuteRequest& params) = 0;
  // The limits the gate checks against (env_allow, cwd_roots).
  virtual const RegistryOptions& options() const = 0;
};

class TerminalRegistry : public CommandRunner {
 public:
  explicit TerminalRegistry(RegistryOptions options);
  ~TerminalRegistry() override;  // closes every terminal

  absl::StatusOr<SessionRecord> Execute(const ExecuteRequest& params) override;
  CommandTarget PlanCommand(const ExecuteRequest& params) const override;
  // Looks up a session or terminal owned by `agent_id` (empty agent_id: any owner,
  // for operators). Unknown or foreign ids are PM_TERM_NOT_FOUND.
  absl::StatusOr<SessionRecord> FindSession(const std::string& session_id,
                                            const std::string& agent_id) const;
  absl::StatusOr<SessionRecord> FindTerminal(const std::string& terminal_id,
                                             const std::string& agent_id) const;
  // Closes a terminal, killing every process started in it. It stays listed
  // (exited) so the tail of its output remains readable (see
  // max_closed_terminals). `reason` goes to the audit log and to
  // ClosedReason ("agent_terminate", "operator_close", ...).
  absl::Status CloseTerminal(const std::string& terminal_id, const std::string& agent_id,
                             const std::string& reason = "agent_terminate");
  std::vector<SessionRecord> List(const std::string& agent_id) const;
  // A terminal of `person`'s own, in `cwd` (absolute, existing; empty: the
  // broker's HOME), named `name` (empty: from its cwd). No agent reaches it
  // until HandOver.
  absl::StatusOr<SessionRecord> OpenForPerson(const std::string& person, const std::string& name,
                                              const std::string& cwd);
  // Names a terminal (cleaned; empty after cleaning is InvalidRequest).
  absl::StatusOr<SessionRecord> Rename(const std::string& terminal_id, const std::string& name);
  // Gives a person's running terminal to `agent_id`, which then reaches it
  // by its id (never as its default terminal), or takes it back (empty).
  // An agent's own terminal is never handed to another agent.
  absl::StatusOr<SessionRecord> HandOver(const std::string& terminal_id,
                                         const std::string& agent_id);
  // One record per terminal (session_id empty; command: its latest), for
  // surfaces that show terminals.
  std::vector<SessionRecord> ListTerminals() const;
  // A counter that moves whenever a terminal opens, exits or is forgotten.
  uint64_t changes() const;
  // Blocks until changes() differs from `seen` or `timeout` passes; returns it.
  uint64_t WaitForChange(uint64_t seen, absl::Duration timeout) const;
  // Closes every terminal; from then on no new one opens (a command gets
  // "ended"), and one still starting is closed once it is ready.
  void CloseAll();
  // Why a terminal was closed ("idle_timeout", "max_runtime", "agent_terminate",
  // "operator_close", "broker_shutdown"), or "" when it ended by itself or runs.
  std::string ClosedReason(const std::string& terminal_id) const;

  const RegistryOptions& options() const override { return options_; }
  const std::string& shell() const { return shell_; }

 private:
  struct TerminalFate;
  // Chooses the command's terminal, or opens one (the spawn and its audit
  // record outside the lock, its place held against the limits meanwhile).
  absl::StatusOr<SessionRecord> PlaceCommand(const ExecuteRequest& params,
                                             std::shared_ptr<TerminalFate>* new_fate)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Counts a terminal being opened for `agent_id` against the limits, or
  // refuses (limit_reached). ReleaseLocked ends the count.
  absl::Status ReserveLocked(const std::string& agent_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseLocked(const std::string& agent_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  struct OpenedTerminal {
    std::shared_ptr<session::Terminal> terminal;
    std::shared_ptr<session::CommandTracker> tracker;   // null for a one-shot terminal
    std::shared_ptr<const session::ShellLaunch> shell;  // null for a one-shot terminal
  };
  // Spawns a terminal (a persistent integrated shell, or `shell -c` for one
  // command). Holds no lock.
  absl::StatusOr<OpenedTerminal> OpenTerminal(const ExecuteRequest& params,
                                              const std::string& terminal_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  int CountTerminals(const std::string& agent_id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::string PlannedTerminalLocked(const ExecuteRequest& params) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Applies max_finished_sessions, max_closed_terminals and max_closed_output_bytes.
  void PruneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Closes terminals past idle_timeout or max_runtime, once a second.
  void WatchdogLoop();
  // Records terminal_closed / command_exited once the terminal's process ends.
  void WatchExit(const std::string& terminal_id, const std::string& agent_id,
                 const std::shared_ptr<session::Terminal>& terminal,
                 const std::shared_ptr<TerminalFate>& fate, bool record_command_exit);
  // Sends the command line into a persistent shell (outside the lock).
  absl::Status SendCommand(const ExecuteRequest& params, SessionRecord* record);

  void BumpChanges();

  const RegistryOptions options_;
  const std::string shell_;
  const session::ShellKind shell_kind_;  // session::ResolvedShellKind(shell_)
  // Declared before the terminals: exit callbacks on their reader threads use it.
  mutable absl::Mutex changes_mu_;
  uint64_t changes_ ABSL_GUARDED_BY(changes_mu_) = 0;
  mutable absl::Mutex mu_;
  struct TerminalEntry {
    std::string agent_id;
    std::shared_ptr<session::Terminal> terminal;
    std::string last_session_id;
    absl::Time opened_at;
    uint64_t seen_offset = 0;  // output offset at the last watchdog pass
    absl::Time last_activity;  // when seen_offset last changed
    std::shared_ptr<TerminalFate> fate;
    std::shared_ptr<session::CommandTracker> tracker;
    std::shared_ptr<const session::ShellLaunch> shell;
    std::string cwd;
    std::string name;
    bool name_given = false;  // given or renamed: not re-derived from the first command
    std::string person;       // set for a person's own terminal
  };
  // Who holds the terminal and what it is called: what every record of it
  // carries (FindTerminal's is this and the last session).
  SessionRecord HandleRecordLocked(const std::string& terminal_id, const TerminalEntry& entry) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The terminal record ListTerminals and the changes return.
  SessionRecord TerminalRecordLocked(const std::string& terminal_id,
                                     const TerminalEntry& entry) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::map<std::string, TerminalEntry> terminals_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, SessionRecord> sessions_ ABSL_GUARDED_BY(mu_);
  // Each agent's default terminal for new commands (docs/CONTRACT.md,
  // "Identity and reuse").
  std::map<std::string, std::string> default_terminal_ ABSL_GUARDED_BY(mu_);
  // Terminals being opened (spawning outside the lock), per agent.
  std::map<std::string, int> opening_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // CloseAll ran: no new terminal opens
  thread::NamedThread
      watchdog_;  // "tb-watchdog": idle and runtime limits; joined by ~TerminalRegistry
};

// Resolves the shell used for terminals (docs/configuration.md, `shell`): `configured` if
// set, else $SHELL when it is bash, zsh or sh and executable, else /bin/bash,
// else /bin/sh.
std::string ResolveShell(const std::string& configured);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_TERMINAL_REGISTRY_H_
