// Time-boxed and narrowed grants in the policy (docs/operating.md, "Grants"):
// a rule's expiry parsed, dumped and honoured by Decide; the cwd and
// within_workspace restrictions a narrowed rule may carry; and
// CheckNarrowing, which lets a person write a narrower "always" rule and
// refuses any that would allow more than the proposed one, or that would not
// allow the request itself. Real directories under a temp dir.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNov26 = 1795687200;  // 2026-11-26T10:00:00Z

Policy Load(const std::string& text) {
  absl::StatusOr<Policy> p = Policy::FromToml(text, "test.toml");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : Policy::Default();
}

TEST(RuleExpiry, ParsedFromTomlDumpedAndParsedBack) {
  Policy p = Load(
      "version = 1\n[[rule]]\nid = \"make\"\naction = \"allow\"\nexact = [\"make\"]\n"
      "expires = 2026-11-26T11:00:00+01:00\n");
  const Rule& r = p.rules().back();
  ASSERT_EQ(r.id, "make");
  EXPECT_EQ(r.expires_unix_s, kNov26);
  std::string toml = RuleToToml(r);
  EXPECT_NE(toml.find("expires = 2026-11-26T10:00:00Z\n"), std::string::npos) << toml;
  Policy again = Load("version = 1\n" + toml);
  EXPECT_EQ(again.rules().back().expires_unix_s, kNov26);
  // The JSON snapshot carries it (and says whether it is past), both ways.
  nlohmann::json j = p.ToJson();
  EXPECT_EQ(j["rules"].back()["expires"], "2026-11-26T10:00:00Z");
  absl::StatusOr<Policy> from_json = Policy::FromJson(j);
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  EXPECT_EQ(from_json->rules().back().expires_unix_s, kNov26);
}

TEST(RuleExpiry, NeedsAnOffset) {
  absl::StatusOr<Policy> local = Policy::FromToml(
      "version = 1\n[[rule]]\naction = \"allow\"\nexact = [\"make\"]\n"
      "expires = 2026-11-26T10:00:00\n",
      "p.toml");
  ASSERT_FALSE(local.ok());
  EXPECT_NE(local.status().message().find("p.toml:5"), std::string::npos) << local.status();
  EXPECT_NE(local.status().message().find("offset"), std::string::npos) << local.status();
  EXPECT_EQ(ParseExpiry("2026-11-26T10:00:00Z"), kNov26);
  EXPECT_EQ(ParseExpiry("2026-11-26T10:00:00-02:30"), kNov26 + 9000);
  EXPECT_FALSE(ParseExpiry("2026-11-26 10:00"));
  EXPECT_FALSE(ParseExpiry("2026-13-26T10:00:00Z"));
  EXPECT_EQ(FormatExpiry(kNov26), "2026-11-26T10:00:00Z");
}

TEST(RuleExpiry, DecideSkipsAnExpiredRule) {
  Policy p = Load(
      "version = 1\n[[rule]]\nid = \"make\"\naction = \"allow\"\nexact = [\"make\"]\n"
      "expires = 2026-11-26T10:00:00Z\n");
  CheckContext before;
  before.now_unix_s = kNov26 - 1;
  CheckContext at;
  at.now_unix_s = kNov26;
  EXPECT_EQ(p.Check("make", before).action, Action::kAllow);
  Decision after = p.Check("make", at);
  EXPECT_EQ(after.action, Action::kAsk);
  EXPECT_EQ(after.rule_id, "");
  // The rule stays in the policy, visibly expired.
  EXPECT_TRUE(Expired(p.rules().back(), kNov26));
  EXPECT_FALSE(Expired(p.rules().back(), kNov26 - 1));
  // "Always" for the same command proposes a rule again, under a fresh id
  // only if the caller asks for one: RulesToAllow sees no rule in force.
  absl::StatusOr<std::vector<Rule>> again = p.RulesToAllow("make", at);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->size(), 1u);
}

