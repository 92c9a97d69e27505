// Tests for TerminalRegistry: ids, ownership, limits, and clean-up by pid.
#include "broker/core/terminal_registry.h"

#include <signal.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <thread>
#include <vector>

#include "broker/core/problem.h"
#include "gtest/gtest.h"
#include "tests/support/process_probe.h"

namespace termbridge::core {
namespace {

// A status's problem (kind and details); a status without one is internal.
ProblemInfo ProblemIn(const absl::Status& status) {
  std::optional<ProblemInfo> problem = ProblemOf(status);
  return problem ? *problem : ProblemInfo{};
}

ExecuteRequest CommandFor(const std::string& agent, const std::string& command) {
  ExecuteRequest params;
  params.agent_id = agent;
  params.command = command;
  return params;
}

std::string Output(const SessionRecord& record) {
  return record.terminal->Read(record.start_offset, 1 << 20).data;
}

TEST(TerminalRegistryTest, ExecuteMintsOpaqueIdsAndRunsTheCommand) {
  TerminalRegistry registry({});
  auto record = registry.Execute(CommandFor("a", "echo $((6*7))"));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->session_id.rfind("s_", 0), 0u);
  EXPECT_EQ(record->terminal_id.rfind("t_", 0), 0u);
  ASSERT_TRUE(record->terminal->WaitForExit(absl::Seconds(10)));
  EXPECT_EQ(Output(*record), "42\r\n");
  EXPECT_EQ(record->terminal->exit_state().exit_code, 0);
}

TEST(TerminalRegistryTest, ArgsAreQuotedAsSeparateWords) {
  TerminalRegistry registry({});
  ExecuteRequest params = CommandFor("a", "printf '[%s]'");
  params.args = {"a b", "$HOME", "it's"};
  auto record = registry.Execute(params);
  ASSERT_TRUE(record.ok());
  ASSERT_TRUE(record->terminal->WaitForExit(absl::Seconds(10)));
  EXPECT_EQ(Output(*record), "[a b][$HOME][it's]");
}

TEST(TerminalRegistryTest, OtherAgentsCannotSeeASession) {
  TerminalRegistry registry({});
  auto record = registry.Execute(CommandFor("a", "true"));
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(registry.FindSession(record->session_id, "a").ok());
  auto foreign = registry.FindSession(record->session_id, "b");
  EXPECT_EQ(ProblemIn(foreign.status()).kind, Problem::kUnknownId);
  EXPECT_EQ(ProblemIn(registry.FindTerminal("t_missing", "a").status()).kind, Problem::kUnknownId);
  EXPECT_TRUE(registry.List("b").empty());
  EXPECT_EQ(registry.List("a").size(), 1u);
}

TEST(TerminalRegistryTest, BadCwdIsAnInvalidPayload) {
  TerminalRegistry registry({});
  ExecuteRequest params = CommandFor("a", "true");
  params.cwd = "/no/such/dir";
  auto record = registry.Execute(params);
  auto error = ProblemIn(record.status());
  EXPECT_EQ(error.kind, Problem::kInvalidRequest);
  EXPECT_EQ(error.details["field"], "runtime.cwd");
}

TEST(TerminalRegistryTest, PerAgentLimitIsEnforcedWithAClearError) {
  RegistryOptions options;
  options.max_terminals_per_agent = 2;
  TerminalRegistry registry(options);
  ASSERT_TRUE(registry.Execute(CommandFor("a", "sleep 30")).ok());
  ASSERT_TRUE(registry.Execute(CommandFor("a", "sleep 30")).ok());
  auto third = registry.Execute(CommandFor("a", "sleep 30"));
  auto error = ProblemIn(third.status());
  EXPECT_EQ(error.kind, Problem::kLimitReached);
  EXPECT_EQ(error.details["limit"], "max_terminals_per_agent");
  EXPECT_TRUE(registry.Execute(CommandFor("b", "true")).ok());
}

// Terminals spawn outside the registry's lock; a terminal being opened still
// counts against the limits, so opens racing each other cannot pass them.
TEST(TerminalRegistryTest, ConcurrentOpensStayWithinTheLimits) {
  RegistryOptions options;
  options.max_terminals_per_agent = 2;
  options.max_terminals_total = 3;
  TerminalRegistry registry(options);
  std::atomic<int> opened{0}, refused{0};
  std::vector<std::thread> agents;
  for (int i = 0; i < 8; ++i) {
    agents.emplace_back([&, i] {
      absl::StatusOr<SessionRecord> record =
          registry.Execute(CommandFor(i % 2 ? "a" : "b", "sleep 30"));
      if (record.ok()) {
        ++opened;
      } else if (ProblemIn(record.status()).kind == Problem::kLimitReached) {
        ++refused;
      }
    });
  }
  for (std::thread& agent : agents) agent.join();
  EXPECT_EQ(opened.load(), 3);
  EXPECT_EQ(refused.load(), 5);
  EXPECT_EQ(registry.ListTerminals().size(), 3u);
}

TEST(TerminalRegistryTest, CloseTerminalLeavesNoProcessBehind) {
  TerminalRegistry registry({});
  auto record = registry.Execute(CommandFor("a", "sleep 300 & sleep 300; wait"));
  ASSERT_TRUE(record.ok());
  pid_t leader = record->terminal->pid();
  ASSERT_TRUE(registry.CloseTerminal(record->terminal_id, "a").ok());
  EXPECT_FALSE(record->terminal->exit_state().running);
  // Every member of the group is gone (zombies waiting for init count as gone).
  EXPECT_TRUE(::termbridge::testing::WaitGroupGone(leader))
      << ::termbridge::testing::LiveGroupMembers(leader).size() << " processes survived";
}

TEST(TerminalRegistryTest, SendWritesIntoAnExistingTerminal) {
  TerminalRegistry registry({});
  auto opened = registry.Execute(CommandFor("a", "read line; echo got:$line"));
  ASSERT_TRUE(opened.ok());
  ExecuteRequest send = CommandFor("a", "hello");
  send.terminal_id = opened->terminal_id;
  auto sent = registry.Execute(send);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->terminal_id, opened->terminal_id);
  ASSERT_TRUE(opened->terminal->WaitForExit(absl::Seconds(10)));
  EXPECT_NE(Output(*opened).find("got:hello"), std::string::npos);
}

