// TerminalRegistry: ids, ownership and limits for the broker's terminals.
#include "broker/core/terminal_registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/audit_guard.h"
#include "broker/core/problem.h"
#include "broker/core/terminal_names.h"
#include "broker/session/shell_integration.h"
#include "common/contract/errors.h"
#include "common/contract/request.h"
#include "common/policy/policy.h"
#include "common/workdir/git_discovery.h"
#include "spdlog/spdlog.h"

namespace termbridge::core {
namespace {

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// cwd must be an existing absolute directory, under an allowed root if any
// are configured (compared after resolving symlinks and "..").
absl::Status CheckCwd(const std::string& cwd, const std::vector<std::string>& roots) {
  if (cwd.empty()) return absl::OkStatus();
  struct stat st;
  if (cwd[0] != '/' || stat(cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Fail(Problem::kInvalidRequest,
                absl::StrCat("cwd is not an existing absolute directory: ", cwd),
                {{"field", "runtime.cwd"}});
  }
  if (roots.empty()) return absl::OkStatus();
  char resolved[PATH_MAX];
  if (realpath(cwd.c_str(), resolved) == nullptr) {
    return Fail(Problem::kInvalidRequest, "cwd cannot be resolved", {{"field", "runtime.cwd"}});
  }
  std::string real = resolved;
  for (const std::string& root : roots) {
    char root_resolved[PATH_MAX];
    std::string r = realpath(root.c_str(), root_resolved) ? root_resolved : root;
    if (real == r || (real.size() > r.size() && real.compare(0, r.size(), r) == 0 &&
                      (r == "/" || real[r.size()] == '/'))) {
      return absl::OkStatus();
    }
  }
  return Fail(Problem::kInvalidRequest, absl::StrCat("cwd ", cwd, " is outside the allowed roots"),
              {{"field", "runtime.cwd"}, {"limit", "cwd_roots"}, {"allowed_roots", roots}});
}

// The programs a command line runs, wrappers included ("sudo less x": sudo,
// less). *known is false when the line is empty or unparsed, or a program
// word is known only at run time ($P, eval "$x").
std::vector<std::string> ProgramsOf(const std::string& line, bool* known) {
  std::vector<std::string> out;
  *known = false;
  if (line.empty()) return out;
  policy::ParsedLine parsed = policy::ParseLine(line);
  if (parsed.error) return out;
  *known = true;
  for (const policy::SimpleCommand& command : parsed.commands) {
    // A program word known only at run time ($P, $(...)); arguments that are
    // do not change which program reads.
    if (command.program.empty() || command.program.find_first_of("$`(") != std::string::npos) {
      *known = false;
    }
    for (const std::string& via : command.via) {
      // A shell given its code (sh -c CODE) runs that code, whose programs
      // are listed too; it reads no commands from its input.
      if (absl::EndsWith(via, " -c")) continue;
      out.push_back(via.substr(0, via.find(' ')));
    }
    if (!command.program.empty()) out.push_back(command.program);
  }
  return out;
}

// A name set twice (PATH passed through, then the git guard's PATH) keeps
// its last value: getenv(3) would read the first, bash the last.
void KeepLastOfEachName(std::vector<std::pair<std::string, std::string>>* env) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& kv : *env) {
    auto same =
        std::find_if(out.begin(), out.end(), [&kv](const auto& o) { return o.first == kv.first; });
    if (same != out.end()) {
      same->second = std::move(kv.second);
    } else {
      out.push_back(std::move(kv));
    }
  }
  *env = std::move(out);
}

}  // namespace

std::string CommandLine(const ExecuteRequest& params) {
  std::string line = params.command;
  for (const auto& arg : params.args) absl::StrAppend(&line, " ", session::ShellQuote(arg));
  return line;
}

const std::vector<std::pair<std::string, std::string>>& AgentTerminalEnv() {
  static const auto* env = new std::vector<std::pair<std::string, std::string>>{
      {"PAGER", "cat"},
      {"GIT_PAGER", "cat"},
      {"MANPAGER", "cat"},
      {"SYSTEMD_PAGER", "cat"},
      {"GH_PAGER", "cat"},
      {"AWS_PAGER", ""},
      {"PSQL_PAGER", "cat"},
      {"LESSSECURE", "1"},
      {"GIT_TERMINAL_PROMPT", "0"},
      // diff.external cannot be switched off this way (an empty value makes
      // git run "" and every diff die); the repository check asks instead.
      {"GIT_CONFIG_COUNT", "9"},
      {"GIT_CONFIG_KEY_0", "core.fsmonitor"},
      {"GIT_CONFIG_VALUE_0", "false"},
      {"GIT_CONFIG_KEY_1", "core.hooksPath"},
      {"GIT_CONFIG_VALUE_1", "/dev/null"},
      {"GIT_CONFIG_KEY_2", "core.pager"},
      {"GIT_CONFIG_VALUE_2", "cat"},
      {"GIT_CONFIG_KEY_3", "core.editor"},
      {"GIT_CONFIG_VALUE_3", "false"},
      // Signature checks run gpg.program (`git log` with log.showSignature).
      {"GIT_CONFIG_KEY_4", "log.showSignature"},
      {"GIT_CONFIG_VALUE_4", "false"},
      {"GIT_CONFIG_KEY_5", "gpg.program"},
      {"GIT_CONFIG_VALUE_5", "false"},
      {"GIT_CONFIG_KEY_6", "gpg.openpgp.program"},
      {"GIT_CONFIG_VALUE_6", "false"},
      {"GIT_CONFIG_KEY_7", "gpg.ssh.program"},
      {"GIT_CONFIG_VALUE_7", "false"},
      {"GIT_CONFIG_KEY_8", "gpg.x509.program"},
      {"GIT_CONFIG_VALUE_8", "false"},
  };
  return *env;
}