class GrantDirs : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(testing::TempDir()) / "tb-grants-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl).string();
    ws_ = root_ + "/ws";
    other_ = root_ + "/other";
    fs::create_directories(ws_ + "/sub");
    fs::create_directories(other_);
    fs::create_directory_symlink(other_, ws_ + "/out");
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  CheckContext In(const std::string& cwd) const {
    CheckContext c;
    c.cwd = cwd;
    c.read_roots = {ws_};
    return c;
  }
  std::string root_, ws_, other_;
};

TEST_F(GrantDirs, CwdRestrictsWhereTheRuleMatches) {
  Policy p = Load(
      "version = 1\n[[rule]]\nid = \"make-here\"\naction = \"allow\"\nexact = "
      "[\"make\"]\ncwd = [\"" +
      ws_ + "\"]\n");
  EXPECT_EQ(p.Check("make", In(ws_)).action, Action::kAllow);
  EXPECT_EQ(p.Check("make", In(ws_ + "/sub")).action, Action::kAllow);
  EXPECT_EQ(p.Check("make", In(other_)).action, Action::kAsk);
  EXPECT_EQ(p.Check("make", CheckContext{}).action, Action::kAsk) << "unknown cwd";
  // A cd in the line leaves the directory; a symlink inside leads out.
  EXPECT_EQ(p.Check("cd " + other_ + " && make", In(ws_)).action, Action::kAsk);
  EXPECT_EQ(p.Check("make", In(ws_ + "/out")).action, Action::kAsk);
  // A wrapper may run it elsewhere (env -C).
  EXPECT_EQ(p.Check("env -C " + other_ + " make", In(ws_)).action, Action::kAsk);
  // Relative entries and non-allow rules are refused.
  EXPECT_FALSE(
      Policy::FromToml(
          "version = 1\n[[rule]]\naction = \"allow\"\nexact = [\"make\"]\ncwd = [\"src\"]\n",
          "p.toml")
          .ok());
  EXPECT_FALSE(
      Policy::FromToml(
          "version = 1\n[[rule]]\naction = \"deny\"\nexact = [\"make\"]\ncwd = [\"/\"]\n", "p.toml")
          .ok());
  // Dumped and read back.
  std::string toml = RuleToToml(p.rules().back());
  EXPECT_NE(toml.find("cwd = [\"" + ws_ + "\"]"), std::string::npos) << toml;
}

TEST_F(GrantDirs, WithinWorkspaceIntersectsTheReadScopes) {
  std::string rule =
      "version = 1\ndefault_rules = false\n[[rule]]\naction = \"allow\"\nprefix = "
      "[\"cat\"]\nread_paths = [\"" +
      root_ + "/**\"]\n";
  Policy loose = Load(rule);
  Policy tight = Load(rule + "within_workspace = true\n");
  EXPECT_EQ(loose.Check("cat " + other_ + "/x", In(ws_)).action, Action::kAllow);
  EXPECT_EQ(tight.Check("cat " + other_ + "/x", In(ws_)).action, Action::kAsk);
  EXPECT_EQ(tight.Check("cat " + ws_ + "/x", In(ws_)).action, Action::kAllow);
  EXPECT_NE(RuleToToml(tight.rules().back()).find("within_workspace = true\n"), std::string::npos);
}

TEST(RulesFromToml, OnlyRuleTablesAndIdsLeftToTheCaller) {
  absl::StatusOr<std::vector<Rule>> rules = RulesFromToml(
      "[[rule]]\naction = \"allow\"\nexact = [\"ls\"]\n[[rule]]\nid = \"mine\"\naction = "
      "\"allow\"\nexact = [\"pwd\"]\n",
      "rules_toml");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].id, "");
  EXPECT_EQ((*rules)[1].id, "mine");
  absl::StatusOr<std::vector<Rule>> extra =
      RulesFromToml("default = \"allow\"\n[[rule]]\naction = \"allow\"\nexact = [\"ls\"]\n", "r");
  ASSERT_FALSE(extra.ok());
  EXPECT_NE(extra.status().message().find("only [[rule]]"), std::string::npos);
  EXPECT_FALSE(RulesFromToml("", "r").ok());
  EXPECT_FALSE(RulesFromToml("[[rule]]\naction = \"allow\"\n", "r").ok());
}

