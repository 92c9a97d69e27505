// Tests for the approval queue: decisions reach the waiting request exactly
// once, with the person's note; timeouts end requests; terminal grants stick;
// every request and decision is audited before it is acknowledged; what one
// agent may queue is capped, repeats join, a burst of refusals is audited
// once, and a list stays small whatever was queued.
#include "broker/approval/approval_queue.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/core/problem.h"
#include "common/contract/errors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::approval {
namespace {

using ::testing::ElementsAre;

class RecordingSink : public audit::AuditSink {
 public:
  absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) override {
    absl::MutexLock lock(&mu_);
    if (fail_) return absl::UnavailableError("disk full");
    events_.push_back(std::string(event));
    fields_.push_back(std::move(fields));
    return events_.size();
  }
  std::vector<std::string> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  nlohmann::json last() {
    absl::MutexLock lock(&mu_);
    return fields_.back();
  }
  // The records of `event`, in order.
  std::vector<nlohmann::json> of(std::string_view event) {
    absl::MutexLock lock(&mu_);
    std::vector<nlohmann::json> out;
    for (size_t i = 0; i < events_.size(); ++i) {
      if (events_[i] == event) out.push_back(fields_[i]);
    }
    return out;
  }
  void set_fail(bool fail) {
    absl::MutexLock lock(&mu_);
    fail_ = fail;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_;
  std::vector<nlohmann::json> fields_;
  bool fail_ = false;
};

Request CommandRequest(std::string terminal = "t_1") {
  Request request;
  request.command = "npm test";
  request.cwd = "/work";
  request.agent_id = "agent";
  request.terminal_id = std::move(terminal);
  request.session_id = "s_1";
  request.trace_id = "trace-1";
  request.rule = "";
  request.reason = "ask: no rule matched `npm test`";
  return request;
}

TEST(ApprovalQueue, ApproveRunsTheContinuationOnceWithTheApprover) {
  RecordingSink sink;
  ApprovalQueue queue({.timeout = absl::Minutes(1), .audit = &sink});
  std::vector<Entry> seen;
  absl::StatusOr<Entry> entry =
      queue.Submit(CommandRequest(), [&](const Entry& decided) { seen.push_back(decided); });
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_EQ(queue.List(false).size(), 1u);
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kOnce, "alice", "cli", "").ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].state, State::kApproved);
  EXPECT_EQ(seen[0].approver, "alice");
  EXPECT_TRUE(queue.List(false).empty());
  absl::StatusOr<Entry> again =
      queue.Decide(entry->approval_id, false, Scope::kOnce, "bob", "cli", "");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(seen.size(), 1u);
  EXPECT_THAT(sink.events(), ElementsAre("approval_requested", "approval_decided"));
  EXPECT_EQ(sink.last()["approver"], "alice");
  EXPECT_EQ(sink.last()["surface"], "cli");
  EXPECT_EQ(sink.last()["trace_id"], "trace-1");
}

TEST(ApprovalQueue, DenialCarriesTheNote) {
  ApprovalQueue queue({});
  Entry decided;
  absl::StatusOr<Entry> entry =
      queue.Submit(CommandRequest(), [&](const Entry& e) { decided = e; });
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(queue
                  .Decide(entry->approval_id, false, Scope::kAlways, "alice", "console",
                          "use the staging db")
                  .ok());
  EXPECT_EQ(decided.state, State::kDenied);
  EXPECT_EQ(decided.note, "use the staging db");
  EXPECT_EQ(decided.scope, Scope::kOnce);  // a denial never grants anything
  EXPECT_EQ(queue.FindBySession("s_1")->state, State::kDenied);
}

