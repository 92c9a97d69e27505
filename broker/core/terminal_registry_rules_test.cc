// The terminal registry's rules, each checked without starting a process:
// every terminal's program is a fake the test plays on a PTY pair
// (broker/session/testing/fake_process.h). What the registry asked to start
// (argv, cwd, environment), what it refused before starting anything, how it
// ends programs and what it keeps of them. terminal_registry_test.cc runs the
// same registry on real shells.
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "broker/core/problem.h"
#include "broker/core/terminal_registry.h"
#include "broker/session/testing/fake_process.h"
#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

using session::testing::FakeProgram;
using session::testing::FakeSpawner;

constexpr absl::Duration kWait = absl::Seconds(10);

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

class RegistryRulesTest : public ::testing::Test {
 protected:
  // A registry whose terminals run fakes; `options` as given otherwise.
  std::unique_ptr<TerminalRegistry> Registry(RegistryOptions options = {}) {
    options.spawner = spawner_.spawner();
    options.shell = "/bin/sh";
    return std::make_unique<TerminalRegistry>(std::move(options));
  }
  size_t Started() const { return spawner_.programs().size(); }

  FakeSpawner spawner_;
};

TEST_F(RegistryRulesTest, ACommandStartsTheShellWithItAndWhatTheProgramPrintsIsItsOutput) {
  spawner_.OnStart([](FakeProgram& program) {
    ASSERT_TRUE(program.Print("42\n").ok());
    program.Exit(3);
  });
  auto registry = Registry();
  auto record = registry->Execute(CommandFor("a", "echo $((6*7))"));
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->session_id.rfind("s_", 0), 0u);
  EXPECT_EQ(record->terminal_id.rfind("t_", 0), 0u);
  ASSERT_EQ(Started(), 1u);
  EXPECT_EQ(spawner_.programs()[0]->spawn().argv,
            (std::vector<std::string>{"/bin/sh", "-c", "echo $((6*7))"}));
  ASSERT_TRUE(record->terminal->WaitForExit(kWait));
  EXPECT_EQ(Output(*record), "42\r\n");  // through the PTY's ONLCR, as from a real program
  EXPECT_EQ(record->terminal->exit_state().exit_code, 3);
}

TEST_F(RegistryRulesTest, TheEnvironmentIsThePassthroughThenTheTerminalsThenTheAgents) {
  setenv("TB_RULES_PASSED", "from-broker", 1);
  setenv("TB_RULES_SECRET", "never", 1);
  RegistryOptions options;
  options.env_passthrough = {"TB_RULES_PASSED"};
  options.terminal_env = {{"PAGER", "cat"}};
  auto registry = Registry(options);
  ExecuteRequest request = CommandFor("a", "env");
  request.env = {{"GREETING", "hi"}};
  ASSERT_TRUE(registry->Execute(request).ok());
  std::shared_ptr<FakeProgram> program = spawner_.WaitForProgram(1, kWait);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(program->Env("TB_RULES_PASSED"), "from-broker");
  EXPECT_EQ(program->Env("TB_RULES_SECRET"), "") << "only the passthrough leaves the broker";
  EXPECT_EQ(program->Env("PAGER"), "cat");
  EXPECT_EQ(program->Env("GREETING"), "hi");
  unsetenv("TB_RULES_PASSED");
  unsetenv("TB_RULES_SECRET");
}

TEST_F(RegistryRulesTest, ACwdOutsideTheRootsOrMissingStartsNothing) {
  std::string root = ::testing::TempDir() + "tb-rules-XXXXXX";
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  std::filesystem::create_directory(root + "/work");
  RegistryOptions options;
  options.cwd_roots = {root};
  auto registry = Registry(options);

  ExecuteRequest inside = CommandFor("a", "true");
  inside.cwd = root + "/work";
  ASSERT_TRUE(registry->Execute(inside).ok());
  ASSERT_EQ(Started(), 1u);
  EXPECT_EQ(spawner_.programs()[0]->spawn().cwd, root + "/work");

  for (const std::string& cwd : {std::string("/usr"), root + "/../usr", root + "/missing"}) {
    ExecuteRequest outside = CommandFor("a", "true");
    outside.cwd = cwd;
    ProblemInfo problem = ProblemIn(registry->Execute(outside).status());
    EXPECT_EQ(problem.kind, Problem::kInvalidRequest) << cwd;
    EXPECT_EQ(problem.details["field"], "runtime.cwd") << cwd;
  }
  EXPECT_EQ(Started(), 1u) << "a refused cwd starts no program";
  registry.reset();
  std::filesystem::remove_all(root);
}

