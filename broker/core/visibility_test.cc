// The visibility guarantee's rules (docs/security.md), without a process: a
// fake terminal stands for the PTY, its viewers and the clock of its wait (a
// viewer "arrives" at a time of the test's choosing; the wait takes no real
// time), and a fake window launcher records what it was asked to open. Each
// test asserts whether the command may be written, what the agent is told
// (the Problem and its details) and what the terminal's viewers see.
#include "broker/core/visibility.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/core/problem.h"
#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

// A terminal with `viewers_now` viewers and, when set, one more arriving
// `viewer_arrives_after` into a wait. Its clock moves only in WaitForViewer:
// to the arrival, or by the whole timeout when none comes in time.
class FakeTerminal : public ViewedTerminal {
 public:
  session::LockMode lock() const override { return lock_mode; }
  int viewers() const override { return viewers_now; }
  bool WaitForViewer(absl::Duration timeout) override {
    waits.push_back(timeout);
    if (viewer_arrives_after && *viewer_arrives_after <= timeout) {
      elapsed += *viewer_arrives_after;
      ++viewers_now;
      return true;
    }
    elapsed += timeout;
    return false;
  }
  void PostNotice(std::string text) override { notices.push_back(std::move(text)); }

  session::LockMode lock_mode = session::LockMode::kShared;
  int viewers_now = 0;
  std::optional<absl::Duration> viewer_arrives_after;
  absl::Duration elapsed = absl::ZeroDuration();  // the fake clock
  std::vector<absl::Duration> waits;              // the timeout of every wait
  std::vector<std::string> notices;
};

class VisibilityTest : public ::testing::Test {
 protected:
  VisibilityTest() {
    record_.session_id = "s_1";
    record_.terminal_id = "t_1";
    record_.agent_id = "agent-a";
    record_.command = "make test";
    options_.spawn_timeout = absl::Milliseconds(8000);
    options_.other_surfaces = {"console: no tab open at http://127.0.0.1:45460",
                               "watch: no termbridge watch running"};
    // A window that opens: the way the broker is wired with a display.
    options_.open_window = [this](const std::string& terminal_id) {
      windows_.push_back(terminal_id);
      return window_result_;
    };
  }

  absl::Status Await() { return AwaitViewer(record_, terminal_, options_); }

  SessionRecord record_;
  FakeTerminal terminal_;
  VisibilityOptions options_;
  std::vector<std::string> windows_;  // terminals a window was opened for
  absl::Status window_result_ = absl::OkStatus();
};

TEST_F(VisibilityTest, AViewerAlreadyThereLetsTheCommandRunAtOnce) {
  terminal_.viewers_now = 1;
  EXPECT_TRUE(Await().ok());
  EXPECT_TRUE(windows_.empty());  // nothing more to show
  EXPECT_TRUE(terminal_.waits.empty());
  EXPECT_EQ(terminal_.elapsed, absl::ZeroDuration());
  EXPECT_TRUE(terminal_.notices.empty());
}

TEST_F(VisibilityTest, NobodyWatchingAfterTheTimeoutIsNoViewerNamingEverySurfaceTried) {
  absl::Status status = Await();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "no one is watching terminal t_1 after 8000 ms; the command was not run");
  std::optional<ProblemInfo> problem = ProblemOf(status);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->kind, Problem::kNoViewer);
  EXPECT_EQ(problem->details["terminal_id"], "t_1");
  EXPECT_EQ(problem->details["session_id"], "s_1");
  EXPECT_EQ(problem->details["spawn_timeout_ms"], 8000);
  EXPECT_EQ(
      problem->details["surfaces_tried"],
      nlohmann::json({"window: opened, nobody attached",
                      "console: no tab open at http://127.0.0.1:45460",
                      "watch: no termbridge watch running", "attach: termbridge attach t_1"}));
  // The core names no cause of its own: the edge gives no_viewer as
  // details.reason (broker/service errors_test, NoViewerSays...).
  EXPECT_FALSE(problem->details.contains("reason"));
  // One window, for this terminal; one wait, of the whole spawn timeout.
  EXPECT_EQ(windows_, std::vector<std::string>{"t_1"});
  EXPECT_EQ(terminal_.waits, std::vector<absl::Duration>{absl::Milliseconds(8000)});
  EXPECT_EQ(terminal_.elapsed, absl::Milliseconds(8000));
}

TEST_F(VisibilityTest, AViewerArrivingWhileItWaitsLetsTheCommandRun) {
  terminal_.viewer_arrives_after = absl::Milliseconds(2500);  // the window's attach
  EXPECT_TRUE(Await().ok());
  EXPECT_EQ(windows_, std::vector<std::string>{"t_1"});
  EXPECT_EQ(terminal_.elapsed, absl::Milliseconds(2500));  // not the whole timeout
}

TEST_F(VisibilityTest, AViewerArrivingAfterTheTimeoutIsTooLate) {
  options_.spawn_timeout = absl::Milliseconds(500);
  terminal_.viewer_arrives_after = absl::Milliseconds(501);
  absl::Status status = Await();
  ASSERT_TRUE(ProblemOf(status).has_value()) << status;
  EXPECT_EQ(ProblemOf(status)->kind, Problem::kNoViewer);
  EXPECT_EQ(ProblemOf(status)->details["spawn_timeout_ms"], 500);
  EXPECT_EQ(terminal_.waits, std::vector<absl::Duration>{absl::Milliseconds(500)});
}