TEST(ApprovalQueue, RevokingAnAgentCancelsOnlyItsPendingRequests) {
  // Outlives the queue: its destructor cancels bob's request, which calls back.
  std::vector<Entry> decided;
  ApprovalQueue queue({});
  Request alice = CommandRequest("t_a");
  alice.agent_id = "alice";
  Request bob = CommandRequest("t_b");
  bob.agent_id = "bob";
  bob.session_id = "s_2";
  ASSERT_TRUE(queue.Submit(alice, [&](const Entry& e) { decided.push_back(e); }).ok());
  ASSERT_TRUE(queue.Submit(bob, [&](const Entry& e) { decided.push_back(e); }).ok());
  EXPECT_EQ(queue.CancelAgent("alice"), 1u);
  ASSERT_EQ(decided.size(), 1u);
  EXPECT_EQ(decided[0].request.agent_id, "alice");
  EXPECT_EQ(decided[0].state, State::kCancelled);
  ASSERT_EQ(queue.List(false).size(), 1u);
  EXPECT_EQ(queue.List(false)[0].request.agent_id, "bob");
  EXPECT_EQ(queue.CancelAgent("alice"), 0u);
}

TEST(ApprovalQueue, PendingRequestTimesOutOnItsOwn) {
  ApprovalQueue queue({.timeout = absl::Milliseconds(50)});
  std::atomic<int> calls{0};
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest(), [&](const Entry& e) {
    EXPECT_EQ(e.state, State::kTimedOut);
    ++calls;
  });
  ASSERT_TRUE(entry.ok());
  absl::StatusOr<Entry> waited = queue.Wait(entry->approval_id, absl::Seconds(10));
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->state, State::kTimedOut);
  EXPECT_EQ(calls.load(), 1);
}

TEST(ApprovalQueue, WaitReturnsPendingWhenItsOwnBoundPasses) {
  ApprovalQueue queue({.timeout = absl::Minutes(1)});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest(), nullptr);
  ASSERT_TRUE(entry.ok());
  absl::StatusOr<Entry> waited = queue.Wait(entry->approval_id, absl::Milliseconds(20));
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(waited->state, State::kPending);
  EXPECT_EQ(queue.Wait("a_unknown", absl::ZeroDuration()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ApprovalQueue, TerminalScopeGrantsThatTerminalOnly) {
  ApprovalQueue queue({});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest("t_A"), nullptr);
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kTerminal, "alice", "cli", "").ok());
  EXPECT_TRUE(queue.TerminalGranted("t_A"));
  EXPECT_FALSE(queue.TerminalGranted("t_B"));
  queue.CancelTerminal("t_A");  // closing the terminal ends the grant
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
}

TEST(ApprovalQueue, ClosingATerminalCancelsItsPendingRequests) {
  ApprovalQueue queue({});
  State state = State::kPending;
  absl::StatusOr<Entry> entry =
      queue.Submit(CommandRequest("t_A"), [&](const Entry& e) { state = e.state; });
  ASSERT_TRUE(entry.ok());
  queue.CancelTerminal("t_A");
  EXPECT_EQ(state, State::kCancelled);
}

TEST(ApprovalQueue, UnauditableRequestIsNotQueued) {
  RecordingSink sink;
  sink.set_fail(true);
  ApprovalQueue queue({.audit = &sink});
  EXPECT_FALSE(queue.Submit(CommandRequest(), nullptr).ok());
  EXPECT_TRUE(queue.List(true).empty());
}

TEST(ApprovalQueue, UnauditableDecisionLeavesTheRequestPending) {
  RecordingSink sink;
  ApprovalQueue queue({.audit = &sink});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest(), nullptr);
  ASSERT_TRUE(entry.ok());
  sink.set_fail(true);
  EXPECT_FALSE(queue.Decide(entry->approval_id, true, Scope::kOnce, "a", "cli", "").ok());
  EXPECT_EQ(queue.Find(entry->approval_id)->state, State::kPending);
}

TEST(ApprovalQueue, WatchersSeeRequestsAndDecisions) {
  ApprovalQueue queue({});
  std::vector<std::string> kinds;
  int watch = queue.Watch([&](std::string_view kind, const Entry&) { kinds.emplace_back(kind); });
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest(), nullptr);
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kOnce, "a", "cli", "").ok());
  queue.Unwatch(watch);
  ASSERT_TRUE(queue.Submit(CommandRequest(), nullptr).ok());
  EXPECT_THAT(kinds, ElementsAre("requested", "decided"));
}