// Why a terminal ended, readable from the terminal's reader thread without the
// registry lock (the exit callback must not take it: see Terminal::Subscribe).
struct TerminalRegistry::TerminalFate {
  absl::Mutex mu;
  std::string reason ABSL_GUARDED_BY(mu);
  std::string last_session_id ABSL_GUARDED_BY(mu);
  std::atomic<bool> recorded{false};
  int subscription = 0;

  void SetReasonIfUnset(const std::string& why) {
    absl::MutexLock lock(&mu);
    if (reason.empty()) reason = why;
  }
  std::string Reason() {
    absl::MutexLock lock(&mu);
    return reason;
  }
};

std::string ResolveShell(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv("SHELL"); env != nullptr) {
    std::string shell = env;
    std::string base = shell.substr(shell.rfind('/') + 1);
    if ((base == "bash" || base == "zsh" || base == "sh") && IsExecutable(shell)) return shell;
  }
  if (IsExecutable("/bin/bash")) return "/bin/bash";
  return "/bin/sh";
}

TerminalRegistry::TerminalRegistry(RegistryOptions options)
    : options_(std::move(options)),
      shell_(ResolveShell(options_.shell)),
      shell_kind_(session::ResolvedShellKind(shell_)) {
  if (options_.idle_timeout > absl::ZeroDuration() || options_.max_runtime > absl::ZeroDuration()) {
    watchdog_ = thread::NamedThread("tb-watchdog", [this] { WatchdogLoop(); });
  }
}

TerminalRegistry::~TerminalRegistry() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  watchdog_.Join();
  CloseAll();
}

void TerminalRegistry::WatchdogLoop() {
  for (;;) {
    std::vector<std::pair<std::string, std::shared_ptr<session::Terminal>>> expired;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1));
      if (stopping_) return;
      absl::Time now = absl::Now();
      for (auto& [id, entry] : terminals_) {
        if (!entry.fate->Reason().empty() || !entry.terminal->exit_state().running) continue;
        uint64_t offset = entry.terminal->end_offset();
        if (offset != entry.seen_offset) {
          entry.seen_offset = offset;
          entry.last_activity = now;
        }
        if (options_.max_runtime > absl::ZeroDuration() &&
            now - entry.opened_at >= options_.max_runtime) {
          entry.fate->SetReasonIfUnset("max_runtime");
        } else if (options_.idle_timeout > absl::ZeroDuration() &&
                   now - entry.last_activity >= options_.idle_timeout) {
          entry.fate->SetReasonIfUnset("idle_timeout");
        }
        if (!entry.fate->Reason().empty()) expired.emplace_back(id, entry.terminal);
      }
    }
    // Closing waits for the process group to die: never under the lock.
    for (auto& [id, terminal] : expired) {
      spdlog::info("event=terminal_expired terminal_id={} reason={}", id, ClosedReason(id));
      terminal->Close().IgnoreError();
    }
  }
}

std::string TerminalRegistry::ClosedReason(const std::string& terminal_id) const {
  absl::MutexLock lock(&mu_);
  auto it = terminals_.find(terminal_id);
  return it == terminals_.end() ? "" : it->second.fate->Reason();
}

void TerminalRegistry::WatchExit(const std::string& terminal_id, const std::string& agent_id,
                                 const std::shared_ptr<session::Terminal>& terminal,
                                 const std::shared_ptr<TerminalFate>& fate,
                                 bool record_command_exit) {
  audit::AuditSink* audit = options_.audit;
  // A raw pointer, not a shared one: the callback runs on the terminal's own
  // reader thread, which must never end up owning (and destroying) it. The
  // terminal outlives its callbacks: its destructor joins that thread.
  session::Terminal* t = terminal.get();
  auto record = [this, audit, terminal_id, agent_id, fate, t, record_command_exit]() {
    session::ExitState state = t->exit_state();
    if (state.running || fate->recorded.exchange(true)) return;
    BumpChanges();
    std::string reason = fate->Reason();
    std::string session_id;
    {
      absl::MutexLock lock(&fate->mu);
      session_id = fate->last_session_id;
    }
    nlohmann::json exit = {{"terminal_id", terminal_id},
                           {"session_id", session_id},
                           {"agent_id", agent_id},
                           {"exit_code", state.exit_code >= 0 ? nlohmann::json(state.exit_code)
                                                              : nlohmann::json(nullptr)},
                           {"signal", state.term_signal > 0 ? nlohmann::json(state.term_signal)
                                                            : nlohmann::json(nullptr)},
                           {"output", {{"from", 0}, {"to", t->end_offset()}}}};
    spdlog::info("event=terminal_exited terminal_id={} reason={}", terminal_id,
                 reason.empty() ? "exited" : reason);
    session::RemoveTerminalDir(options_.runtime_dir, terminal_id);
    if (audit == nullptr) return;
    // Records of what already happened: kept until the log can take them.
    if (record_command_exit) AuditAfterTheFact(audit, audit::kCommandExited, exit);
    AuditAfterTheFact(audit, audit::kTerminalClosed,
                      {{"terminal_id", terminal_id},
                       {"agent_id", agent_id},
                       {"reason", reason.empty() ? "exited" : reason}});
  };
  fate->subscription = terminal->Subscribe(record);
  record();  // it may have exited before the subscription
}

int TerminalRegistry::CountTerminals(const std::string& agent_id) const {
  int count = 0;
  for (const auto& [id, entry] : terminals_) {
    if (entry.agent_id == agent_id && entry.terminal->exit_state().running) ++count;
  }
  return count;
}