TEST(TerminalRegistryTest, CwdMustLieUnderAnAllowedRoot) {
  RegistryOptions options;
  options.cwd_roots = {"/tmp"};
  TerminalRegistry registry(options);
  ExecuteRequest inside = CommandFor("a", "true");
  inside.cwd = "/tmp";
  EXPECT_TRUE(registry.Execute(inside).ok());
  ExecuteRequest outside = CommandFor("a", "true");
  outside.cwd = "/usr";
  auto error = ProblemIn(registry.Execute(outside).status());
  EXPECT_EQ(error.kind, Problem::kInvalidRequest);
  EXPECT_EQ(error.details["limit"], "cwd_roots");
  // "/tmp/../usr" resolves outside the root.
  outside.cwd = "/tmp/../usr";
  EXPECT_EQ(ProblemIn(registry.Execute(outside).status()).details["limit"], "cwd_roots");
}

// The registry runs what the command gate let through (gate_checks_test.cc
// covers which names ask); the agent's variables reach the command.
TEST(TerminalRegistryTest, TheAgentsVariablesReachTheCommand) {
  TerminalRegistry registry(RegistryOptions{});
  ExecuteRequest ok = CommandFor("a", "echo $GREETING");
  ok.env = {{"GREETING", "hi"}};
  auto record = registry.Execute(ok);
  ASSERT_TRUE(record.ok());
  ASSERT_TRUE(record->terminal->WaitForExit(absl::Seconds(10)));
  EXPECT_EQ(Output(*record), "hi\r\n");
}

