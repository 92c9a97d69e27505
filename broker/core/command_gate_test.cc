// The command gate's rules, without a process: a fake CommandRunner stands
// for the terminals and records every command that would have reached one;
// the policy is the built-in default, the approval queue and its audit are
// real (in memory). Each test asserts what reaches a terminal, and what the
// agent and the audit are told.
#include "broker/core/command_gate.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "broker/core/problem.h"
#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

// Plans every command into `plan` (or the request's own target) and records
// what it is asked to run.
class FakeRunner : public CommandRunner {
 public:
  CommandTarget PlanCommand(const ExecuteRequest& request) const override {
    absl::MutexLock lock(&mu_);
    CommandTarget target = plan_;
    if (!request.terminal_id.empty()) target.terminal_id = request.terminal_id;
    if (request.new_terminal || request.open_only) target = CommandTarget{};
    return target;
  }
  absl::StatusOr<SessionRecord> Execute(const ExecuteRequest& request) override {
    absl::MutexLock lock(&mu_);
    ran_.push_back(request);
    if (ran_.size() == 1) first_run_.Notify();
    if (!fail_.ok()) return fail_;
    SessionRecord record;
    record.session_id = request.session_id;
    record.terminal_id = request.terminal_id.empty() ? "t_new" : request.terminal_id;
    record.agent_id = request.agent_id;
    record.command = request.command;
    return record;
  }
  const RegistryOptions& options() const override { return options_; }

  void Plan(CommandTarget target) {
    absl::MutexLock lock(&mu_);
    plan_ = std::move(target);
  }
  void FailWith(absl::Status status) {
    absl::MutexLock lock(&mu_);
    fail_ = std::move(status);
  }
  std::vector<ExecuteRequest> ran() const {
    absl::MutexLock lock(&mu_);
    return ran_;
  }
  // Blocks until the first command reached the terminal (an approved start
  // runs on the gate's own thread).
  bool WaitForFirstRun() { return first_run_.WaitForNotificationWithTimeout(absl::Seconds(10)); }

 private:
  RegistryOptions options_;
  mutable absl::Mutex mu_;
  CommandTarget plan_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_ ABSL_GUARDED_BY(mu_);
  std::vector<ExecuteRequest> ran_ ABSL_GUARDED_BY(mu_);
  absl::Notification first_run_;
};

class RecordingSink : public audit::AuditSink {
 public:
  absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) override {
    absl::MutexLock lock(&mu_);
    fields["event"] = std::string(event);
    records_.push_back(std::move(fields));
    return records_.size();
  }
  std::vector<nlohmann::json> Of(std::string_view event) {
    absl::MutexLock lock(&mu_);
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& r : records_) {
      if (r["event"] == event) out.push_back(r);
    }
    return out;
  }

 private:
  absl::Mutex mu_;
  std::vector<nlohmann::json> records_ ABSL_GUARDED_BY(mu_);
};

CommandTarget Target(std::string terminal_id, bool input = false,
                     std::vector<std::string> readers = {}, bool takes_agent_input = true) {
  CommandTarget target;
  target.terminal_id = std::move(terminal_id);
  target.input = input;
  target.readers = std::move(readers);
  target.takes_agent_input = takes_agent_input;
  return target;
}

// Lines the built-in policy allows, denies and asks about (checked in SetUp).
constexpr char kAllowed[] = "echo hi";
constexpr char kDenied[] = "rm -rf /";
constexpr char kAsked[] = "python3 -c 'print(1)'";

class CommandGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(policy_.Load().ok());
    auto policy = policy_.Current();
    ASSERT_EQ(policy->Check(kAllowed, {}).action, policy::Action::kAllow);
    ASSERT_EQ(policy->Check(kDenied, {}).action, policy::Action::kDeny);
    ASSERT_EQ(policy->Check(kAsked, {}).action, policy::Action::kAsk);
  }

  static ExecuteRequest Command(std::string command, std::string agent = "agent") {
    ExecuteRequest request;
    request.agent_id = std::move(agent);
    request.command = std::move(command);
    request.trace_id = "tr_test";
    return request;
  }
  // The one pending approval (the tests ask one thing at a time).
  std::string PendingApproval() {
    std::vector<approval::Entry> pending = queue_.List(false);
    return pending.size() == 1 ? pending[0].approval_id : "";
  }

  policy::PolicyFile policy_{""};
  RecordingSink audit_;
  approval::ApprovalQueue queue_{{.timeout = absl::Minutes(5), .audit = &audit_}};
  FakeRunner runner_;
  CommandGate gate_{&policy_, &queue_, &runner_, &audit_, [](const absl::Status& s) {
                      auto problem = ProblemOf(s);
                      return std::string("named:") +
                             std::string(ProblemName(problem ? problem->kind : Problem::kInternal));
                    }};
};

TEST_F(CommandGateTest, AnAllowedCommandRunsOnceInANewTerminal) {
  auto outcome = gate_.Execute(Command(kAllowed), absl::Seconds(5));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->gate.state, "allowed");
  ASSERT_TRUE(outcome->record.has_value());
  ASSERT_EQ(runner_.ran().size(), 1u);
  const ExecuteRequest ran = runner_.ran()[0];
  EXPECT_EQ(ran.command, kAllowed);
  EXPECT_TRUE(ran.new_terminal);
  EXPECT_EQ(ran.session_id, outcome->session_id);
  EXPECT_EQ(audit_.Of(audit::kPolicyDecided).size(), 1u);
  EXPECT_EQ(audit_.Of(audit::kCommandStarted).size(), 1u);
}

TEST_F(CommandGateTest, ADeniedCommandNeverReachesATerminal) {
  auto outcome = gate_.Execute(Command(kDenied), absl::Seconds(5));
  ASSERT_FALSE(outcome.ok());
  ASSERT_TRUE(ProblemOf(outcome.status()));
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kDeniedByPolicy);
  EXPECT_TRUE(runner_.ran().empty());
  ASSERT_EQ(audit_.Of(audit::kPolicyDecided).size(), 1u);
  EXPECT_EQ(audit_.Of(audit::kPolicyDecided)[0]["action"], "deny");
}

TEST_F(CommandGateTest, AnAskedCommandWaitsAndRunsOnlyOnceAPersonApproves) {
  auto outcome = gate_.Execute(Command(kAsked), absl::ZeroDuration());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->gate.state, "pending");
  EXPECT_FALSE(outcome->record.has_value());
  EXPECT_TRUE(runner_.ran().empty());
  auto looked = gate_.Lookup(outcome->session_id, "agent");
  ASSERT_TRUE(looked.ok());
  EXPECT_EQ(looked->gate.state, "pending");

  const std::string approval_id = PendingApproval();
  ASSERT_FALSE(approval_id.empty());
  ASSERT_TRUE(queue_.Decide(approval_id, true, approval::Scope::kOnce, "person", "cli", "").ok());
  ASSERT_TRUE(runner_.WaitForFirstRun());
  ASSERT_EQ(runner_.ran().size(), 1u);
  EXPECT_EQ(runner_.ran()[0].command, kAsked);
  EXPECT_EQ(runner_.ran()[0].session_id, outcome->session_id);
}