absl::Status TerminalRegistry::ReserveLocked(const std::string& agent_id) {
  if (closing_) {
    return Fail(Problem::kEnded, "the broker is closing its terminals; no new one opens");
  }
  int live_total = 0;
  for (const auto& [id, entry] : terminals_) {
    if (entry.terminal->exit_state().running) ++live_total;
  }
  for (const auto& [agent, opening] : opening_) live_total += opening;
  if (live_total >= options_.max_terminals_total) {
    return Fail(Problem::kLimitReached, "the broker's terminal limit is reached",
                {{"limit", "max_terminals_total"}, {"value", options_.max_terminals_total}});
  }
  auto opening = opening_.find(agent_id);
  if (CountTerminals(agent_id) + (opening == opening_.end() ? 0 : opening->second) >=
      options_.max_terminals_per_agent) {
    return Fail(
        Problem::kLimitReached,
        "this agent's terminal limit is reached; terminate a terminal first",
        {{"limit", "max_terminals_per_agent"}, {"value", options_.max_terminals_per_agent}});
  }
  ++opening_[agent_id];
  return absl::OkStatus();
}

void TerminalRegistry::ReleaseLocked(const std::string& agent_id) {
  auto it = opening_.find(agent_id);
  if (it != opening_.end() && --it->second <= 0) opening_.erase(it);
}

absl::StatusOr<TerminalRegistry::OpenedTerminal> TerminalRegistry::OpenTerminal(
    const ExecuteRequest& params, const std::string& terminal_id) {
  session::SpawnOptions spawn;
  bool persistent = false;
  bool integrated = false;
  std::shared_ptr<const session::ShellLaunch> shell;
  session::ShellChannel channel;
  if (!options_.runtime_dir.empty() && session::DetectShell(shell_) != session::ShellKind::kOther) {
    absl::StatusOr<session::ShellLaunch> launch =
        session::PrepareShell(shell_, options_.runtime_dir, terminal_id);
    if (!launch.ok()) {
      return Fail(Problem::kInternal, "shell integration could not be prepared",
                  {{"reason", std::string(launch.status().message())}});
    }
    spawn.argv = launch->argv;
    persistent = true;
    integrated = launch->integrated;
    channel.mark_secret = launch->secret;
    channel.ack_fifo = launch->ack_fifo;
    audit::AuditSink* audit = options_.audit;
    channel.on_discarded = [audit, terminal_id](size_t bytes) {
      if (audit == nullptr) return;
      AuditAfterTheFact(audit, audit::kInputDiscarded,
                        {{"terminal_id", terminal_id}, {"bytes", bytes}});
    };
    shell = std::make_shared<const session::ShellLaunch>(*std::move(launch));
  } else if (params.open_only) {
    spawn.argv = {shell_, "-i"};
  } else {
    spawn.argv = {shell_, "-c", CommandLine(params)};
  }
  spawn.cwd = params.cwd;
  spawn.warden = options_.warden;
  spawn.containment_id = terminal_id;
  for (const auto& name : options_.env_passthrough) {
    if (const char* value = std::getenv(name.c_str()); value != nullptr) {
      spawn.env.emplace_back(name, value);
    }
  }
  spawn.env.emplace_back("TERM", "xterm-256color");
  spawn.env.emplace_back("TERMBRIDGE_TERMINAL_ID", terminal_id);
  for (const auto& kv : options_.terminal_env) spawn.env.push_back(kv);
  // What the agent sets was judged by the command gate (named variables ask).
  for (const auto& kv : params.env) spawn.env.push_back(kv);
  // The shell's own start-up variables last: nothing overrides them.
  if (shell) {
    for (const auto& kv : shell->extra_env) spawn.env.push_back(kv);
  }
  KeepLastOfEachName(&spawn.env);
  std::shared_ptr<session::OutputArchive> archive;
  if (options_.recordings != nullptr) {
    recording::RecordingInfo info;
    info.terminal_id = terminal_id;
    info.agent_id = params.agent_id;
    info.cwd = params.cwd;
    info.shell = shell_;
    info.cols = spawn.cols;
    info.rows = spawn.rows;
    absl::StatusOr<std::shared_ptr<recording::Recording>> started =
        options_.recordings->Start(std::move(info));
    if (started.ok()) {
      archive = *std::move(started);
    } else {
      spdlog::warn("event=recording_unavailable terminal_id={} error=\"{}\"", terminal_id,
                   std::string(started.status().message()));
    }
  }
  auto terminal = session::Terminal::Start(terminal_id, spawn, options_.ring_bytes, channel,
                                           std::move(archive), options_.spawner);
  if (!terminal.ok()) {
    if (shell) session::RemoveTerminalDir(options_.runtime_dir, terminal_id);
    return Fail(Problem::kInternal, "the terminal could not be started",
                {{"reason", std::string(terminal.status().message())}});
  }
  OpenedTerminal opened;
  opened.terminal = std::shared_ptr<session::Terminal>(std::move(*terminal));
  opened.shell = shell;
  if (persistent) {
    audit::AuditSink* audit = options_.audit;
    std::string agent_id = params.agent_id;
    opened.tracker = std::make_shared<session::CommandTracker>(
        opened.terminal, integrated,
        [audit, terminal_id, agent_id](const std::string& session_id,
                                       const session::CommandState& state) {
          spdlog::info(
              "event=command_exited terminal_id={} session_id={} exit_code={} "
              "completion={}",
              terminal_id, session_id, state.exit_code, state.completion);
          if (audit == nullptr) return;
          AuditAfterTheFact(audit, audit::kCommandExited,
                            {{"terminal_id", terminal_id},
                             {"session_id", session_id},
                             {"agent_id", agent_id},
                             {"exit_code", state.exit_code >= 0 ? nlohmann::json(state.exit_code)
                                                                : nlohmann::json(nullptr)},
                             {"signal", state.term_signal > 0 ? nlohmann::json(state.term_signal)
                                                              : nlohmann::json(nullptr)},
                             {"completion", state.completion},
                             // Where its output is in the terminal's recording (termbridge
                             // recordings export): the bytes [from, to).
                             {"output",
                              {{"from", state.output_start},
                               {"to", state.end_offset.value_or(state.output_start)}}}});
        });
  }
  return opened;
}