TEST(TerminalRegistryTest, IdleAndRuntimeLimitsCloseTerminals) {
  RegistryOptions options;
  options.idle_timeout = absl::Seconds(1);
  TerminalRegistry registry(options);
  auto idle = registry.Execute(CommandFor("a", "sleep 300"));
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE(idle->terminal->WaitForExit(absl::Seconds(5)));
  EXPECT_EQ(registry.ClosedReason(idle->terminal_id), "idle_timeout");
  EXPECT_TRUE(::termbridge::testing::WaitGroupGone(idle->terminal->pid()));

  RegistryOptions runtime_options;
  runtime_options.max_runtime = absl::Seconds(1);
  TerminalRegistry runtime_registry(runtime_options);
  // Busy (never idle) but past its maximum runtime.
  auto busy = runtime_registry.Execute(CommandFor("a", "while :; do echo tick; sleep 0.1; done"));
  ASSERT_TRUE(busy.ok());
  ASSERT_TRUE(busy->terminal->WaitForExit(absl::Seconds(5)));
  EXPECT_EQ(runtime_registry.ClosedReason(busy->terminal_id), "max_runtime");
}

TEST(TerminalRegistryTest, OnlyTheLastFinishedSessionsAreKept) {
  RegistryOptions options;
  options.max_finished_sessions = 2;
  TerminalRegistry registry(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto record = registry.Execute(CommandFor("a", "echo " + std::to_string(i)));
    ASSERT_TRUE(record.ok());
    ASSERT_TRUE(record->terminal->WaitForExit(absl::Seconds(10)));
    ids.push_back(record->session_id);
  }
  ASSERT_TRUE(registry.Execute(CommandFor("a", "true")).ok());  // prunes
  EXPECT_EQ(ProblemIn(registry.FindSession(ids[0], "a").status()).kind, Problem::kUnknownId);
  EXPECT_EQ(ProblemIn(registry.FindSession(ids[1], "a").status()).kind, Problem::kUnknownId);
  auto kept = registry.FindSession(ids[3], "a");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Output(*kept), "3\r\n");
}

// A registry whose terminals are persistent integrated shells (bash).
class PersistentShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "tb-shell-XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    RegistryOptions options;
    options.runtime_dir = dir;
    options.shell = "/bin/bash";
    registry_ = std::make_unique<TerminalRegistry>(options);
  }
  void TearDown() override {
    registry_.reset();  // closes the shells before their rc files go
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  // Runs `command` and returns its output and state once it finished.
  std::pair<std::string, session::CommandState> Run(const std::string& command,
                                                    std::string* terminal_id = nullptr) {
    auto record = registry_->Execute(CommandFor("a", command));
    EXPECT_TRUE(record.ok()) << record.status();
    if (!record.ok()) return {};
    if (terminal_id) *terminal_id = record->terminal_id;
    EXPECT_NE(record->tracker, nullptr);
    EXPECT_TRUE(record->tracker->WaitFinished(record->session_id, absl::Seconds(10)));
    session::CommandState state = *record->tracker->Get(record->session_id);
    std::string out =
        record->terminal->Read(state.output_start, *state.end_offset - state.output_start).data;
    return {out, state};
  }
  std::unique_ptr<TerminalRegistry> registry_;
  std::string dir_;
};

TEST_F(PersistentShellTest, CommandsShareTheDefaultTerminalWithExactOutputAndExitCodes) {
  std::string first, second, third;
  auto [out, state] = Run("echo $((6*7)); export KEPT=yes", &first);
  EXPECT_EQ(out, "42\r\n");
  EXPECT_EQ(state.exit_code, 0);
  EXPECT_EQ(state.completion, "osc133");
  auto [failed_out, failed] = Run("(exit 3)", &second);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed_out, "");
  auto [kept, kept_state] = Run("echo $KEPT", &third);
  EXPECT_EQ(kept, "yes\r\n");  // the shell persisted between commands
  EXPECT_EQ(first, second);
  EXPECT_EQ(second, third);
}

TEST_F(PersistentShellTest, ABusyDefaultTerminalIsNotReused) {
  auto slow = registry_->Execute(CommandFor("a", "sleep 30"));
  ASSERT_TRUE(slow.ok());
  std::string other;
  auto [out, state] = Run("echo hi", &other);
  EXPECT_EQ(out, "hi\r\n");
  EXPECT_NE(other, slow->terminal_id);
}

