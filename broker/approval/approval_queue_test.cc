// Tests for the approval queue: decisions reach the waiting request exactly
// once, with the person's note; timeouts end requests; terminal grants stick;
// every request and decision is audited before it is acknowledged.
#include "broker/approval/approval_queue.h"

#include <atomic>
#include <string>
#include <vector>

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
  absl::StatusOr<Entry> again = queue.Decide(entry->approval_id, false, Scope::kOnce, "bob", "cli", "");
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
  ASSERT_TRUE(queue.Decide(entry->approval_id, false, Scope::kAlways, "alice", "console",
                           "use the staging db")
                  .ok());
  EXPECT_EQ(decided.state, State::kDenied);
  EXPECT_EQ(decided.note, "use the staging db");
  EXPECT_EQ(decided.scope, Scope::kOnce);  // a denial never grants anything
  EXPECT_EQ(queue.FindBySession("s_1")->state, State::kDenied);
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

TEST(ApprovalQueue, ParsesScopes) {
  EXPECT_EQ(*ParseScope("terminal"), Scope::kTerminal);
  EXPECT_FALSE(ParseScope("forever").ok());
}

}  // namespace
}  // namespace termbridge::approval