absl::StatusOr<SessionRecord> TerminalRegistry::Execute(const ExecuteRequest& params) {
  if (absl::Status cwd = CheckCwd(params.cwd, options_.cwd_roots); !cwd.ok()) return cwd;
  std::shared_ptr<TerminalFate> new_fate;
  absl::StatusOr<SessionRecord> record = PlaceCommand(params, &new_fate);
  if (!record.ok()) return record;
  if (new_fate) {
    WatchExit(record->terminal_id, params.agent_id, record->terminal, new_fate,
              /*record_command_exit=*/record->tracker == nullptr);
  }
  if (options_.before_send && !params.open_only) {
    if (absl::Status ready = options_.before_send(*record); !ready.ok()) return ready;
    // The wait for a viewer can be long: a terminal that changed hands
    // meanwhile (even back to this agent) or that a person locked does not
    // take this command.
    absl::MutexLock lock(&mu_);
    auto it = terminals_.find(record->terminal_id);
    if (it == terminals_.end() || it->second.agent_id != params.agent_id ||
        record->terminal->holder_generation() != record->holder_generation) {
      return Fail(Problem::kConflict,
                  "the terminal was handed over while the command waited for a viewer; the "
                  "command was not sent",
                  {{"terminal_id", record->terminal_id}, {"reason", "handed_over"}});
    }
    if (record->terminal->lock() == session::LockMode::kUserOnly) {
      return Fail(Problem::kDeclined,
                  absl::StrCat("terminal ", record->terminal_id,
                               " became user_only while the command waited for a viewer: a "
                               "person holds its input; the command was not run"),
                  {{"terminal_id", record->terminal_id}, {"lock", "user_only"}});
    }
  }
  if (absl::Status sent = SendCommand(params, &*record); !sent.ok()) return sent;
  absl::MutexLock lock(&mu_);
  TerminalEntry& entry = terminals_[record->terminal_id];
  if (!entry.name_given && entry.person.empty() && entry.last_session_id.empty() &&
      !params.open_only) {
    entry.name = DerivedTerminalName(entry.cwd, params.command);  // its first command
  }
  record->terminal_name = entry.name;
  record->person = entry.person;
  entry.last_session_id = record->session_id;
  {
    TerminalFate& fate = *terminals_[record->terminal_id].fate;
    absl::MutexLock fate_lock(&fate.mu);
    fate.last_session_id = record->session_id;
  }
  if (sessions_.count(record->session_id) == 0) sessions_[record->session_id] = *record;
  PruneLocked();
  return record;
}

void TerminalRegistry::PruneLocked() {
  auto finished = [](const SessionRecord& r) {
    if (r.tracker) {
      std::optional<session::CommandState> state = r.tracker->Get(r.session_id);
      if (state) return state->finished;
    }
    return !r.terminal->exit_state().running;
  };
  std::vector<std::pair<absl::Time, std::string>> done;
  for (const auto& [id, record] : sessions_) {
    if (finished(record)) done.emplace_back(record.started_at, id);
  }
  // Exited terminals past max_closed_terminals go, oldest first, with the
  // sessions that ran in them; past max_closed_output_bytes, the oldest keep
  // no output.
  std::vector<std::pair<absl::Time, std::string>> closed;
  for (const auto& [id, entry] : terminals_) {
    session::ExitState state = entry.terminal->exit_state();
    if (!state.running) closed.emplace_back(state.exited_at, id);
  }
  std::sort(closed.begin(), closed.end());
  size_t kept_output = 0;
  for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
    const std::shared_ptr<session::Terminal>& terminal = terminals_[it->second].terminal;
    kept_output += terminal->ring_resident();
    if (kept_output > options_.max_closed_output_bytes) terminal->ForgetOutput();
  }
  if (done.size() <= options_.max_finished_sessions &&
      closed.size() <= options_.max_closed_terminals) {
    return;
  }
  std::sort(done.begin(), done.end());
  for (size_t i = 0; i + options_.max_finished_sessions < done.size(); ++i) {
    sessions_.erase(done[i].second);
  }
  if (closed.size() > options_.max_closed_terminals) {
    std::set<std::string> forget;
    for (size_t i = 0; i + options_.max_closed_terminals < closed.size(); ++i) {
      forget.insert(closed[i].second);
    }
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = forget.count(it->second.terminal_id) != 0 ? sessions_.erase(it) : std::next(it);
    }
  }
  // Exited terminals no kept session refers to go too (their rings are large).
  std::set<std::string> used;
  for (const auto& [id, record] : sessions_) used.insert(record.terminal_id);
  for (auto it = terminals_.begin(); it != terminals_.end();) {
    if (!it->second.terminal->exit_state().running && used.count(it->first) == 0) {
      for (auto d = default_terminal_.begin(); d != default_terminal_.end();) {
        d = d->second == it->first ? default_terminal_.erase(d) : std::next(d);
      }
      // Old records elsewhere (the gate's launches) may still hold it: it
      // keeps no output for them.
      it->second.terminal->ForgetOutput();
      it = terminals_.erase(it);
      BumpChanges();
    } else {
      ++it;
    }
  }
}