TEST_F(CommandGateTest, ACommandAPersonDeclinesNeverRuns) {
  auto outcome = gate_.Execute(Command(kAsked), absl::ZeroDuration());
  ASSERT_TRUE(outcome.ok());
  ASSERT_TRUE(
      queue_.Decide(PendingApproval(), false, approval::Scope::kOnce, "person", "cli", "not now")
          .ok());
  auto looked = gate_.Lookup(outcome->session_id, "agent");
  ASSERT_FALSE(looked.ok());
  EXPECT_EQ(ProblemOf(looked.status())->kind, Problem::kDeclined);
  EXPECT_EQ(ProblemOf(looked.status())->details["note"], "not now");
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(CommandGateTest, AnotherAgentCannotLookUpASession) {
  auto outcome = gate_.Execute(Command(kAsked), absl::ZeroDuration());
  ASSERT_TRUE(outcome.ok());
  auto looked = gate_.Lookup(outcome->session_id, "intruder");
  ASSERT_FALSE(looked.ok());
  EXPECT_EQ(ProblemOf(looked.status())->kind, Problem::kUnknownId);
  EXPECT_TRUE(gate_.Lookup(outcome->session_id, "").ok());  // an operator sees every agent's
}

TEST_F(CommandGateTest, AnIdenticalRepeatJoinsThePendingRequest) {
  auto first = gate_.Execute(Command(kAsked), absl::ZeroDuration());
  auto second = gate_.Execute(Command(kAsked), absl::ZeroDuration());
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->session_id, second->session_id);
  EXPECT_EQ(queue_.List(false).size(), 1u);
}

TEST_F(CommandGateTest, ATargetedCommandIsRefusedWhileAnotherWaitsOnItsTerminal) {
  ExecuteRequest waiting = Command(kAsked);
  waiting.terminal_id = "t_1";
  ASSERT_TRUE(gate_.Execute(waiting, absl::ZeroDuration()).ok());
  ExecuteRequest other = Command(kAllowed);
  other.terminal_id = "t_1";
  auto refused = gate_.Execute(other, absl::Seconds(5));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(ProblemOf(refused.status())->kind, Problem::kDeclined);
  EXPECT_EQ(ProblemOf(refused.status())->details["reason"], "pending_approval");
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(CommandGateTest, AnUntargetedCommandGoesAroundADefaultTerminalThatWaits) {
  runner_.Plan(Target("t_default"));
  ASSERT_TRUE(gate_.Execute(Command(kAsked), absl::ZeroDuration()).ok());
  auto outcome = gate_.Execute(Command(kAllowed), absl::Seconds(5));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  ASSERT_EQ(runner_.ran().size(), 1u);
  EXPECT_TRUE(runner_.ran()[0].new_terminal);
  EXPECT_TRUE(runner_.ran()[0].terminal_id.empty());
}

TEST_F(CommandGateTest, ALineWithANulByteIsRefusedAndAudited) {
  auto outcome = gate_.Execute(Command(std::string("echo a\0b", 8)), absl::Seconds(5));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kInvalidRequest);
  EXPECT_TRUE(runner_.ran().empty());
  std::vector<nlohmann::json> refused = audit_.Of(audit::kCommandRefused);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]["code"], "named:invalid_request");  // named by the broker's edge
  EXPECT_EQ(refused[0]["trace_id"], "tr_test");
}

TEST_F(CommandGateTest, InputToAProgramThatRunsCommandsAsks) {
  runner_.Plan(Target("t_1", true, {"python3"}));
  ExecuteRequest input = Command(kAllowed);
  input.terminal_id = "t_1";
  auto outcome = gate_.Execute(input, absl::ZeroDuration());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->gate.state, "pending");
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(CommandGateTest, InputIsRefusedWhereTheShellCannotDiscardIt) {
  runner_.Plan(Target("t_1", true, {}, false));
  ExecuteRequest input = Command(kAllowed);
  input.terminal_id = "t_1";
  auto outcome = gate_.Execute(input, absl::Seconds(5));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kInvalidRequest);
  EXPECT_EQ(ProblemOf(outcome.status())->details["reason"], "no_input_to_programs");
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(CommandGateTest, InputForASecretPromptIsRefusedWithoutAskingAnyone) {
  CommandTarget target = Target("t_1", true, {"python3"});
  target.secret_prompt = true;
  runner_.Plan(target);
  ExecuteRequest input = Command(kAsked);  // would ask a person anywhere else
  input.terminal_id = "t_1";
  auto outcome = gate_.Execute(input, absl::Seconds(5));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kDeclined);
  EXPECT_EQ(ProblemOf(outcome.status())->details["reason"], "secret_prompt");
  EXPECT_TRUE(runner_.ran().empty());
  EXPECT_EQ(PendingApproval(), "") << "nobody was asked";
}