class Narrowing : public GrantDirs {
 protected:
  // The proposal for `line` in the workspace, and the check of `toml` against it.
  absl::Status Check(const std::string& line, const std::string& toml) {
    absl::StatusOr<std::vector<Rule>> proposed = policy_.RulesToAllow(line, In(cwd_));
    EXPECT_TRUE(proposed.ok()) << proposed.status();
    return CheckAgainst(line, proposed.ok() ? *proposed : std::vector<Rule>{}, toml);
  }
  absl::Status CheckAgainst(const std::string& line, const std::vector<Rule>& proposed,
                            const std::string& toml) {
    absl::StatusOr<std::vector<Rule>> candidate = RulesFromToml(toml, "rules_toml");
    EXPECT_TRUE(candidate.ok()) << candidate.status();
    if (!candidate.ok()) return candidate.status();
    for (size_t i = 0; i < candidate->size(); ++i) {
      if ((*candidate)[i].id.empty()) (*candidate)[i].id = "narrowed-" + std::to_string(i);
    }
    return CheckNarrowing(policy_, line, In(cwd_), proposed, *candidate);
  }
  void SetUp() override {
    GrantDirs::SetUp();
    cwd_ = ws_;
  }
  Policy policy_ = Policy::Default();
  std::string cwd_;  // where the line runs
};

TEST_F(Narrowing, ANarrowerRuleIsAccepted) {
  const std::string line = "mkdir -p build";
  // mkdir writes the directory it makes.
  const std::string exact =
      "[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\n"
      "writes = true\nwrite_paths = [\"build\"]\n";
  // The proposal itself, a cwd added, options added, an expiry added.
  EXPECT_TRUE(Check(line, exact).ok()) << Check(line, exact);
  EXPECT_TRUE(Check(line, exact + "cwd = [\"" + ws_ + "\"]\n").ok());
  EXPECT_TRUE(Check(line, exact + "options = [\"-p\"]\n").ok());
  EXPECT_TRUE(Check(line, exact + "expires = 2999-01-01T00:00:00Z\n").ok());
  // A smaller read scope, inside the workspace too.
  EXPECT_TRUE(
      Check(line, exact + "read_paths = [\"" + ws_ + "/build\"]\nwithin_workspace = true\n").ok());
}

TEST_F(Narrowing, ABroaderRuleIsRefusedSayingWhy) {
  const std::string line = "mkdir -p build";
  auto refused = [&](const std::string& toml, const std::string& why) {
    absl::Status s = Check(line, toml);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << toml;
    EXPECT_NE(s.message().find(why), std::string::npos) << s << "\nwanted: " << why;
  };
  refused("[[rule]]\naction = \"allow\"\nprefix = [\"mkdir\"]\n", "matches more arguments");
  refused("[[rule]]\naction = \"allow\"\nprefix = [\"mkdir\", \"-p\", \"build\"]\n",
          "matches more arguments");
  refused("[[rule]]\naction = \"allow\"\nregex = \"^mkdir\"\n", "regex");
  refused("[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"dist\"]\n",
          "is not the proposed");
  refused("[[rule]]\naction = \"allow\"\nexact = [\"rm\", \"-p\", \"build\"]\n", "program rm");
  refused("[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\nwrites = true\n",
          "may write any file");
  refused("[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\nread_paths = [\"" +
              ws_ + "/build\"]\n",
          "within_workspace");
  refused("[[rule]]\naction = \"deny\"\nexact = [\"mkdir\", \"-p\", \"build\"]\n",
          "only allow rules");
  // One good rule does not carry a broad one along.
  refused(
      "[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\n"
      "[[rule]]\naction = \"allow\"\nprefix = [\"curl\"]\n",
      "allows more");
}

