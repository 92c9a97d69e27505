// Tests for policy_replay.h over a log AuditLog itself wrote, with the
// records the broker writes for a policy decision, a request a person
// approved, a gate-only ask, an older record without cwd and an agent's
// proposal: which decisions a candidate policy would change, which it
// leaves, which cannot be judged again, and the time and agent filters.
#include "broker/cli/policy_replay.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "broker/audit/audit_log.h"
#include "gtest/gtest.h"

namespace termbridge::cli::replay {
namespace {

using nlohmann::json;

class PolicyReplayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "w");
    work_ = (dir_ / "w").string();
    auto log = audit::AuditLog::Open((dir_ / "audit.jsonl").string(), [this] { return now_; });
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = *std::move(log);
    Write();
    auto files = history::FindAuditFiles((dir_ / "audit.jsonl").string());
    ASSERT_TRUE(files.ok());
    auto read = history::ReadAuditRecords(*files);
    ASSERT_TRUE(read.ok());
    records_ = read->records;
  }

  void Add(std::string_view event, json fields) {
    now_ += absl::Minutes(1);
    ASSERT_TRUE(log_->Append(event, std::move(fields)).ok());
  }

  // The policy allowed `command` (or denied it) alone, as command_gate.cc records it.
  void Decided(const std::string& trace, const std::string& agent, const std::string& command,
               const std::string& action, const std::string& rule, bool with_cwd = true) {
    Add(audit::kCommandRequested,
        {{"trace_id", trace}, {"agent_id", agent}, {"command", command}, {"cwd", work_}});
    json fields = {{"session_id", "s_" + trace},
                   {"trace_id", trace},
                   {"agent_id", agent},
                   {"terminal_id", "t_1"},
                   {"lane", "interactive"},
                   {"decision", {{"action", action}, {"rule_id", rule}, {"command", command}}},
                   {"action", action},
                   {"surface", "policy"}};
    if (with_cwd) {
      fields["command"] = command;
      fields["cwd"] = work_;
      fields["workspace"] = work_;
    }
    Add(audit::kPolicyDecided, fields);
  }

  // A person was asked about `command` and approved it once.
  void Approved(const std::string& id, const std::string& kind, const std::string& command) {
    json request = {{"approval_id", id}, {"kind", kind},       {"command", command},
                    {"cwd", work_},      {"agent_id", "bot"},  {"terminal_id", "t_1"},
                    {"session_id", id},  {"trace_id", id},     {"lane", "interactive"},
                    {"rule", ""},        {"workspace", work_}, {"reason", "ask"}};
    Add(audit::kApprovalRequested, request);
    request["decision"] = "approved";
    request["scope"] = "once";
    request["approver"] = "alice";
    request["surface"] = "cli";
    Add(audit::kApprovalDecided, request);
  }

  void Write() {
    Decided("tr1", "bot", "ls", "allow", "default.ls");                       // 00:02
    Approved("a_1", "command", "make");                                       // 00:04
    Decided("tr2", "bot", "rm -rf /", "deny", "builtin.rm-root");             // 00:06
    Decided("tr3", "bot", "git status", "ask", "builtin.repo-config");        // 00:08
    Decided("tr4", "other", "cat notes.txt", "allow", "default.cat", false);  // 00:10
    Approved("a_2", "policy_change", "npm test");                             // 00:12
  }

  policy::Policy Candidate() {
    // No read-only defaults: ls and cat now ask; make is allowed.
    absl::StatusOr<policy::Policy> p = policy::Policy::FromToml(
        "version = 1\ndefault_rules = false\n[[rule]]\nid = \"make-ok\"\naction = "
        "\"allow\"\nexact = [\"make\"]\n",
        "candidate.toml");
    EXPECT_TRUE(p.ok()) << p.status();
    return *std::move(p);
  }
  std::filesystem::path dir_;
  std::string work_;
  absl::Time now_ = absl::FromUnixSeconds(1795687200);
  std::unique_ptr<audit::AuditLog> log_;
  std::vector<json> records_;
};