TEST_F(CommandGateTest, AnApprovalForTheTerminalLetsItsLaterCommandsRun) {
  ExecuteRequest first = Command(kAsked);
  first.terminal_id = "t_1";
  ASSERT_TRUE(gate_.Execute(first, absl::ZeroDuration()).ok());
  ASSERT_TRUE(
      queue_.Decide(PendingApproval(), true, approval::Scope::kTerminal, "person", "console", "")
          .ok());
  ASSERT_TRUE(runner_.WaitForFirstRun());
  ExecuteRequest later = Command("python3 -c 'print(2)'");
  later.terminal_id = "t_1";
  auto outcome = gate_.Execute(later, absl::Seconds(5));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->gate.state, "approved");
  EXPECT_EQ(outcome->gate.surface, "terminal_grant");
  EXPECT_EQ(runner_.ran().size(), 2u);
  // Another terminal is not covered by the grant.
  ExecuteRequest elsewhere = Command("python3 -c 'print(3)'");
  elsewhere.terminal_id = "t_2";
  auto asked = gate_.Execute(elsewhere, absl::ZeroDuration());
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->gate.state, "pending");
}

TEST_F(CommandGateTest, AStartThatFailsIsTheAgentsErrorAndIsAudited) {
  runner_.FailWith(Fail(Problem::kLimitReached, "the broker's terminal limit is reached",
                        {{"limit", "max_terminals_total"}}));
  auto outcome = gate_.Execute(Command(kAllowed), absl::Seconds(5));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kLimitReached);
  std::vector<nlohmann::json> refused = audit_.Of(audit::kCommandRefused);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0]["details"]["limit"], "max_terminals_total");
}

TEST_F(CommandGateTest, NoOneApprovingInTimeIsATimeoutAndNothingRuns) {
  approval::ApprovalQueue quick({.timeout = absl::Milliseconds(50), .audit = &audit_});
  CommandGate gate(&policy_, &quick, &runner_, &audit_);
  auto outcome = gate.Execute(Command(kAsked), absl::Seconds(10));
  ASSERT_FALSE(outcome.ok());
  EXPECT_EQ(ProblemOf(outcome.status())->kind, Problem::kTimedOut);
  EXPECT_EQ(ProblemOf(outcome.status())->details["phase"], "approval");
  EXPECT_TRUE(runner_.ran().empty());
}

TEST_F(CommandGateTest, ATimeBoxedTerminalGrantEndsAndTheNextCommandAsksAgain) {
  absl::Mutex clock_mu;
  absl::Time now = absl::FromUnixSeconds(1795687200);
  auto clock = [&] {
    absl::MutexLock lock(&clock_mu);
    return now;
  };
  approval::ApprovalQueue queue({.audit = &audit_, .clock = clock});
  CommandGate gate(&policy_, &queue, &runner_, &audit_);
  ExecuteRequest first = Command(kAsked);
  first.terminal_id = "t_1";
  ASSERT_TRUE(gate.Execute(first, absl::ZeroDuration()).ok());
  std::vector<approval::Entry> pending = queue.List(false);
  ASSERT_EQ(pending.size(), 1u);
  ASSERT_TRUE(queue
                  .Decide(pending[0].approval_id, true, approval::Scope::kTerminal, "person", "cli",
                          "", clock() + absl::Minutes(15))
                  .ok());
  ASSERT_TRUE(runner_.WaitForFirstRun());
  ExecuteRequest later = Command("python3 -c 'print(2)'");
  later.terminal_id = "t_1";
  auto granted = gate.Execute(later, absl::Seconds(5));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(granted->gate.surface, "terminal_grant");
  EXPECT_EQ(granted->gate.grant_expires_at_unix_ms,
            absl::ToUnixMillis(absl::FromUnixSeconds(1795687200) + absl::Minutes(15)));
  {
    absl::MutexLock lock(&clock_mu);
    now += absl::Minutes(15);
  }
  ExecuteRequest again = Command("python3 -c 'print(3)'");
  again.terminal_id = "t_1";
  auto asked = gate.Execute(again, absl::ZeroDuration());
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->gate.state, "pending") << "the grant is over: a person is asked again";
  EXPECT_EQ(runner_.ran().size(), 2u);
  std::vector<nlohmann::json> ended = audit_.Of(approval::kGrantExpired);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0]["terminal_id"], "t_1");
  // Found by the next command, or by the queue's expiry thread first: the
  // grant ends either way, once.
  EXPECT_TRUE(ended[0]["found"] == "in use" || ended[0]["found"] == "sweep") << ended[0].dump();
}

