// Tests for audit_history.h over logs AuditLog itself wrote: rotated files
// (gzip too) read in order, corrupt lines counted, decisions of the policy
// and of people, the filters, and a terminal's timeline joined by session.
#include "broker/cli/audit_history.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/time/clock.h"
#include "broker/audit/audit_log.h"
#include "gtest/gtest.h"

namespace termbridge::cli::history {
namespace {

using nlohmann::json;

class AuditHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    live_ = (dir_ / "audit.jsonl").string();
  }

  std::unique_ptr<audit::AuditLog> Open() {
    auto log = audit::AuditLog::Open(live_, [this] { return now_; });
    EXPECT_TRUE(log.ok()) << log.status();
    return *std::move(log);
  }

  void Add(audit::AuditLog& log, std::string_view event, json fields) {
    now_ += absl::Seconds(1);
    ASSERT_TRUE(log.Append(event, std::move(fields)).ok());
  }

  // One command in t_1: asked, approved by alice, ran, exited 3.
  void AskedAndRan(audit::AuditLog& log) {
    Add(log, audit::kTerminalOpened,
        {{"terminal_id", "t_1"}, {"agent_id", "ag"}, {"shell", "bash"}});
    Add(log, audit::kCommandRequested,
        {{"trace_id", "tr1"},
         {"agent_id", "ag"},
         {"command", "make\x1b[2J"},
         {"terminal_id", "t_1"}});
    Add(log, audit::kApprovalRequested,
        {{"approval_id", "a_1"},
         {"kind", "command"},
         {"command", "make\x1b[2J"},
         {"agent_id", "ag"},
         {"terminal_id", "t_1"},
         {"session_id", "s_1"},
         {"trace_id", "tr1"},
         {"rule", "ask-all"}});
    Add(log, audit::kApprovalDecided,
        {{"approval_id", "a_1"},
         {"command", "make\x1b[2J"},
         {"agent_id", "ag"},
         {"terminal_id", "t_1"},
         {"session_id", "s_1"},
         {"decision", "approved"},
         {"scope", "once"},
         {"approver", "alice"},
         {"surface", "cli"},
         {"note", ""}});
    Add(log, audit::kCommandStarted,
        {{"session_id", "s_1"}, {"terminal_id", "t_1"}, {"agent_id", "ag"}});
    Add(log, audit::kCommandExited,
        {{"session_id", "s_1"},
         {"terminal_id", "t_1"},
         {"agent_id", "ag"},
         {"exit_code", 3},
         {"signal", nullptr},
         {"output", {{"from", 10}, {"to", 250}}}});
  }

  // One command the policy denied in t_1, by agent "other".
  void Denied(audit::AuditLog& log) {
    Add(log, audit::kPolicyDecided,
        {{"session_id", "s_2"},
         {"trace_id", "tr2"},
         {"agent_id", "other"},
         {"terminal_id", "t_1"},
         {"decision", {{"command", "rm -rf /"}, {"rule_id", "no-rm"}, {"reason", "deny: no-rm"}}},
         {"action", "deny"},
         {"surface", "policy"}});
    Add(log, audit::kCommandRefused,
        {{"session_id", "s_2"},
         {"trace_id", "tr2"},
         {"agent_id", "other"},
         {"terminal_id", "t_1"},
         {"code", "PM_TERM_POLICY_DENIED"},
         {"reason", "denied by rule no-rm"}});
  }

  std::filesystem::path dir_;
  std::string live_;
  absl::Time now_ = absl::FromUnixSeconds(1'800'000'000);
};

TEST_F(AuditHistoryTest, ReadsRotatedGzipFilesInOrderAndCountsCorruptLines) {
  {
    auto log = Open();
    AskedAndRan(*log);
  }
  // logrotate: move, compress; the broker opens a new live file.
  std::string rotated = live_ + ".1.gz";
  {
    std::ifstream in(live_, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    gzFile gz = gzopen(rotated.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    std::string data = text.str();
    gzwrite(gz, data.data(), static_cast<unsigned>(data.size()));
    gzclose(gz);
    std::filesystem::remove(live_);
  }
  {
    auto log = Open();
    Denied(*log);
  }
  { std::ofstream(live_, std::ios::app) << "{not json\n"; }
  absl::StatusOr<std::vector<std::string>> files = FindAuditFiles(live_);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  absl::StatusOr<AuditRecords> read = ReadAuditRecords(*files);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->skipped_lines, 1u);
  ASSERT_EQ(read->records.size(), 8u);
  EXPECT_EQ(read->records.front()["event"], "terminal_opened");
  EXPECT_EQ(read->records.back()["event"], "command_refused");
}

TEST_F(AuditHistoryTest, NoLogIsNotFoundAndAnUnreadableOneIsAnError) {
  EXPECT_EQ(FindAuditFiles(live_).status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<AuditRecords> read = ReadAuditRecords({live_});
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.status().message().find(live_), std::string::npos);
}

TEST_F(AuditHistoryTest, DecisionsOfPolicyAndPeopleAndTheirFilters) {
  {
    auto log = Open();
    AskedAndRan(*log);
    Denied(*log);
  }
  auto read = ReadAuditRecords({live_});
  ASSERT_TRUE(read.ok());
  std::vector<Decision> all = Decisions(read->records);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].decision, "approved");
  EXPECT_TRUE(all[0].asked);
  EXPECT_EQ(DecidedBy(all[0]), "alice via cli, scope once");
  EXPECT_EQ(all[1].decision, "deny");
  EXPECT_EQ(DecidedBy(all[1]), "rule no-rm");
  EXPECT_EQ(all[1].note, "deny: no-rm");