absl::Status TerminalInputError(const absl::Status& status, const std::string& terminal_id,
                                size_t bytes) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
      return Fail(Problem::kEnded, "the terminal's program has exited; the input was not delivered",
                  {{"terminal_id", terminal_id}, {"bytes", bytes}});
    case absl::StatusCode::kDeadlineExceeded:
      return Fail(Problem::kTimedOut, std::string(status.message()),
                  {{"terminal_id", terminal_id}, {"phase", "input"}});
    case absl::StatusCode::kPermissionDenied:  // Terminal::WriteAgentInput: a secret prompt
      return Fail(Problem::kDeclined,
                  "a program in this terminal is asking for a secret (terminal echo is off): "
                  "only a person types it; the input was not sent",
                  {{"terminal_id", terminal_id},
                   {"field", "input"},
                   {"bytes", bytes},
                   {"reason", "secret_prompt"}});
    case absl::StatusCode::kUnavailable:  // Terminal::WriteAgentInput: nothing runs to take it
      return Fail(Problem::kConflict, std::string(status.message()),
                  {{"terminal_id", terminal_id},
                   {"field", "input"},
                   {"bytes", bytes},
                   {"reason", "no_running_command"}});
    case absl::StatusCode::kAborted:  // Terminal::WriteAgentInput: no longer the agent's
      return Fail(Problem::kConflict,
                  "the terminal was handed over before this reached it; nothing was sent",
                  {{"terminal_id", terminal_id}, {"bytes", bytes}, {"reason", "handed_over"}});
    case absl::StatusCode::kCancelled:  // Terminal::WriteAgentInput: a person holds the input
      return Fail(Problem::kDeclined,
                  absl::StrCat("terminal ", terminal_id,
                               " is user_only: a person holds its input; nothing was sent"),
                  {{"terminal_id", terminal_id}, {"bytes", bytes}, {"lock", "user_only"}});
    default:
      return status;
  }
}

namespace {

// A command line written to a terminal: reported as Attach reports input
// (TerminalInputError); any other failure is a broken terminal.
absl::Status CommandWriteOutcome(const absl::Status& written, const std::string& terminal_id,
                                 size_t bytes) {
  switch (written.code()) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      return TerminalInputError(written, terminal_id, bytes);
    default:
      return Fail(Problem::kTerminalFailed, "writing to the terminal failed",
                  {{"terminal_id", terminal_id}, {"reason", std::string(written.message())}});
  }
}

}  // namespace

absl::Status TerminalRegistry::SendCommand(const ExecuteRequest& params, SessionRecord* record) {
  if (params.open_only) return absl::OkStatus();
  if (record->tracker == nullptr) {
    // A one-shot terminal runs its command itself; only "send" writes input.
    if (params.terminal_id.empty()) return absl::OkStatus();
    record->start_offset = record->terminal->end_offset();
    const std::string line = params.command + "\n";
    return CommandWriteOutcome(record->terminal->WriteAgentInput(line, record->holder_generation),
                               record->terminal_id, line.size());
  }
  // Wait for the prompt: a command typed before it would race the shell's
  // start-up marks. A shell that never prompts still gets the line.
  if (!record->tracker->WaitReady(options_.shell_ready_timeout)) {
    spdlog::warn("event=shell_not_ready terminal_id={} timeout_ms={}", record->terminal_id,
                 absl::ToInt64Milliseconds(options_.shell_ready_timeout));
  }
  const std::string line = CommandLine(params);
  std::optional<std::string> running = record->tracker->CurrentSession();
  if (running.has_value() != params.as_input ||
      (running && !params.input_session.empty() && *running != params.input_session)) {
    // Judged as input but the program has ended (the shell would run it), or
    // judged as a command but a program now reads the terminal.
    return Fail(Problem::kConflict,
                params.as_input ? "the command this input was for has ended; the input was not sent"
                                : "another command started in this terminal; the line was not sent",
                {{"terminal_id", record->terminal_id}, {"reason", "terminal_changed"}});
  }
  if (running) {
    // A command is still running: the line is input for it (answering a
    // prompt), and the caller follows that command's session. The command
    // gate judged it as input for the program that reads it.
    const uint64_t holder = record->holder_generation;  // this request's, not the session's
    {
      absl::MutexLock lock(&mu_);
      auto it = sessions_.find(*running);
      if (it != sessions_.end()) *record = it->second;
    }
    const std::string input = line + "\n";
    return CommandWriteOutcome(record->terminal->WriteAgentInput(input, holder),
                               record->terminal_id, input.size());
  }
  if (record->tracker->ForeignCommandRunning()) {
    // A person's command has the terminal: the trigger keys would reach
    // that program, and the agent's input is not taken there.
    return Fail(Problem::kConflict,
                "a person's command is running in this terminal; the agent's line is "
                "neither typed into it nor run after it",
                {{"terminal_id", record->terminal_id}, {"reason", "person_command_running"}});
  }
  // A new command: it goes to the shell whole through its command file, and
  // the trigger keys make the shell's line editor load and accept it; no
  // byte of it passes the line editor or the tty's line discipline.
  if (absl::Status written = session::WriteCommandFile(*record->shell, line); !written.ok()) {
    return Fail(absl::IsInvalidArgument(written) ? Problem::kInvalidRequest : Problem::kInternal,
                std::string(written.message()), {{"terminal_id", record->terminal_id}});
  }
  record->tracker->Begin(record->session_id);
  record->start_offset = record->tracker->Get(record->session_id)->write_offset;
  record->terminal->OpenAgentInput();
  return CommandWriteOutcome(
      record->terminal->WriteCommandTrigger(record->shell->trigger, record->holder_generation),
      record->terminal_id, line.size());
}