// A "this terminal" grant lets through the agent the person approved, not
// another agent that reaches the terminal later (a person's terminal
// handed on): that one is asked.
TEST_F(CommandGateTest, ATerminalGrantIsTheApprovedAgentsOnly) {
  ExecuteRequest first = Command(kAsked);
  first.terminal_id = "t_1";
  ASSERT_TRUE(gate_.Execute(first, absl::ZeroDuration()).ok());
  ASSERT_TRUE(
      queue_.Decide(PendingApproval(), true, approval::Scope::kTerminal, "person", "cli", "").ok());
  ASSERT_TRUE(runner_.WaitForFirstRun());
  ExecuteRequest other = Command("python3 -c 'print(2)'", "other-agent");
  other.terminal_id = "t_1";
  auto asked = gate_.Execute(other, absl::ZeroDuration());
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(asked->gate.state, "pending") << "another agent is asked";
  ASSERT_TRUE(
      queue_.Decide(PendingApproval(), false, approval::Scope::kOnce, "person", "cli", "").ok());
  ExecuteRequest again = Command("python3 -c 'print(3)'");
  again.terminal_id = "t_1";
  auto granted = gate_.Execute(again, absl::Seconds(5));
  ASSERT_TRUE(granted.ok()) << granted.status();
  EXPECT_EQ(granted->gate.surface, "terminal_grant");
}

TEST_F(CommandGateTest, TheRequestCarriesWhatAlwaysWouldWrite) {
  runner_.Plan(Target("t_1"));
  ASSERT_TRUE(gate_.Execute(Command("make"), absl::ZeroDuration()).ok());
  std::vector<approval::Entry> pending = queue_.List(false);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_NE(pending[0].request.always_rules_toml.find("exact = [\"make\"]"), std::string::npos)
      << pending[0].request.always_rules_toml;
  EXPECT_EQ(pending[0].request.always_refusal, "");
  ASSERT_TRUE(
      queue_.Decide(pending[0].approval_id, false, approval::Scope::kOnce, "p", "cli", "").ok());
  // Code the parser cannot see into can never be allowed always: it says why.
  ASSERT_TRUE(gate_.Execute(Command(kAsked), absl::ZeroDuration()).ok());
  pending = queue_.List(false);
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].request.always_rules_toml, "");
  EXPECT_NE(pending[0].request.always_refusal.find("never be allowed by a rule"), std::string::npos)
      << pending[0].request.always_refusal;
}

TEST_F(CommandGateTest, ThePolicysDecisionRecordHoldsWhatReplayNeeds) {
  CommandTarget target = Target("t_1");
  target.cwd = "/work/app";
  target.workspace = "/work";
  runner_.Plan(target);
  ASSERT_TRUE(gate_.Execute(Command(kAllowed), absl::Seconds(5)).ok());
  std::vector<nlohmann::json> decided = audit_.Of(audit::kPolicyDecided);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0]["command"], kAllowed);
  EXPECT_EQ(decided[0]["cwd"], "/work/app");
  EXPECT_EQ(decided[0]["workspace"], "/work");
}

}  // namespace
}  // namespace termbridge::core