Request Proposal(std::string agent, std::vector<std::string> argv) {
  Request request;
  request.kind = "policy_change";
  request.lane = "headless";
  request.agent_id = std::move(agent);
  request.argv = argv;
  for (const std::string& word : argv) request.command += word + " ";
  return request;
}

// The details of a refusal.
nlohmann::json DetailsOf(const absl::Status& status) {
  std::optional<core::ProblemInfo> problem = core::ProblemOf(status);
  return problem ? problem->details : nlohmann::json();
}

TEST(ApprovalQueueLimits, EachAgentHasItsOwnCapPerKind) {
  RecordingSink sink;
  ApprovalQueue queue(
      {.audit = &sink, .max_pending_approvals_per_agent = 3, .max_pending_proposals_per_agent = 2});
  for (int i = 0; i < 3; ++i) {
    Request request = CommandRequest(absl::StrCat("t_", i));
    request.session_id = absl::StrCat("s_", i);
    ASSERT_TRUE(queue.Submit(request, nullptr).ok()) << i;
  }
  Request fourth = CommandRequest("t_9");
  fourth.session_id = "s_9";
  absl::StatusOr<Entry> refused = queue.Submit(fourth, nullptr);
  ASSERT_FALSE(refused.ok());
  std::optional<core::ProblemInfo> error = core::ProblemOf(refused.status());
  ASSERT_TRUE(error);
  EXPECT_EQ(error->kind, core::Problem::kLimitReached);
  EXPECT_EQ(error->details["limit"], "max_pending_approvals_per_agent");
  EXPECT_EQ(error->details["value"], 3);
  EXPECT_THAT(std::string(refused.status().message()),
              ::testing::HasSubstr("max_pending_approvals_per_agent 3"));

  // Proposals have a cap of their own, and another agent is not affected.
  ASSERT_TRUE(queue.Submit(Proposal("agent", {"git", "status"}), nullptr).ok());
  ASSERT_TRUE(queue.Submit(Proposal("agent", {"git", "log"}), nullptr).ok());
  absl::StatusOr<Entry> third = queue.Submit(Proposal("agent", {"git", "diff"}), nullptr);
  EXPECT_EQ(DetailsOf(third.status())["limit"], "max_pending_proposals_per_agent");
  EXPECT_EQ(DetailsOf(third.status())["value"], 2);
  Request other = CommandRequest("t_other");
  other.agent_id = "agent-b";
  EXPECT_TRUE(queue.Submit(other, nullptr).ok());
  EXPECT_EQ(queue.List(false).size(), 6u);
}

TEST(ApprovalQueueLimits, ARepeatJoinsThePendingRequest) {
  RecordingSink sink;
  ApprovalQueue queue({.audit = &sink, .max_pending_approvals_per_agent = 1});
  int decided = 0;
  absl::StatusOr<Entry> first = queue.Submit(CommandRequest(), [&](const Entry&) { ++decided; });
  ASSERT_TRUE(first.ok());
  Request again = CommandRequest();
  again.session_id = "s_2";  // a new execute of the same command
  again.trace_id = "trace-2";
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<Entry> joined = queue.Submit(again, [&](const Entry&) { ++decided; });
    ASSERT_TRUE(joined.ok()) << joined.status();  // joining is not past the cap
    EXPECT_EQ(joined->approval_id, first->approval_id);
    EXPECT_EQ(joined->request.session_id, "s_1");
    EXPECT_EQ(joined->duplicates, i + 1);
  }
  // A different environment is a different request (and over the cap of 1).
  Request other_env = CommandRequest();
  other_env.env["DEBUG"] = "1";
  EXPECT_FALSE(queue.Submit(other_env, nullptr).ok());
  // Same words joined by spaces but another rule: not the same proposal.
  ApprovalQueue proposals({.max_pending_proposals_per_agent = 4});
  absl::StatusOr<Entry> a = proposals.Submit(Proposal("agent", {"git", "log"}), nullptr);
  absl::StatusOr<Entry> b = proposals.Submit(Proposal("agent", {"git log"}), nullptr);
  absl::StatusOr<Entry> c = proposals.Submit(Proposal("agent", {"git", "log"}), nullptr);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_NE(a->approval_id, b->approval_id);
  EXPECT_EQ(a->approval_id, c->approval_id);

  ASSERT_EQ(queue.List(false).size(), 1u);
  EXPECT_EQ(sink.of("approval_requested").size(), 1u);  // joins are not audited one by one
  ASSERT_TRUE(queue.Decide(first->approval_id, true, Scope::kOnce, "alice", "cli", "").ok());
  EXPECT_EQ(decided, 1);  // one decision, one continuation: the first caller's
}