TEST_F(RegistryRulesTest, LimitsCountRunningTerminalsPerAgentAndInAll) {
  RegistryOptions options;
  options.max_terminals_per_agent = 2;
  options.max_terminals_total = 3;
  auto registry = Registry(options);
  auto first = registry->Execute(CommandFor("a", "sleep 30"));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(registry->Execute(CommandFor("a", "sleep 30")).ok());
  ProblemInfo per_agent = ProblemIn(registry->Execute(CommandFor("a", "sleep 30")).status());
  EXPECT_EQ(per_agent.kind, Problem::kLimitReached);
  EXPECT_EQ(per_agent.details["limit"], "max_terminals_per_agent");
  ASSERT_TRUE(registry->Execute(CommandFor("b", "sleep 30")).ok());
  ProblemInfo total = ProblemIn(registry->Execute(CommandFor("c", "sleep 30")).status());
  EXPECT_EQ(total.details["limit"], "max_terminals_total");
  EXPECT_EQ(Started(), 3u) << "a refused command starts no program";

  // A program that ends frees its place.
  spawner_.programs()[0]->Exit(0);
  ASSERT_TRUE(first->terminal->WaitForExit(kWait));
  EXPECT_TRUE(registry->Execute(CommandFor("a", "sleep 30")).ok());
}

TEST_F(RegistryRulesTest, AProgramThatCannotStartIsAnInternalProblemAndHoldsNoPlace) {
  RegistryOptions options;
  options.max_terminals_per_agent = 1;
  auto registry = Registry(options);
  spawner_.FailNext(absl::NotFoundError("no such program"));
  ProblemInfo problem = ProblemIn(registry->Execute(CommandFor("a", "x")).status());
  EXPECT_EQ(problem.kind, Problem::kInternal);
  EXPECT_NE(problem.details["reason"].get<std::string>().find("no such program"),
            std::string::npos);
  EXPECT_TRUE(registry->List("a").empty());
  EXPECT_TRUE(registry->Execute(CommandFor("a", "x")).ok()) << "the failed start held no place";
}

TEST_F(RegistryRulesTest, ClosingEndsTheProgramKeepsItsOutputAndSaysWhy) {
  spawner_.OnStart([](FakeProgram& program) { ASSERT_TRUE(program.Print("working\n").ok()); });
  auto registry = Registry();
  auto record = registry->Execute(CommandFor("a", "work"));
  ASSERT_TRUE(record.ok());
  std::shared_ptr<FakeProgram> program = spawner_.programs()[0];

  EXPECT_EQ(ProblemIn(registry->CloseTerminal(record->terminal_id, "b")).kind, Problem::kUnknownId);
  EXPECT_TRUE(program->signals().empty()) << "another agent's close reaches nothing";

  ASSERT_TRUE(registry->CloseTerminal(record->terminal_id, "a").ok());
  ASSERT_FALSE(program->signals().empty());
  EXPECT_EQ(program->signals()[0], SIGHUP) << "a terminal's close is a hangup first";
  EXPECT_FALSE(record->terminal->exit_state().running);
  EXPECT_EQ(record->terminal->exit_state().term_signal, SIGHUP);
  EXPECT_EQ(registry->ClosedReason(record->terminal_id), "agent_terminate");
  auto kept = registry->FindSession(record->session_id, "a");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Output(*kept), "working\r\n");
}

TEST_F(RegistryRulesTest, SendWritesTheLineToTheRunningProgramAndNothingAfterItEnds) {
  auto registry = Registry();
  auto opened = registry->Execute(CommandFor("a", "read line"));
  ASSERT_TRUE(opened.ok());
  std::shared_ptr<FakeProgram> program = spawner_.programs()[0];
  ExecuteRequest send = CommandFor("a", "hello");
  send.terminal_id = opened->terminal_id;
  auto sent = registry->Execute(send);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_EQ(sent->terminal_id, opened->terminal_id);
  EXPECT_EQ(program->ReadInput(6, kWait), "hello\n");
  EXPECT_EQ(Started(), 1u) << "a send starts no program";

  program->Exit(0);
  ASSERT_TRUE(opened->terminal->WaitForExit(kWait));
  EXPECT_FALSE(registry->Execute(send).ok()) << "nothing runs to take the line";
  EXPECT_EQ(Started(), 1u);
}

// A terminal whose program asks for a secret is planned as such for any line
// (input or a new command), and an untargeted command goes around it.
TEST_F(RegistryRulesTest, ATerminalAtASecretPromptIsPlannedAsSuch) {
  auto registry = Registry();
  auto opened = registry->Execute(CommandFor("a", "sudo true"));
  ASSERT_TRUE(opened.ok());
  spawner_.programs()[0]->SetInputModes(/*echo=*/false, /*canonical=*/true);
  for (absl::Time deadline = absl::Now() + kWait;
       !opened->terminal->secret_prompt() && absl::Now() < deadline;) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ExecuteRequest send = CommandFor("a", "guess");
  send.terminal_id = opened->terminal_id;
  CommandTarget target = registry->PlanCommand(send);
  EXPECT_EQ(target.terminal_id, opened->terminal_id);
  EXPECT_TRUE(target.secret_prompt);
  EXPECT_EQ(ProblemIn(registry->Execute(send).status()).details["reason"], "secret_prompt");
  EXPECT_EQ(spawner_.programs()[0]->ReadInput(1, absl::Milliseconds(50)), "");
}