CommandTarget TerminalRegistry::PlanCommand(const ExecuteRequest& params) const {
  CommandTarget target;
  target.shell = shell_;
  target.shell_kind = shell_kind_;
  std::shared_ptr<session::Terminal> terminal;
  std::shared_ptr<const session::ShellLaunch> shell;
  std::shared_ptr<session::CommandTracker> tracker;
  std::string running_line;     // the agent's command the terminal runs, if known
  std::string running_session;  // and its session
  bool foreign = false;         // a person's command runs there
  {
    absl::ReaderMutexLock lock(&mu_);
    target.terminal_id = PlannedTerminalLocked(params);
    auto it = terminals_.find(target.terminal_id);
    if (!params.terminal_id.empty() &&
        (it == terminals_.end() || it->second.agent_id != params.agent_id)) {
      target.foreign = true;  // not the caller's: the gate refuses at once
      return target;
    }
    if (it != terminals_.end() && it->second.agent_id == params.agent_id) {
      terminal = it->second.terminal;
      shell = it->second.shell;
      tracker = it->second.tracker;
      target.workspace = it->second.cwd;
      target.input = it->second.tracker != nullptr &&
                     (it->second.tracker->Busy() || it->second.tracker->ForeignCommandRunning());
      foreign = target.input && it->second.tracker->ForeignCommandRunning();
      target.person_command = foreign;
      // The command running now (not the terminal's last recorded one: a new
      // command begins before it is recorded; until then it is unknown).
      std::optional<std::string> current =
          target.input ? it->second.tracker->CurrentSession() : std::nullopt;
      auto running = current ? sessions_.find(*current) : sessions_.end();
      if (!foreign && running != sessions_.end()) {
        running_line = running->second.command;
        running_session = *current;
      }
    }
  }
  if (terminal == nullptr) {
    if (!params.cwd.empty()) {
      target.cwd = params.cwd;
    } else if (char here[PATH_MAX]; getcwd(here, sizeof here) != nullptr) {
      target.cwd = here;  // a new terminal starts where the broker runs
    }
    target.workspace = target.cwd;
    return target;
  }
  char path[64], cwd[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/cwd", static_cast<int>(terminal->pid()));
  ssize_t n = readlink(path, cwd, sizeof cwd - 1);
  if (n > 0) target.cwd.assign(cwd, static_cast<size_t>(n));
  if (target.input) {
    // Who reads the line, now or before the command ends (input waits in
    // the tty for whoever reads next): the foreground programs, the
    // terminal's programs that left its session (setsid: no job control
    // keeps them from reading it), and every program the running command
    // line starts (`sleep 3; vim`: vim reads what is sent while sleep runs).
    // When the line's programs are not known (a person's command, a line not
    // yet recorded, program words known only at run time), the gate asks.
    target.readers = terminal->ForegroundPrograms();
    bool line_known = false;
    for (std::string& program : ProgramsOf(running_line, &line_known)) {
      target.readers.push_back(std::move(program));
    }
    for (std::string& program : terminal->DetachedPrograms()) {
      target.readers.push_back(std::move(program));
    }
    target.readers_known = line_known && !foreign;
    target.input_session = running_session;
    target.takes_agent_input = terminal->takes_agent_input();
  }
  if (terminal) target.secret_prompt = terminal->secret_prompt();
  // The shell's state matters to a command, not to input (the running
  // program reads it); before the first prompt nothing has changed it yet.
  if (shell != nullptr && !shell->state_file.empty() && !target.input && tracker != nullptr &&
      tracker->WaitReady(absl::ZeroDuration())) {
    constexpr size_t kMaxStateBytes = size_t{1} << 20;
    auto read = [](const std::string& file) -> std::optional<std::string> {
      absl::StatusOr<std::optional<std::string>> text = workdir::ReadBounded(file, kMaxStateBytes);
      return text.ok() ? *text : std::nullopt;
    };
    target.shell_state_known = true;
    target.initial_shell_state = read(shell->initial_state_file);
    target.shell_state = read(shell->state_file);
  }
  return target;
}

std::string TerminalRegistry::PlannedTerminalLocked(const ExecuteRequest& params) const {
  if (!params.terminal_id.empty() || params.open_only || params.new_terminal) {
    return params.terminal_id;
  }
  // The agent's default terminal, when it is alive, idle and not held by a
  // person (user_only): otherwise the command gets a terminal of its own.
  auto def = default_terminal_.find(params.agent_id);
  if (def == default_terminal_.end()) return "";
  auto it = terminals_.find(def->second);
  if (it != terminals_.end() && it->second.tracker != nullptr &&
      it->second.terminal->exit_state().running && !it->second.tracker->Busy() &&
      it->second.terminal->lock() != session::LockMode::kUserOnly &&
      !it->second.tracker->ForeignCommandRunning() && !it->second.terminal->secret_prompt() &&
      (params.cwd.empty() || params.cwd == it->second.cwd) && params.env.empty()) {
    return def->second;
  }
  return "";
}

absl::StatusOr<SessionRecord> TerminalRegistry::PlaceCommand(
    const ExecuteRequest& params, std::shared_ptr<TerminalFate>* new_fate) {
  SessionRecord record;
  record.session_id = params.session_id.empty() ? contract::NewId("s_") : params.session_id;
  record.agent_id = params.agent_id;
  record.command = params.command;
  record.cwd = params.cwd;
  record.started_at = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    std::string target = PlannedTerminalLocked(params);
    if (!target.empty()) {
      auto it = terminals_.find(target);
      if (it == terminals_.end() || it->second.agent_id != params.agent_id) {
        return Fail(Problem::kUnknownId, "unknown terminal_id " + target,
                    {{"terminal_id", target}});
      }
      if (!it->second.terminal->exit_state().running) {
        return Fail(Problem::kEnded, "the terminal has exited", {{"terminal_id", target}});
      }
      record.terminal_id = target;
      record.terminal = it->second.terminal;
      record.holder_generation = record.terminal->holder_generation();
      record.tracker = it->second.tracker;
      record.shell = it->second.shell;
      record.start_offset = record.terminal->end_offset();
      return record;
    }
    // A new terminal: its place is held against the limits while it starts.
    if (absl::Status room = ReserveLocked(params.agent_id); !room.ok()) return room;
  }
  // The spawn and the audit write (fdatasync) run outside the lock: other
  // requests do not wait for them.
  record.terminal_id = contract::NewId("t_");
  std::string cwd = params.cwd;
  if (cwd.empty()) {  // it starts where the broker runs
    if (char here[PATH_MAX]; getcwd(here, sizeof here) != nullptr) cwd = here;
  }
  std::string name = CleanTerminalName(params.terminal_name);
  bool name_given = !name.empty();
  if (!name_given) name = DerivedTerminalName(cwd, params.open_only ? "" : params.command);
  absl::StatusOr<OpenedTerminal> opened = OpenTerminal(params, record.terminal_id);
  absl::Status audited;
  if (opened.ok() && options_.audit != nullptr) {
    audited = options_.audit
                  ->Append(audit::kTerminalOpened, {{"terminal_id", record.terminal_id},
                                                    {"agent_id", params.agent_id},
                                                    {"person", params.person},
                                                    {"name", name},
                                                    {"shell", shell_},
                                                    {"persistent", opened->tracker != nullptr},
                                                    {"pid", opened->terminal->pid()},
                                                    {"cwd", params.cwd}})
                  .status();
  }
  if (!opened.ok() || !audited.ok()) {
    if (opened.ok()) opened->terminal->Close().IgnoreError();
    absl::MutexLock lock(&mu_);
    ReleaseLocked(params.agent_id);
    if (!opened.ok()) return opened.status();
    return Fail(Problem::kAuditUnavailable, "the audit log cannot be written; refusing to run",
                {{"reason", std::string(audited.message())}});
  }
  record.terminal = opened->terminal;
  record.holder_generation = record.terminal->holder_generation();
  record.tracker = opened->tracker;
  record.shell = opened->shell;
  TerminalEntry entry;
  entry.agent_id = params.agent_id;
  entry.terminal = record.terminal;
  entry.tracker = record.tracker;
  entry.shell = record.shell;
  entry.cwd = cwd;
  entry.name = name;
  entry.name_given = name_given;
  entry.person = params.person;
  record.terminal_name = name;
  record.person = params.person;
  entry.opened_at = entry.last_activity = absl::Now();
  entry.fate = std::make_shared<TerminalFate>();
  *new_fate = entry.fate;
  {
    absl::MutexLock lock(&mu_);
    ReleaseLocked(params.agent_id);
    if (!closing_) {
      terminals_[record.terminal_id] = std::move(entry);
      BumpChanges();
      if (record.tracker != nullptr && !params.open_only) {
        default_terminal_[params.agent_id] = record.terminal_id;
      }
      return record;
    }
  }
  // CloseAll ran while it started: it ends like the others did.
  record.terminal->Close().IgnoreError();
  return Fail(Problem::kEnded, "the broker closed its terminals while this one started",
              {{"terminal_id", record.terminal_id}});
}

