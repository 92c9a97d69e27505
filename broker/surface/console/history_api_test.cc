// The console's history views: the query a page sends becomes the CLI's
// filter (bad values refused by name), and an audit log that AuditLog
// itself wrote answers decisions (with the terminals' names) and a
// terminal's timeline with the output offsets the page scrolls to.
#include "broker/surface/console/history_api.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "broker/audit/audit_log.h"
#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

using nlohmann::json;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(ParseHistoryRequest, DecisionFiltersComeFromTheQuery) {
  auto request = ParseHistoryRequest("/api/history/decisions",
                                     "agent=ag&terminal=t_1&decision=ask&since=2h&limit=5", kNow);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->kind, HistoryRequest::Kind::kDecisions);
  EXPECT_EQ(request->filter.agent, "ag");
  EXPECT_EQ(request->filter.terminal, "t_1");
  EXPECT_EQ(request->filter.decision, "ask");
  EXPECT_EQ(request->filter.since, kNow - absl::Hours(2));
  EXPECT_FALSE(request->filter.until.has_value());
  EXPECT_EQ(request->filter.limit, 5u);
  auto until =
      ParseHistoryRequest("/api/history/decisions", "until=2027-01-15T08%3A00%3A00Z", kNow);
  ASSERT_TRUE(until.ok()) << until.status();
  EXPECT_EQ(until->filter.until,
            absl::FromCivil(absl::CivilSecond(2027, 1, 15, 8, 0, 0), absl::UTCTimeZone()));
  auto none = ParseHistoryRequest("/api/history/decisions", "", kNow);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->filter.agent.empty());
  EXPECT_EQ(none->filter.limit, 0u);
}

TEST(ParseHistoryRequest, BadValuesAreRefusedByName) {
  for (const char* query :
       {"decision=maybe", "since=yesterday", "until=5x", "limit=-1", "limit=many"}) {
    auto request = ParseHistoryRequest("/api/history/decisions", query, kNow);
    ASSERT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument) << query;
    std::string field(query, std::string_view(query).find('='));
    EXPECT_TRUE(absl::StartsWith(request.status().message(), field)) << request.status();
  }
  std::string long_agent = "agent=" + std::string(300, 'a');
  EXPECT_EQ(ParseHistoryRequest("/api/history/decisions", long_agent, kNow).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseHistoryRequest("/api/history/timeline", "", kNow).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto timeline = ParseHistoryRequest("/api/history/timeline", "terminal_id=t_1", kNow);
  ASSERT_TRUE(timeline.ok());
  EXPECT_EQ(timeline->kind, HistoryRequest::Kind::kTimeline);
  EXPECT_EQ(timeline->terminal_id, "t_1");
}

class AnswerHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("tb-console-history-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    live_ = (dir_ / "audit.jsonl").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Add(audit::AuditLog& log, std::string_view event, json fields) {
    now_ += absl::Seconds(1);
    ASSERT_TRUE(log.Append(event, std::move(fields)).ok());
  }

  // t_1 ("build") runs `make`, approved by alice, exit 2 with output [10, 250);
  // agent "other" is denied `rm -rf /` in t_2.
  void Write() {
    auto log = audit::AuditLog::Open(live_, [this] { return now_; });
    ASSERT_TRUE(log.ok()) << log.status();
    audit::AuditLog& l = **log;
    Add(l, audit::kTerminalOpened, {{"terminal_id", "t_1"}, {"agent_id", "ag"}, {"name", "x"}});
    Add(l, "terminal_renamed", {{"terminal_id", "t_1"}, {"name", "build"}, {"by", "alice"}});
    Add(l, audit::kCommandRequested,
        {{"trace_id", "tr1"}, {"agent_id", "ag"}, {"command", "make"}, {"terminal_id", "t_1"}});
    Add(l, audit::kApprovalRequested,
        {{"approval_id", "a_1"},
         {"kind", "command"},
         {"command", "make"},
         {"agent_id", "ag"},
         {"terminal_id", "t_1"},
         {"session_id", "s_1"},
         {"trace_id", "tr1"},
         {"rule", "ask-all"}});
    Add(l, audit::kApprovalDecided,
        {{"approval_id", "a_1"},
         {"command", "make"},
         {"agent_id", "ag"},
         {"terminal_id", "t_1"},
         {"session_id", "s_1"},
         {"decision", "approved"},
         {"scope", "once"},
         {"approver", "alice"},
         {"surface", "console"},
         {"note", ""}});
    Add(l, audit::kCommandStarted,
        {{"session_id", "s_1"}, {"terminal_id", "t_1"}, {"agent_id", "ag"}});
    Add(l, audit::kCommandExited,
        {{"session_id", "s_1"},
         {"terminal_id", "t_1"},
         {"agent_id", "ag"},
         {"exit_code", 2},
         {"signal", nullptr},
         {"output", {{"from", 10}, {"to", 250}}}});
    Add(l, audit::kPolicyDecided,
        {{"session_id", "s_2"},
         {"trace_id", "tr2"},
         {"agent_id", "other"},
         {"terminal_id", "t_2"},
         {"decision", {{"command", "rm -rf /"}, {"rule_id", "no-rm"}, {"reason", "deny"}}},
         {"action", "deny"},
         {"surface", "policy"}});
  }

  HistoryAnswer Ask(std::string_view path, std::string_view query) {
    auto request = ParseHistoryRequest(path, query, absl::Now());
    EXPECT_TRUE(request.ok()) << request.status();
    return AnswerHistory(live_, *request);
  }

  std::filesystem::path dir_;
  std::string live_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(AnswerHistoryTest, DecisionsAreFilteredAndNameTheirTerminals) {
  Write();
  HistoryAnswer all = Ask("/api/history/decisions", "");
  ASSERT_EQ(all.http_status, 200) << all.body;
  ASSERT_EQ(all.body["decisions"].size(), 2u);
  EXPECT_EQ(all.body["matched"], 2);
  EXPECT_EQ(all.body["decisions"][0]["decision"], "approved");
  EXPECT_EQ(all.body["decisions"][0]["decided_by"], "alice via console, scope once");
  EXPECT_EQ(all.body["decisions"][1]["decided_by"], "rule no-rm");
  EXPECT_EQ(all.body["terminal_names"], (json{{"t_1", "build"}}));  // renamed; t_2 has none

  HistoryAnswer asked = Ask("/api/history/decisions", "decision=ask");
  ASSERT_EQ(asked.body["decisions"].size(), 1u);
  EXPECT_EQ(asked.body["decisions"][0]["approval_id"], "a_1");
  EXPECT_EQ(Ask("/api/history/decisions", "agent=other").body["decisions"][0]["command"],
            "rm -rf /");
  EXPECT_EQ(Ask("/api/history/decisions", "terminal=t_9").body["decisions"].size(), 0u);
  HistoryAnswer newest = Ask("/api/history/decisions", "limit=1");
  ASSERT_EQ(newest.body["decisions"].size(), 1u);
  EXPECT_EQ(newest.body["matched"], 2);
  EXPECT_EQ(newest.body["decisions"][0]["decision"], "deny");
  // The records are from 2027: none is until 2026.
  EXPECT_EQ(Ask("/api/history/decisions", "until=2026-01-01T00:00:00Z").body["decisions"].size(),
            0u);
}