TEST_F(PersistentShellTest, InterruptEndsTheCommandButNotTheShell) {
  auto record = registry_->Execute(CommandFor("a", "sleep 300"));
  ASSERT_TRUE(record.ok());
  // Wait for the command to start (its C mark), then Ctrl-C it.
  for (int i = 0; i < 100 && record->tracker->Get(record->session_id)->completion.empty(); ++i) {
    record->terminal->WaitForOutput(record->terminal->end_offset(), absl::Milliseconds(100));
  }
  // As Terminate does: repeat while the job may not yet own the foreground.
  bool finished = false;
  for (int attempt = 0; attempt < 20 && !finished; ++attempt) {
    ASSERT_TRUE(record->terminal->Interrupt(SIGINT).ok());
    finished = record->tracker->WaitFinished(record->session_id, absl::Milliseconds(500));
  }
  ASSERT_TRUE(finished);
  EXPECT_EQ(record->tracker->Get(record->session_id)->exit_code, 130);
  EXPECT_TRUE(record->terminal->exit_state().running);
}

TEST_F(PersistentShellTest, ClosingKillsJobsInOtherProcessGroups) {
  auto [out, state] = Run("nohup sleep 300 >/dev/null 2>&1 & echo $!");
  // Interactive bash announces the job ("[1] 123") before our echo of $!.
  std::string last = out.substr(0, out.size() - 2);
  pid_t job = std::stoi(last.substr(last.rfind('\n') + 1));
  ASSERT_TRUE(::termbridge::testing::ProcessAlive(job));
  std::string terminal_id;
  Run("true", &terminal_id);
  ASSERT_TRUE(registry_->CloseTerminal(terminal_id, "a").ok());
  EXPECT_TRUE(::termbridge::testing::WaitProcessGone(job)) << "nohup job " << job << " survived";
}

TEST_F(PersistentShellTest, TerminalsAreNamedFromTheirCwdAndFirstCommandOrAsGiven) {
  ExecuteRequest params = CommandFor("a", "echo hi");
  params.cwd = dir_;
  auto derived = registry_->Execute(params);
  ASSERT_TRUE(derived.ok()) << derived.status();
  std::string dir_name = std::filesystem::path(dir_).filename().string();
  EXPECT_EQ(derived->terminal_name, dir_name + ": echo");
  ExecuteRequest named = CommandFor("a", "true");
  named.open_only = true;
  named.terminal_name = "build\x1b[31m  box";
  auto given = registry_->Execute(named);
  ASSERT_TRUE(given.ok()) << given.status();
  EXPECT_EQ(given->terminal_name, "build[31m box");
  // A given name survives the terminal's first command; a rename replaces it.
  ExecuteRequest into = CommandFor("a", "true");
  into.terminal_id = given->terminal_id;
  auto ran = registry_->Execute(into);
  ASSERT_TRUE(ran.ok()) << ran.status();
  EXPECT_EQ(ran->terminal_name, "build[31m box");
  auto renamed = registry_->Rename(given->terminal_id, "tests");
  ASSERT_TRUE(renamed.ok());
  EXPECT_EQ(renamed->terminal_name, "tests");
  EXPECT_EQ(ProblemIn(registry_->Rename(given->terminal_id, "\x01\x02").status()).kind,
            Problem::kInvalidRequest);
}

TEST_F(PersistentShellTest, APersonsTerminalIsReachedByAnAgentOnlyOnceHandedOver) {
  auto mine = registry_->OpenForPerson("ann", "scratch", dir_);
  ASSERT_TRUE(mine.ok()) << mine.status();
  EXPECT_EQ(mine->person, "ann");
  EXPECT_EQ(mine->agent_id, "");
  // Not the agent's: unknown to it, and never its default terminal.
  EXPECT_EQ(ProblemIn(registry_->FindTerminal(mine->terminal_id, "a").status()).kind,
            Problem::kUnknownId);
  ExecuteRequest into = CommandFor("a", "echo no");
  into.terminal_id = mine->terminal_id;
  EXPECT_EQ(ProblemIn(registry_->Execute(into).status()).kind, Problem::kUnknownId);

  ASSERT_TRUE(registry_->HandOver(mine->terminal_id, "a").ok());
  auto sent = registry_->Execute(into);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->terminal_id, mine->terminal_id);
  ASSERT_TRUE(sent->tracker->WaitFinished(sent->session_id, absl::Seconds(10)));
  // An untargeted command does not land in the person's terminal.
  auto other = registry_->Execute(CommandFor("a", "true"));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->terminal_id, mine->terminal_id);

  ASSERT_TRUE(registry_->HandOver(mine->terminal_id, "").ok());  // taken back
  EXPECT_EQ(ProblemIn(registry_->Execute(into).status()).kind, Problem::kUnknownId);
  // An agent's own terminal never changes hands.
  EXPECT_EQ(ProblemIn(registry_->HandOver(other->terminal_id, "b").status()).kind,
            Problem::kInvalidRequest);
}