TEST(ApprovalQueueLimits, ABurstOfRefusalsIsAuditedOnce) {
  RecordingSink sink;
  ApprovalQueue queue({.audit = &sink, .max_pending_proposals_per_agent = 2});
  absl::StatusOr<Entry> kept = queue.Submit(Proposal("agent", {"rule", "0"}), nullptr);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(queue.Submit(Proposal("agent", {"rule", "1"}), nullptr).ok());
  for (int i = 2; i < 502; ++i) {
    EXPECT_FALSE(queue.Submit(Proposal("agent", {"rule", absl::StrCat(i)}), nullptr).ok());
  }
  ASSERT_EQ(sink.of("approval_limit_reached").size(), 1u);
  EXPECT_EQ(sink.of("approval_limit_reached")[0]["limit"], "max_pending_proposals_per_agent");
  EXPECT_EQ(sink.of("approval_limit_reached")[0]["agent_id"], "agent");
  EXPECT_TRUE(sink.of("approval_limit_burst_ended").empty());
  // A person decides one: the agent is below its cap, the burst is summarized.
  ASSERT_TRUE(queue.Decide(kept->approval_id, false, Scope::kOnce, "alice", "cli", "").ok());
  std::vector<nlohmann::json> ended = sink.of("approval_limit_burst_ended");
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0]["refused"], 500);
  EXPECT_EQ(ended[0]["value"], 2);
  // The next flood is a new burst: one more record.
  ASSERT_TRUE(queue.Submit(Proposal("agent", {"rule", "new"}), nullptr).ok());
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(queue.Submit(Proposal("agent", {"more", absl::StrCat(i)}), nullptr).ok());
  }
  EXPECT_EQ(sink.of("approval_limit_reached").size(), 2u);
  EXPECT_EQ(sink.of("approval_requested").size(), 3u);
}

TEST(ApprovalQueueLimits, ConcurrentSubmitsNeverPassTheCap) {
  ApprovalQueue queue({.max_pending_approvals_per_agent = 16});
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        Request request = CommandRequest(absl::StrCat("t_", t, "_", i));
        request.session_id = absl::StrCat("s_", t, "_", i);
        if (queue.Submit(request, nullptr).ok()) ++admitted;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(admitted.load(), 16);
  EXPECT_EQ(queue.List(false).size(), 16u);
}

TEST(ApprovalQueueLimits, ProposalsOverASizeLimitNameTheFieldAndLimit) {
  ProposalLimits limits{.max_words = 3, .max_rule_bytes = 10, .max_reason_bytes = 5};
  EXPECT_TRUE(CheckProposal({"git", "log"}, "why", limits).ok());
  nlohmann::json words = DetailsOf(CheckProposal({"a", "b", "c", "d"}, "", limits));
  EXPECT_EQ(words["field"], "rule");
  EXPECT_EQ(words["limit"], "max_proposal_words");
  EXPECT_EQ(words["value"], 3);
  nlohmann::json bytes = DetailsOf(CheckProposal({"0123456789", "x"}, "", limits));
  EXPECT_EQ(bytes["limit"], "max_proposal_rule_bytes");
  EXPECT_EQ(bytes["actual"], 12);
  absl::Status reason = CheckProposal({"ls"}, "because", limits);
  ASSERT_TRUE(core::ProblemOf(reason));
  EXPECT_EQ(core::ProblemOf(reason)->kind, core::Problem::kLimitReached);
  EXPECT_EQ(DetailsOf(reason)["field"], "reason");
  EXPECT_EQ(DetailsOf(reason)["limit"], "max_proposal_reason_bytes");
}