absl::StatusOr<SessionRecord> TerminalRegistry::FindSession(const std::string& session_id,
                                                            const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(session_id);
  if (it == sessions_.end() || (!agent_id.empty() && it->second.agent_id != agent_id)) {
    return Fail(Problem::kUnknownId, "unknown session_id", {{"session_id", session_id}});
  }
  SessionRecord record = it->second;
  auto terminal = terminals_.find(record.terminal_id);
  if (terminal != terminals_.end()) {
    // A session in a terminal that changed hands since is not the agent's
    // any more: its output is the new holder's (or the person's).
    if (!agent_id.empty() && terminal->second.agent_id != agent_id) {
      return Fail(Problem::kUnknownId, "unknown session_id", {{"session_id", session_id}});
    }
    record.terminal_name = terminal->second.name;  // renamed since
  }
  return record;
}

absl::StatusOr<SessionRecord> TerminalRegistry::FindTerminal(const std::string& terminal_id,
                                                             const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = terminals_.find(terminal_id);
  if (it == terminals_.end() || (!agent_id.empty() && it->second.agent_id != agent_id)) {
    return Fail(Problem::kUnknownId, "unknown terminal_id " + terminal_id,
                {{"terminal_id", terminal_id}});
  }
  SessionRecord record = HandleRecordLocked(terminal_id, it->second);
  record.session_id = it->second.last_session_id;
  record.start_offset = 0;
  return record;
}

absl::Status TerminalRegistry::CloseTerminal(const std::string& terminal_id,
                                             const std::string& agent_id,
                                             const std::string& reason) {
  std::shared_ptr<session::Terminal> terminal;
  {
    absl::MutexLock lock(&mu_);
    auto it = terminals_.find(terminal_id);
    if (it == terminals_.end() || (!agent_id.empty() && it->second.agent_id != agent_id)) {
      return Fail(Problem::kUnknownId, "unknown terminal_id " + terminal_id,
                  {{"terminal_id", terminal_id}});
    }
    terminal = it->second.terminal;
    if (terminal->exit_state().running) it->second.fate->SetReasonIfUnset(reason);
  }
  // Closing waits for the process group to die: never under the registry lock.
  // The terminal stays listed (exited) so its output remains readable.
  absl::Status closed = terminal->Close();
  absl::MutexLock lock(&mu_);
  PruneLocked();  // keeps the closed ones within max_closed_terminals
  return closed;
}

void TerminalRegistry::BumpChanges() {
  absl::MutexLock lock(&changes_mu_);
  ++changes_;
}

uint64_t TerminalRegistry::changes() const {
  absl::MutexLock lock(&changes_mu_);
  return changes_;
}

uint64_t TerminalRegistry::WaitForChange(uint64_t seen, absl::Duration timeout) const {
  absl::MutexLock lock(&changes_mu_);
  auto changed = [this, seen]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(changes_mu_) { return changes_ != seen; };
  changes_mu_.AwaitWithTimeout(absl::Condition(&changed), timeout);
  return changes_;
}

SessionRecord TerminalRegistry::HandleRecordLocked(const std::string& terminal_id,
                                                   const TerminalEntry& entry) const {
  SessionRecord record;
  record.terminal_id = terminal_id;
  record.agent_id = entry.agent_id;
  record.terminal = entry.terminal;
  record.holder_generation = entry.terminal->holder_generation();  // with agent_id, under mu_
  record.terminal_name = entry.name;
  record.person = entry.person;
  return record;
}