  DecisionFilter ask;
  ask.decision = "ask";
  ASSERT_EQ(Filter(all, ask).size(), 1u);
  EXPECT_EQ(Filter(all, ask)[0].approval_id, "a_1");
  DecisionFilter agent;
  agent.agent = "other";
  ASSERT_EQ(Filter(all, agent).size(), 1u);
  DecisionFilter limit;
  limit.limit = 1;
  ASSERT_EQ(Filter(all, limit).size(), 1u);
  EXPECT_EQ(Filter(all, limit)[0].decision, "deny");  // the newest
  DecisionFilter since;
  since.since = all[1].time;
  EXPECT_EQ(Filter(all, since).size(), 1u);
  Decision timed_out = all[0];
  timed_out.decision = "timed_out";
  timed_out.approver = timed_out.surface = "broker";
  EXPECT_EQ(DecidedBy(timed_out), "nobody (timed out)");
  DecisionFilter by_state;
  by_state.decision = "timed_out";
  EXPECT_EQ(Filter({all[0], all[1], timed_out}, by_state).size(), 1u);
  DecisionFilter bad;
  bad.decision = "maybe";
  EXPECT_EQ(CheckDecisionFilter(bad).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AuditHistoryTest, TimelineJoinsEachCommandsRecords) {
  {
    auto log = Open();
    AskedAndRan(*log);
    Denied(*log);
    Add(*log, audit::kInputAccepted,
        {{"terminal_id", "t_1"}, {"bytes", 4}, {"role", "operator"}, {"surface", "attach"}});
    Add(*log, audit::kTerminalClosed, {{"terminal_id", "t_1"}, {"reason", "closed"}});
  }
  auto read = ReadAuditRecords({live_});
  ASSERT_TRUE(read.ok());
  absl::StatusOr<Timeline> t = BuildTimeline(read->records, "t_1");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->entries.size(), 5u);
  EXPECT_EQ(t->entries[0].kind, "opened");
  const TimelineEntry& ran = t->entries[1];
  EXPECT_EQ(ran.kind, "command");
  EXPECT_EQ(ran.command, "make\x1b[2J");
  EXPECT_EQ(ran.from, "agent ag");
  EXPECT_EQ(ran.state, "ran");
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_EQ(*ran.exited - *ran.started, absl::Seconds(1));
  EXPECT_EQ(ran.output_from, 10u);
  EXPECT_EQ(ran.output_to, 250u);
  ASSERT_TRUE(ran.decision.has_value());
  EXPECT_EQ(ran.decision->approver, "alice");
  const TimelineEntry& denied = t->entries[2];
  EXPECT_EQ(denied.state, "refused");
  EXPECT_EQ(denied.refused_code, "PM_TERM_POLICY_DENIED");
  EXPECT_EQ(denied.decision->rule, "no-rm");
  EXPECT_EQ(t->entries[3].from, "person (attach)");
  EXPECT_EQ(t->entries[4].kind, "closed");
  json j = TimelineEntryJson(ran);
  EXPECT_EQ(j["duration_ms"], 1000);
  EXPECT_EQ(j["output"]["to"], 250);

  EXPECT_EQ(BuildTimeline(read->records, "t_nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(AuditHistory, FieldsOfTheWrongTypeAreIgnoredNotThrown) {
  // Records a hand edit or another version could leave: each field the wrong type.
  std::vector<json> records = {
      {{"index", 1}, {"event", "policy_decided"}, {"decision", json::array()}, {"time", 5}},
      {{"index", 2}, {"event", "approval_decided"}, {"approval_id", 7}, {"terminal_id", "t_x"}},
      {{"index", 3}, {"event", "command_started"}, {"session_id", "s"}, {"terminal_id", "t_x"}},
      {{"index", 4},
       {"event", "command_exited"},
       {"session_id", "s"},
       {"terminal_id", "t_x"},
       {"exit_code", "zero"},
       {"output", "all of it"}},
      {{"index", 5}, {"event", "input_accepted"}, {"terminal_id", "t_x"}, {"bytes", "many"}},
  };
  EXPECT_EQ(Decisions(records).size(), 1u);
  absl::StatusOr<Timeline> t = BuildTimeline(records, "t_x");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->entries.size(), 2u);
  EXPECT_FALSE(t->entries[0].exit_code.has_value());
  EXPECT_FALSE(t->entries[0].output_from.has_value());
  EXPECT_EQ(t->entries[1].bytes, 0u);
  for (const TimelineEntry& e : t->entries) TimelineEntryJson(e).dump();
}

TEST(ParseWhen, TakesRfc3339AndDurationsAgo) {
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  EXPECT_EQ(*ParseWhen("2h", now, "since"), now - absl::Hours(2));
  EXPECT_EQ(*ParseWhen("3d", now, "since"), now - absl::Hours(72));
  EXPECT_EQ(*ParseWhen("1970-01-01T00:00:10Z", now, "since"), absl::FromUnixSeconds(10));
  absl::StatusOr<absl::Time> bad = ParseWhen("yesterday", now, "since");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--since yesterday"), std::string::npos);
  EXPECT_FALSE(ParseWhen("-5m", now, "until").ok());
}

}  // namespace
}  // namespace termbridge::cli::history