TEST(ApprovalQueueLimits, AListCutsLongTextsAndStaysWithinItsBudget) {
  ApprovalQueue queue({.max_pending_approvals_per_agent = 1000});
  for (int i = 0; i < 200; ++i) {
    Request request = CommandRequest(absl::StrCat("t_", i));
    request.session_id = absl::StrCat("s_", i);
    request.command = std::string(60000, 'x') + "\xC3\xA9";  // ends in a 2-byte character
    for (int v = 0; v < 100; ++v) request.env[absl::StrCat("V", v)] = std::string(600, 'v');
    ASSERT_TRUE(queue.Submit(request, nullptr).ok());
  }
  ListLimits limits{.text_bytes = 1001, .list_items = 16, .total_bytes = 1 << 20};
  ListView view = queue.ListAbridged(false, limits);
  size_t bytes = 0;
  for (const Entry& entry : view.entries) {
    EXPECT_TRUE(entry.abridged);
    EXPECT_LE(entry.request.command.size(), 1001u);
    EXPECT_LE(entry.request.env.size(), 16u);
    bytes += entry.request.command.size();
    for (const auto& [name, value] : entry.request.env) bytes += name.size() + value.size();
  }
  EXPECT_LE(bytes, limits.total_bytes);
  EXPECT_GT(view.entries.size(), 10u);
  EXPECT_EQ(view.entries.size() + view.omitted, 200u);
  // Cut at a character boundary, never inside one.
  ListView tight =
      queue.ListAbridged(false, {.text_bytes = 60001, .list_items = 16, .total_bytes = 1 << 30});
  EXPECT_EQ(tight.entries[0].request.command.size(), 60000u);
  // The whole request is still there for whoever asks for it.
  EXPECT_EQ(queue.Find(view.entries[0].approval_id)->request.command.size(), 60002u);
  EXPECT_FALSE(queue.ListAbridged(false, {}).entries.empty());
}

TEST(ApprovalQueue, ParsesScopes) {
  EXPECT_EQ(*ParseScope("terminal"), Scope::kTerminal);
  EXPECT_FALSE(ParseScope("forever").ok());
}

}  // namespace
}  // namespace termbridge::approval