TEST_F(RegistryRulesTest, AQuietTerminalIsClosedAfterTheIdleTimeout) {
  RegistryOptions options;
  options.idle_timeout = absl::Seconds(1);
  auto registry = Registry(options);
  auto idle = registry->Execute(CommandFor("a", "sleep 300"));
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE(idle->terminal->WaitForExit(absl::Seconds(5)));
  EXPECT_EQ(registry->ClosedReason(idle->terminal_id), "idle_timeout");
  EXPECT_TRUE(spawner_.programs()[0]->ended());
}

TEST_F(RegistryRulesTest, ABusyTerminalIsClosedAtItsMaximumRuntime) {
  RegistryOptions options;
  options.max_runtime = absl::Seconds(1);
  options.idle_timeout = absl::Milliseconds(500);
  auto registry = Registry(options);
  auto busy = registry->Execute(CommandFor("a", "tick"));
  ASSERT_TRUE(busy.ok());
  std::shared_ptr<FakeProgram> program = spawner_.programs()[0];
  // Never quiet for long: idle_timeout does not apply, max_runtime does.
  while (!busy->terminal->WaitForExit(absl::Milliseconds(100))) {
    if (!program->ended()) program->Print("tick\n").IgnoreError();
  }
  EXPECT_EQ(registry->ClosedReason(busy->terminal_id), "max_runtime");
}

TEST_F(RegistryRulesTest, OnlyTheLastFinishedSessionsAndTheirOutputAreKept) {
  int n = 0;
  spawner_.OnStart([&n](FakeProgram& program) {
    ASSERT_TRUE(program.Print(std::string(600, static_cast<char>('a' + n++))).ok());
    program.Exit(0);
  });
  RegistryOptions options;
  options.max_finished_sessions = 2;
  auto registry = Registry(options);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    auto record = registry->Execute(CommandFor("a", "print"));
    ASSERT_TRUE(record.ok());
    ASSERT_TRUE(record->terminal->WaitForExit(kWait));
    ids.push_back(record->session_id);
  }
  spawner_.OnStart([](FakeProgram& program) { program.Exit(0); });
  ASSERT_TRUE(registry->Execute(CommandFor("a", "true")).ok());  // prunes
  EXPECT_EQ(ProblemIn(registry->FindSession(ids[0], "a").status()).kind, Problem::kUnknownId);
  EXPECT_EQ(ProblemIn(registry->FindSession(ids[1], "a").status()).kind, Problem::kUnknownId);
  auto kept = registry->FindSession(ids[3], "a");
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(Output(*kept), std::string(600, 'd'));
}

TEST_F(RegistryRulesTest, ExitedTerminalsKeepOnlyTheNewestOutputUnderTheCap) {
  int n = 0;
  spawner_.OnStart([&n](FakeProgram& program) {
    ASSERT_TRUE(program.Print(std::string(800, static_cast<char>('a' + n++))).ok());
    program.Exit(0);
  });
  RegistryOptions options;
  options.max_closed_output_bytes = 1000;
  auto registry = Registry(options);
  std::vector<SessionRecord> records;
  for (int i = 0; i < 2; ++i) {
    auto record = registry->Execute(CommandFor("a", "print"));
    ASSERT_TRUE(record.ok());
    ASSERT_TRUE(record->terminal->WaitForExit(kWait));
    records.push_back(*record);
  }
  spawner_.OnStart([](FakeProgram& program) { program.Exit(0); });
  ASSERT_TRUE(registry->Execute(CommandFor("a", "true")).ok());  // prunes
  session::OutputSlice oldest = records[0].terminal->Read(0, 1 << 20);
  EXPECT_EQ(oldest.data, "") << "past the cap, the oldest output is dropped";
  EXPECT_EQ(oldest.gap, 800u) << "and a read says how much is gone";
  EXPECT_EQ(Output(records[1]), std::string(800, 'b'));
}

TEST_F(RegistryRulesTest, ClosingTheRegistryEndsEveryProgramAndOpensNoMore) {
  auto registry = Registry();
  ASSERT_TRUE(registry->Execute(CommandFor("a", "one")).ok());
  ASSERT_TRUE(registry->Execute(CommandFor("b", "two")).ok());
  registry->CloseAll();
  for (const auto& program : spawner_.programs()) EXPECT_TRUE(program->ended());
  EXPECT_FALSE(registry->Execute(CommandFor("a", "three")).ok());
  EXPECT_EQ(Started(), 2u);
}

}  // namespace
}  // namespace termbridge::core