TEST_F(PolicyReplayTest, ACandidateListsExactlyTheDecisionsItWouldChange) {
  ReplayResult result = Replay(records_, Candidate(), {});
  EXPECT_EQ(result.judged, 4u) << "ls, make, rm, cat: the proposal and the gate-only ask are not";
  ASSERT_EQ(result.changed.size(), 3u);
  EXPECT_EQ(result.changed[0].command, "ls");
  EXPECT_EQ(result.changed[0].before, "allow");
  EXPECT_EQ(result.changed[0].before_rule, "default.ls");
  EXPECT_EQ(result.changed[0].after, "ask");
  EXPECT_EQ(result.changed[1].command, "make");
  EXPECT_EQ(result.changed[1].before, "ask");
  EXPECT_EQ(result.changed[1].after, "allow");
  EXPECT_EQ(result.changed[1].after_rule, "make-ok");
  EXPECT_EQ(result.changed[1].audited.approver, "alice");
  // An older record without command and cwd: the agent's command and cwd
  // from command_requested.
  EXPECT_EQ(result.changed[2].command, "cat notes.txt");
  EXPECT_EQ(result.changed[2].cwd, work_);
  EXPECT_EQ(result.cwd_unknown, 0u);
  ASSERT_EQ(result.skipped.size(), 1u);
  EXPECT_EQ(result.skipped[0].before_rule, "builtin.repo-config");

  json j = ResultJson(result);
  EXPECT_EQ(j["summary"]["allow->ask"], 2);
  EXPECT_EQ(j["summary"]["ask->allow"], 1);
  EXPECT_EQ(j["unchanged"], 1);
  EXPECT_EQ(j["changed"][1]["after"]["rule"], "make-ok");
  std::ostringstream text;
  PrintResult(result, text);
  EXPECT_NE(text.str().find("ask (default action), approved by alice via cli, scope once -> "
                            "allow (make-ok)  make"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("3 of 4 decisions would change (allow -> ask: 2, ask -> allow: 1); 1 "
                            "not judged again"),
            std::string::npos)
      << text.str();
}

TEST_F(PolicyReplayTest, ThePolicyThatDecidedChangesNothing) {
  ReplayResult result = Replay(records_, policy::Policy::Default(), {});
  EXPECT_EQ(result.judged, 4u);
  EXPECT_TRUE(result.changed.empty()) << ResultJson(result).dump(2);
}

TEST_F(PolicyReplayTest, FiltersByTimeAndAgent) {
  ReplayOptions since;
  since.since = absl::FromUnixSeconds(1795687200) + absl::Minutes(5);
  ReplayResult later = Replay(records_, Candidate(), since);
  ASSERT_EQ(later.changed.size(), 1u);
  EXPECT_EQ(later.changed[0].command, "cat notes.txt");
  ReplayOptions until;
  until.until = absl::FromUnixSeconds(1795687200) + absl::Minutes(3);
  EXPECT_EQ(Replay(records_, Candidate(), until).changed.size(), 1u);
  ReplayOptions agent;
  agent.agent = "other";
  ReplayResult other = Replay(records_, Candidate(), agent);
  EXPECT_EQ(other.judged, 1u);
  ASSERT_EQ(other.changed.size(), 1u);
  EXPECT_EQ(other.changed[0].audited.agent_id, "other");
}

// An older decision record without a cwd takes it from its own
// command_requested, never from another agent's record that reuses the
// trace id (trace ids are the agents' to choose) or from another command.
TEST_F(PolicyReplayTest, AnotherAgentsTraceIdLendsNoCwd) {
  auto is_request_of = [](const json& r, const std::string& agent) {
    return r.value("event", "") == audit::kCommandRequested && r.value("trace_id", "") == "tr4" &&
           r.value("agent_id", "") == agent;
  };
  auto own = std::find_if(records_.begin(), records_.end(),
                          [&](const json& r) { return is_request_of(r, "other"); });
  ASSERT_NE(own, records_.end());
  json forged = *own;
  forged["agent_id"] = "mallory";
  forged["cwd"] = "/elsewhere";
  json other_command = *own;
  other_command["command"] = "cat other.txt";
  other_command["cwd"] = "/elsewhere";
  *own = forged;
  records_.push_back(other_command);  // same agent and trace id, another command

  ReplayOptions agent;
  agent.agent = "other";
  ReplayResult result = Replay(records_, Candidate(), agent);
  ASSERT_EQ(result.changed.size(), 1u);
  EXPECT_EQ(result.changed[0].command, "cat notes.txt");
  EXPECT_EQ(result.changed[0].cwd, "") << "not mallory's, not another command's";
  EXPECT_EQ(result.cwd_unknown, 1u);
}

}  // namespace
}  // namespace termbridge::cli::replay