namespace termbridge::approval {
namespace {

// A clock the test moves by hand.
struct ManualClock {
  absl::Mutex mu;
  absl::Time now = absl::FromUnixSeconds(1795687200);
  absl::Time Now() {
    absl::MutexLock lock(&mu);
    return now;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu);
    now += d;
  }
};

// Waits up to 10 s for the sink to hold a record of `event`, looking every
// few ms (the queue's own thread writes it: there is no event to wait on).
std::vector<nlohmann::json> AwaitRecords(RecordingSink& sink, std::string_view event) {
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (sink.of(event).empty() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  return sink.of(event);
}

TEST(ApprovalQueueGrants, ATimeBoxedTerminalGrantEndsAndIsAuditedWhenFoundExpired) {
  RecordingSink sink;
  ManualClock clock;
  ApprovalQueue queue({.audit = &sink, .clock = [&clock] { return clock.Now(); }});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest("t_A"), nullptr);
  ASSERT_TRUE(entry.ok());
  const absl::Time until = clock.Now() + absl::Hours(1);
  absl::StatusOr<Entry> decided =
      queue.Decide(entry->approval_id, true, Scope::kTerminal, "alice", "cli", "", until);
  ASSERT_TRUE(decided.ok());
  EXPECT_EQ(decided->grant_expires_at, until);
  EXPECT_EQ(sink.last()["grant_expires_at"], "2026-11-26T11:00:00Z");
  std::optional<TerminalGrant> grant = queue.TerminalGrantFor("t_A");
  ASSERT_TRUE(grant.has_value());
  EXPECT_EQ(grant->granted_by, "alice");
  EXPECT_EQ(grant->expires_at, until);
  EXPECT_EQ(grant->command, "npm test");
  ASSERT_EQ(queue.TerminalGrants().size(), 1u);
  clock.Advance(absl::Hours(1));
  EXPECT_FALSE(queue.TerminalGranted("t_A")) << "the grant ends at its expiry";
  EXPECT_TRUE(queue.TerminalGrants().empty());
  std::vector<nlohmann::json> ended = sink.of(kGrantExpired);
  ASSERT_EQ(ended.size(), 1u) << "audited once";
  EXPECT_EQ(ended[0]["kind"], "terminal");
  EXPECT_EQ(ended[0]["terminal_id"], "t_A");
  EXPECT_EQ(ended[0]["approval_id"], entry->approval_id);
  EXPECT_EQ(ended[0]["expires_at"], "2026-11-26T11:00:00Z");
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
  EXPECT_EQ(sink.of(kGrantExpired).size(), 1u);
}

// The gate grants the terminal once the approved command started, which
// can be after the grant's end: an ended grant is never granted again, nor
// audited twice (a thread-sanitizer run of CommandGateTest saw two records).
TEST(ApprovalQueueGrants, AGrantThatEndedBeforeItsCommandStartedStaysEnded) {
  RecordingSink sink;
  ManualClock clock;
  ApprovalQueue queue({.audit = &sink, .clock = [&clock] { return clock.Now(); }});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest("t_A"), nullptr);
  ASSERT_TRUE(entry.ok());
  const absl::Time until = clock.Now() + absl::Minutes(15);
  ASSERT_TRUE(
      queue.Decide(entry->approval_id, true, Scope::kTerminal, "alice", "cli", "", until).ok());
  clock.Advance(absl::Minutes(15));
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
  ASSERT_EQ(sink.of(kGrantExpired).size(), 1u);
  TerminalGrant late;
  late.terminal_id = "t_A";
  late.approval_id = entry->approval_id;
  late.granted_by = "alice";
  late.expires_at = until;
  queue.GrantTerminal(late);
  EXPECT_TRUE(queue.TerminalGrants().empty());
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
  EXPECT_EQ(sink.of(kGrantExpired).size(), 1u) << "audited once";
}

// A command approved "for this terminal" can start after the person handed
// the terminal to another agent or closed it (its start waits for a
// viewer): the grant it came with ended then and does not come back.
TEST(ApprovalQueueGrants, AGrantTheTerminalLostIsNotGrantedAgain) {
  ManualClock clock;
  ApprovalQueue queue({.clock = [&clock] { return clock.Now(); }});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest(""), nullptr);  // opens a terminal
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kTerminal, "alice", "cli", "").ok());
  clock.Advance(absl::Seconds(5));
  queue.CancelTerminal("t_new");  // handed over while the command waited for a viewer
  TerminalGrant late;
  late.terminal_id = "t_new";
  late.agent_id = "agent-1";
  late.approval_id = entry->approval_id;
  late.expires_at = absl::InfiniteFuture();
  queue.GrantTerminal(late);
  EXPECT_FALSE(queue.TerminalGranted("t_new"));
  // A grant for a terminal that lost its grants before the decision is kept.
  absl::StatusOr<Entry> next = queue.Submit(CommandRequest(""), nullptr);
  ASSERT_TRUE(next.ok());
  clock.Advance(absl::Seconds(5));
  ASSERT_TRUE(queue.Decide(next->approval_id, true, Scope::kTerminal, "alice", "cli", "").ok());
  late.approval_id = next->approval_id;
  queue.GrantTerminal(late);
  EXPECT_TRUE(queue.TerminalGranted("t_new"));
  // One whose decision the queue does not know is never granted.
  late.terminal_id = "t_other";
  late.approval_id = "a_unknown";
  queue.GrantTerminal(late);
  EXPECT_FALSE(queue.TerminalGranted("t_other"));
}