// A command waits for a viewer before it is sent. A person who meanwhile
// hands the terminal to another agent, takes it away and back, or locks it
// user_only keeps the command out of it; the new holder's command runs.
TEST_F(PersistentShellTest, ATerminalThatChangedWhileACommandWaitedForAViewerDoesNotTakeIt) {
  enum class Change { kNone, kHandOn, kHandAwayAndBack, kLockUserOnly };
  TerminalRegistry* registry = nullptr;
  std::string terminal;
  Change change = Change::kNone;
  RegistryOptions options;
  options.runtime_dir = dir_;
  options.shell = "/bin/bash";
  options.before_send = [&](const SessionRecord& record) {
    if (record.terminal_id != terminal) return absl::OkStatus();
    if (change == Change::kHandOn) {
      EXPECT_TRUE(registry->HandOver(terminal, "b").ok());
    } else if (change == Change::kHandAwayAndBack) {
      EXPECT_TRUE(registry->HandOver(terminal, "b").ok());
      EXPECT_TRUE(registry->HandOver(terminal, "a").ok());
    } else if (change == Change::kLockUserOnly) {
      record.terminal->SetLock(session::LockMode::kUserOnly);
    }
    return absl::OkStatus();
  };
  TerminalRegistry own(options);
  registry = &own;
  auto mine = own.OpenForPerson("ann", "scratch", dir_);
  ASSERT_TRUE(mine.ok()) << mine.status();
  terminal = mine->terminal_id;
  const std::string canary = dir_ + "/sent-after-a-change";
  ExecuteRequest into = CommandFor("a", "touch " + canary);
  into.terminal_id = terminal;

  ASSERT_TRUE(own.HandOver(terminal, "a").ok());
  change = Change::kHandAwayAndBack;
  absl::Status refused = own.Execute(into).status();
  EXPECT_EQ(ProblemIn(refused).kind, Problem::kConflict) << refused;
  EXPECT_EQ(ProblemIn(refused).details["reason"], "handed_over");
  change = Change::kLockUserOnly;
  refused = own.Execute(into).status();
  EXPECT_EQ(ProblemIn(refused).kind, Problem::kDeclined) << refused;
  EXPECT_EQ(ProblemIn(refused).details["lock"], "user_only");
  mine->terminal->SetLock(session::LockMode::kShared);
  change = Change::kHandOn;
  refused = own.Execute(into).status();
  EXPECT_EQ(ProblemIn(refused).kind, Problem::kConflict) << refused;
  EXPECT_EQ(ProblemIn(refused).details["reason"], "handed_over");

  change = Change::kNone;
  ExecuteRequest theirs = CommandFor("b", "true");
  theirs.terminal_id = terminal;
  auto ran = own.Execute(theirs);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->tracker->WaitFinished(ran->session_id, absl::Seconds(10)));
  EXPECT_FALSE(std::filesystem::exists(canary));
}

TEST_F(PersistentShellTest, TheLastExitCodeIsTheLatestCommands) {
  std::string terminal;
  Run("(exit 4)", &terminal);
  auto listed = registry_->ListTerminals();
  ASSERT_EQ(listed.size(), 1u);
  ASSERT_NE(listed[0].tracker, nullptr);
  EXPECT_EQ(listed[0].tracker->LastExitCode(), 4);
  Run("true");
  EXPECT_EQ(registry_->ListTerminals()[0].tracker->LastExitCode(), 0);
}

}  // namespace
}  // namespace termbridge::core