SessionRecord TerminalRegistry::TerminalRecordLocked(const std::string& terminal_id,
                                                     const TerminalEntry& entry) const {
  SessionRecord record = HandleRecordLocked(terminal_id, entry);
  record.cwd = entry.cwd;
  record.started_at = entry.opened_at;
  record.tracker = entry.tracker;
  auto last = sessions_.find(entry.last_session_id);
  if (last != sessions_.end()) record.command = last->second.command;
  return record;
}

std::vector<SessionRecord> TerminalRegistry::ListTerminals() const {
  absl::MutexLock lock(&mu_);
  std::vector<SessionRecord> out;
  for (const auto& [id, entry] : terminals_) out.push_back(TerminalRecordLocked(id, entry));
  return out;
}

std::vector<SessionRecord> TerminalRegistry::List(const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  std::vector<SessionRecord> out;
  for (const auto& [id, record] : sessions_) {
    if (!agent_id.empty() && record.agent_id != agent_id) continue;
    auto terminal = terminals_.find(record.terminal_id);
    if (terminal != terminals_.end() && !agent_id.empty() &&
        terminal->second.agent_id != agent_id) {
      continue;  // handed away since (FindSession)
    }
    out.push_back(record);
    if (terminal != terminals_.end()) out.back().terminal_name = terminal->second.name;
  }
  return out;
}

absl::StatusOr<SessionRecord> TerminalRegistry::OpenForPerson(const std::string& person,
                                                              const std::string& name,
                                                              const std::string& cwd) {
  ExecuteRequest params;
  params.person = CleanTerminalName(person);  // shown as a name is
  if (params.person.empty()) params.person = "person";
  params.terminal_name = name;
  params.open_only = true;
  params.cwd = cwd;
  if (params.cwd.empty()) {
    const char* home = std::getenv("HOME");
    params.cwd = home != nullptr && home[0] == '/' ? home : "/";
  }
  // Any directory of the person's: cwd_roots bound agents (HandOver checks them).
  if (absl::Status checked = CheckCwd(params.cwd, {}); !checked.ok()) return checked;
  std::shared_ptr<TerminalFate> new_fate;
  absl::StatusOr<SessionRecord> record = PlaceCommand(params, &new_fate);
  if (!record.ok()) return record;
  WatchExit(record->terminal_id, "", record->terminal, new_fate,
            /*record_command_exit=*/record->tracker == nullptr);
  return record;
}

absl::StatusOr<SessionRecord> TerminalRegistry::Rename(const std::string& terminal_id,
                                                       const std::string& name) {
  std::string clean = CleanTerminalName(name);
  if (clean.empty()) {
    return Fail(Problem::kInvalidRequest, "the name has nothing printable in it",
                {{"field", "name"}});
  }
  SessionRecord record;
  {
    absl::MutexLock lock(&mu_);
    auto it = terminals_.find(terminal_id);
    if (it == terminals_.end()) {
      return Fail(Problem::kUnknownId, "unknown terminal_id " + terminal_id,
                  {{"terminal_id", terminal_id}});
    }
    it->second.name = clean;
    it->second.name_given = true;
    record = TerminalRecordLocked(terminal_id, it->second);
  }
  BumpChanges();
  return record;
}

absl::StatusOr<SessionRecord> TerminalRegistry::HandOver(const std::string& terminal_id,
                                                         const std::string& agent_id) {
  SessionRecord record;
  {
    absl::MutexLock lock(&mu_);
    auto it = terminals_.find(terminal_id);
    if (it == terminals_.end()) {
      return Fail(Problem::kUnknownId, "unknown terminal_id " + terminal_id,
                  {{"terminal_id", terminal_id}});
    }
    TerminalEntry& entry = it->second;
    if (entry.person.empty()) {
      // An agent's terminal holds that agent's work: it never changes hands.
      return Fail(Problem::kInvalidRequest,
                  "only a terminal a person opened is handed over; this one belongs to agent " +
                      entry.agent_id,
                  {{"terminal_id", terminal_id}, {"field", "terminal_id"}});
    }
    if (!entry.terminal->exit_state().running) {
      return Fail(Problem::kEnded, "the terminal has exited", {{"terminal_id", terminal_id}});
    }
    if (!agent_id.empty()) {
      // The agent works there as in a terminal of its own: inside the roots,
      // where it was opened and where its shell is now.
      if (absl::Status inside = CheckCwd(entry.cwd, options_.cwd_roots); !inside.ok()) {
        return inside;
      }
      char link[64], now[PATH_MAX];
      snprintf(link, sizeof link, "/proc/%d/cwd", static_cast<int>(entry.terminal->pid()));
      ssize_t n = readlink(link, now, sizeof now - 1);
      if (!options_.cwd_roots.empty()) {
        if (n <= 0) {
          return Fail(Problem::kInvalidRequest, "the shell's directory cannot be read",
                      {{"terminal_id", terminal_id}});
        }
        if (absl::Status inside =
                CheckCwd(std::string(now, static_cast<size_t>(n)), options_.cwd_roots);
            !inside.ok()) {
          return inside;
        }
      }
    }
    for (auto d = default_terminal_.begin(); d != default_terminal_.end();) {
      d = d->second == terminal_id ? default_terminal_.erase(d) : std::next(d);
    }
    entry.agent_id = agent_id;
    entry.terminal->ChangeHolder();  // what the previous holder opened on it ends
    record = TerminalRecordLocked(terminal_id, entry);
  }
  BumpChanges();
  return record;
}

void TerminalRegistry::CloseAll() {
  std::vector<std::shared_ptr<session::Terminal>> all;
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;  // a terminal still starting is closed when it is ready
    for (auto& [id, entry] : terminals_) {
      if (entry.terminal->exit_state().running) entry.fate->SetReasonIfUnset("broker_shutdown");
      all.push_back(entry.terminal);
    }
  }
  for (auto& terminal : all) terminal->Close().IgnoreError();
}

}  // namespace termbridge::core