TEST(ApprovalQueueGrants, AGrantWithoutALimitLastsUntilTheTerminalCloses) {
  ManualClock clock;
  ApprovalQueue queue({.clock = [&clock] { return clock.Now(); }});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest("t_A"), nullptr);
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kTerminal, "alice", "cli", "").ok());
  clock.Advance(absl::Hours(24 * 365));
  EXPECT_TRUE(queue.TerminalGranted("t_A"));
  queue.CancelTerminal("t_A");
  EXPECT_FALSE(queue.TerminalGranted("t_A"));
}

TEST(ApprovalQueueGrants, TheSweepEndsUnusedGrantsOnItsOwn) {
  RecordingSink sink;
  ApprovalQueue queue({.audit = &sink});
  absl::StatusOr<Entry> entry = queue.Submit(CommandRequest("t_B"), nullptr);
  ASSERT_TRUE(entry.ok());
  ASSERT_TRUE(queue
                  .Decide(entry->approval_id, true, Scope::kTerminal, "bob", "cli", "",
                          absl::Now() + absl::Milliseconds(50))
                  .ok());
  RuleGrant rule;
  rule.rule_id = "always-make-1";
  rule.rule_toml = "[[rule]]\n";
  rule.expires_at = absl::Now() + absl::Milliseconds(80);
  queue.FollowRuleGrant(rule);
  queue.FollowRuleGrant(rule);  // followed once
  EXPECT_EQ(queue.RuleGrants().size(), 1u);
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (sink.of(kGrantExpired).size() < 2 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  std::vector<nlohmann::json> ended = AwaitRecords(sink, kGrantExpired);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0]["kind"], "terminal");
  EXPECT_EQ(ended[0]["found"], "sweep");
  EXPECT_EQ(ended[1]["kind"], "rule");
  EXPECT_EQ(ended[1]["rule_id"], "always-make-1");
  EXPECT_TRUE(queue.RuleGrants().empty());
  EXPECT_FALSE(queue.TerminalGranted("t_B"));
  // Followed again after its end (the policy still holds it): not twice.
  queue.FollowRuleGrant(rule);
  EXPECT_TRUE(queue.RuleGrants().empty());
}

TEST(ApprovalQueueGrants, WhatAlwaysWouldWriteTravelsWithTheRequest) {
  ApprovalQueue queue({});
  Request request = CommandRequest();
  request.always_rules_toml = "[[rule]]\nid = \"x\"\n";
  absl::StatusOr<Entry> entry = queue.Submit(request, nullptr);
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(queue.Find(entry->approval_id)->request.always_rules_toml, request.always_rules_toml);
  EXPECT_TRUE(queue.UpdateAlways(entry->approval_id, "", "it changed"));
  EXPECT_EQ(queue.Find(entry->approval_id)->request.always_refusal, "it changed");
  // A list that must cut the rule shows none of it, never part of it.
  EXPECT_TRUE(queue.UpdateAlways(entry->approval_id, std::string(2000, 'r'), ""));
  ListView view = queue.ListAbridged(false, ListLimits{});
  ASSERT_EQ(view.entries.size(), 1u);
  EXPECT_EQ(view.entries[0].request.always_rules_toml, "");
  EXPECT_TRUE(view.entries[0].abridged);
  ASSERT_TRUE(queue.Decide(entry->approval_id, true, Scope::kOnce, "a", "cli", "").ok());
  EXPECT_FALSE(queue.UpdateAlways(entry->approval_id, "", "")) << "decided: nothing to update";
}

}  // namespace
}  // namespace termbridge::approval