TEST_F(VisibilityTest, AWindowThatFailsToOpenIsReportedWithItsReason) {
  window_result_ = absl::UnavailableError("cannot start xterm: No such file or directory");
  absl::Status status = Await();
  std::optional<ProblemInfo> problem = ProblemOf(status);
  ASSERT_TRUE(problem.has_value()) << status;
  EXPECT_EQ(problem->kind, Problem::kNoViewer);
  EXPECT_EQ(problem->details["surfaces_tried"][0],
            "window: cannot start xterm: No such file or directory");
  EXPECT_EQ(problem->details["surfaces_tried"].size(), 4u);
  // It still waited the whole timeout for another viewer.
  EXPECT_EQ(terminal_.waits, std::vector<absl::Duration>{absl::Milliseconds(8000)});
}

TEST_F(VisibilityTest, AFailedWindowStillLetsAnotherViewerArrive) {
  window_result_ = absl::UnavailableError("cannot start xterm");
  terminal_.viewer_arrives_after = absl::Milliseconds(4000);  // termbridge attach
  EXPECT_TRUE(Await().ok());
}

TEST_F(VisibilityTest, WithoutWindowsTheReasonOrOffIsReported) {
  options_.open_window = nullptr;
  options_.window_unavailable_reason = "no DISPLAY or WAYLAND_DISPLAY";
  std::optional<ProblemInfo> problem = ProblemOf(Await());
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->details["surfaces_tried"][0], "window: no DISPLAY or WAYLAND_DISPLAY");

  options_.window_unavailable_reason.clear();
  options_.other_surfaces.clear();
  problem = ProblemOf(Await());
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->details["surfaces_tried"],
            nlohmann::json({"window: off", "attach: termbridge attach t_1"}));
  EXPECT_TRUE(windows_.empty());
}

TEST_F(VisibilityTest, WhenNoViewerIsRequiredTheCommandRunsUnwatched) {
  options_.require_viewer = false;
  EXPECT_TRUE(Await().ok());
  EXPECT_TRUE(windows_.empty());
  EXPECT_TRUE(terminal_.waits.empty());
}

TEST_F(VisibilityTest, AUserOnlyTerminalRefusesTheCommandAndTellsItsViewers) {
  terminal_.lock_mode = session::LockMode::kUserOnly;
  terminal_.viewers_now = 1;        // watched: the lock alone refuses
  options_.require_viewer = false;  // and it is not about viewers
  absl::Status status = Await();
  std::optional<ProblemInfo> problem = ProblemOf(status);
  ASSERT_TRUE(problem.has_value()) << status;
  EXPECT_EQ(problem->kind, Problem::kDeclined);
  EXPECT_EQ(problem->details, nlohmann::json({{"terminal_id", "t_1"}, {"lock", "user_only"}}));
  EXPECT_EQ(status.message(),
            "terminal t_1 is user_only: a person holds its input; the command was not run");
  EXPECT_EQ(terminal_.notices, std::vector<std::string>{
                                   "agent command refused: the terminal is user_only: make test"});
  EXPECT_TRUE(windows_.empty());
  EXPECT_TRUE(terminal_.waits.empty());
}

TEST_F(VisibilityTest, OtherLocksOnlyNeedAViewer) {
  for (session::LockMode mode : {session::LockMode::kShared, session::LockMode::kAgentOnly}) {
    terminal_.lock_mode = mode;
    terminal_.viewers_now = 1;
    EXPECT_TRUE(Await().ok()) << session::LockModeName(mode);
    terminal_.viewers_now = 0;
    EXPECT_EQ(ProblemOf(Await())->kind, Problem::kNoViewer) << session::LockModeName(mode);
  }
  EXPECT_TRUE(terminal_.notices.empty());
}

approval::Entry Requested() {
  approval::Entry entry;
  entry.approval_id = "a_7";
  entry.request.command = "rm -rf build";
  entry.request.cwd = "/home/dev/app";
  entry.request.env = {{"A", "1"}, {"B", "two"}};
  entry.request.terminal_id = "t_1";
  entry.request.agent_id = "agent-a";
  entry.request.rule = "ask-rm";
  entry.request.reason = "removes files";
  return entry;
}

TEST(ApprovalNoticeTest, ARequestShowsEverythingTheCommandWillGet) {
  EXPECT_EQ(ApprovalNotice("requested", Requested()),
            "approval needed (a_7): rm -rf build  [cwd /home/dev/app]  [env A=1]  [env B=two]  "
            "[terminal t_1]  [agent agent-a]  [rule ask-rm: removes files]");
  approval::Entry plain = Requested();
  plain.request.cwd.clear();
  plain.request.env.clear();
  plain.request.rule.clear();
  plain.request.reason.clear();
  EXPECT_EQ(ApprovalNotice("requested", plain),
            "approval needed (a_7): rm -rf build  [terminal t_1]  [agent agent-a]  "
            "[default action]");
}

TEST(ApprovalNoticeTest, DecisionsSayWhoDecidedHowAndWhere) {
  approval::Entry entry = Requested();
  entry.state = approval::State::kApproved;
  entry.scope = approval::Scope::kTerminal;
  entry.approver = "alice";
  entry.surface = "console";
  EXPECT_EQ(ApprovalNotice("decided", entry),
            "approved terminal by alice via console: rm -rf build");
  entry.state = approval::State::kDenied;
  entry.surface = "cli";
  entry.note = "use make clean";
  EXPECT_EQ(ApprovalNotice("decided", entry),
            "denied by alice via cli: rm -rf build (use make clean)");
  entry.note.clear();
  EXPECT_EQ(ApprovalNotice("decided", entry), "denied by alice via cli: rm -rf build");
  entry.state = approval::State::kTimedOut;
  EXPECT_EQ(ApprovalNotice("decided", entry), "approval timed_out: rm -rf build");
}

}  // namespace
}  // namespace termbridge::core