TEST_F(Narrowing, TheRulesMustAllowThisRequest) {
  const std::string line = "mkdir -p build";
  // mkdir writes the directory it makes.
  const std::string exact =
      "[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\n"
      "writes = true\nwrite_paths = [\"build\"]\n";
  absl::Status elsewhere = Check(line, exact + "cwd = [\"" + other_ + "\"]\n");
  EXPECT_EQ(elsewhere.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(elsewhere.message().find("do not allow this request"), std::string::npos) << elsewhere;
  EXPECT_FALSE(Check(line, exact + "options = [\"-v\"]\n").ok());
  EXPECT_FALSE(Check(line, exact + "expires = 2000-01-01T00:00:00Z\n").ok());
  // A line of two commands needs both covered.
  const std::string two = "mkdir -p build && touch build/stamp";
  EXPECT_FALSE(Check(two, exact).ok());
}

TEST_F(Narrowing, PrefixReadAndWriteScopesOfAProposal) {
  Rule p;
  p.id = "proposed";
  p.action = Action::kAllow;
  p.kind = MatchKind::kPrefix;
  p.argv = {"npm", "test"};
  p.read_paths = {other_};
  p.writes = true;
  p.write_paths = {"out/a.log"};
  const std::string line = "npm test -- x > out/a.log";
  fs::create_directories(other_ + "/data");
  cwd_ = other_ + "/data";  // what npm reads (its operands) is there
  const std::string head = "[[rule]]\naction = \"allow\"\n";
  const std::string scope =
      "read_paths = [\"" + other_ + "\"]\nwrites = true\nwrite_paths = [\"out/a.log\"]\n";
  EXPECT_TRUE(CheckAgainst(line, {p}, head + "prefix = [\"npm\", \"test\", \"--\"]\n" + scope).ok())
      << CheckAgainst(line, {p}, head + "prefix = [\"npm\", \"test\", \"--\"]\n" + scope);
  EXPECT_TRUE(
      CheckAgainst(line, {p}, head + "exact = [\"npm\", \"test\", \"--\", \"x\"]\n" + scope).ok());
  EXPECT_FALSE(CheckAgainst(line, {p}, head + "prefix = [\"npm\"]\n" + scope).ok());
  // Writes: any file, or a glob, is wider than the one file proposed.
  const std::string npm =
      head + "prefix = [\"npm\", \"test\"]\nread_paths = [\"" + other_ + "\"]\n";
  EXPECT_FALSE(CheckAgainst(line, {p}, npm + "writes = true\n").ok());
  EXPECT_FALSE(CheckAgainst(line, {p}, npm + "write_paths = [\"out/*.log\"]\n").ok());
  // Reads: a path under the proposed one is narrower; a sibling, a relative
  // path, a climb or a symlink that leads out is not.
  const std::string npm_writes =
      head + "prefix = [\"npm\", \"test\"]\nwrites = true\nwrite_paths = [\"out/a.log\"]\n";
  fs::create_directory_symlink(ws_, other_ + "/back");
  EXPECT_TRUE(
      CheckAgainst(line, {p}, npm_writes + "read_paths = [\"" + other_ + "/data/**\"]\n").ok());
  EXPECT_FALSE(CheckAgainst(line, {p}, npm_writes + "read_paths = [\"" + ws_ + "\"]\n").ok());
  EXPECT_FALSE(CheckAgainst(line, {p}, npm_writes + "read_paths = [\"data\"]\n").ok());
  EXPECT_FALSE(
      CheckAgainst(line, {p}, npm_writes + "read_paths = [\"" + other_ + "/../ws\"]\n").ok());
  EXPECT_FALSE(
      CheckAgainst(line, {p}, npm_writes + "read_paths = [\"" + other_ + "/back/**\"]\n").ok());
  EXPECT_FALSE(CheckAgainst(line, {p}, npm_writes).ok()) << "the workspace is not in the scope";
}

TEST(PolicyWithRules, RefusesARepeatedId) {
  Policy p = Load("version = 1\n[[rule]]\nid = \"x\"\naction = \"allow\"\nexact = [\"ls\"]\n");
  Rule r;
  r.id = "x";
  r.action = Action::kAllow;
  r.argv = {"make"};
  EXPECT_FALSE(p.WithRules({r}).ok());
  r.id = "y";
  absl::StatusOr<Policy> with = p.WithRules({r});
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->Check("make").rule_id, "y");
  EXPECT_EQ(p.Check("make").action, Action::kAsk) << "the policy itself is unchanged";
}

}  // namespace
}  // namespace termbridge::policy