TEST_F(AnswerHistoryTest, ATimelineCarriesDecisionExitAndOutputOffsets) {
  Write();
  HistoryAnswer timeline = Ask("/api/history/timeline", "terminal_id=t_1");
  ASSERT_EQ(timeline.http_status, 200) << timeline.body;
  EXPECT_EQ(timeline.body["name"], "build");
  const json* command = nullptr;
  for (const json& entry : timeline.body["entries"]) {
    if (entry["kind"] == "command") command = &entry;
  }
  ASSERT_NE(command, nullptr) << timeline.body;
  EXPECT_EQ((*command)["command"], "make");
  EXPECT_EQ((*command)["exit_code"], 2);
  EXPECT_EQ((*command)["duration_ms"], 1000);
  EXPECT_EQ((*command)["output"], (json{{"from", 10}, {"to", 250}}));
  EXPECT_EQ((*command)["decision"]["approver"], "alice");

  HistoryAnswer unknown = Ask("/api/history/timeline", "terminal_id=t_9");
  EXPECT_EQ(unknown.http_status, 404);
  EXPECT_EQ(unknown.body["error"]["status"], "NOT_FOUND");
}

TEST_F(AnswerHistoryTest, NoLogIsNotFoundAndAnAuditOffBrokerIsSaidSo) {
  auto request = ParseHistoryRequest("/api/history/decisions", "", kNow);
  ASSERT_TRUE(request.ok());
  EXPECT_EQ(AnswerHistory(live_, *request).http_status, 404);  // never written
  HistoryAnswer off = AnswerHistory("", *request);
  EXPECT_EQ(off.http_status, 412);
  EXPECT_NE(off.body["error"]["message"].get<std::string>().find("no audit log"),
            std::string::npos);
}

// The console reads at most 256 MiB of audit log (a gzip file counting ten
// times its size) and otherwise says to use the CLI. The big files are
// sparse: cheap to make, and what counts is their size.
TEST_F(AnswerHistoryTest, ALogPastTheReadCapAnswers413AndNamesTheCli) {
  Write();
  auto sparse = [this](const std::string& name, uintmax_t bytes) {
    const std::filesystem::path file = dir_ / name;
    { std::ofstream create(file); }
    std::filesystem::resize_file(file, bytes);
    return file;
  };
  for (const std::string query : {"", "terminal_id=t_1"}) {
    const std::string path = query.empty() ? "/api/history/decisions" : "/api/history/timeline";
    EXPECT_EQ(Ask(path, query).http_status, 200);
    std::filesystem::path big = sparse("audit.jsonl.1", (uintmax_t{256} << 20) + 4096);
    HistoryAnswer refused = Ask(path, query);
    EXPECT_EQ(refused.http_status, 413) << path;
    EXPECT_EQ(refused.body["error"]["status"], "RESOURCE_EXHAUSTED");
    const std::string message = refused.body["error"]["message"].get<std::string>();
    EXPECT_TRUE(absl::StrContains(message, "termbridge approvals history")) << message;
    EXPECT_TRUE(absl::StrContains(message, "256 MiB")) << message;
    std::filesystem::remove(big);

    // 26 MiB of gzip counts as 260 MiB.
    big = sparse("audit.jsonl.2.gz", uintmax_t{26} << 20);
    EXPECT_EQ(Ask(path, query).http_status, 413) << path;
    std::filesystem::remove(big);
  }
}

}  // namespace
}  // namespace termbridge::console
