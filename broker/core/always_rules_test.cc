// RulesForAlways: what an "always" approval writes, the shown rules or a
// person's narrower version, never more than either (docs/operating.md,
// "Grants").
#include "broker/core/always_rules.h"

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

namespace fs = std::filesystem;

class AlwaysRulesTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(testing::TempDir()) / "tb-always-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl).string();
    ws_ = root_ + "/ws";
    fs::create_directories(ws_);
    request_.command = "mkdir -p build";
    request_.cwd = ws_;
    request_.workspace = ws_;
    // What the gate shows with the request.
    request_.always_rules_toml = Proposal().toml;
    ASSERT_FALSE(request_.always_rules_toml.empty());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  AlwaysProposal Proposal() const {
    return ProposeAlways(policy_, request_.command, ContextFor(request_.cwd, ws_, {}));
  }
  absl::StatusOr<std::vector<policy::Rule>> Rules(const std::string& rules_toml,
                                                  absl::Time expires = absl::InfiniteFuture()) {
    reshow_ = AlwaysProposal{};
    return RulesForAlways(policy_, request_, {}, rules_toml, expires, &reshow_);
  }
  static std::string Exact() {
    // mkdir writes the directory it makes.
    return "[[rule]]\naction = \"allow\"\nexact = [\"mkdir\", \"-p\", \"build\"]\n"
           "writes = true\nwrite_paths = [\"build\"]\n";
  }

  policy::Policy policy_ = policy::Policy::Default();
  approval::Request request_;
  AlwaysProposal reshow_;
  std::string root_, ws_;
};

TEST_F(AlwaysRulesTest, WithoutNarrowingTheShownRulesAreWritten) {
  absl::StatusOr<std::vector<policy::Rule>> rules = Rules("");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ(RulesToml(*rules), request_.always_rules_toml);
  EXPECT_TRUE(reshow_.toml.empty());
}

TEST_F(AlwaysRulesTest, ShownRulesThatNoLongerMatchTheProposalAreNotWrittenAndAreShownAnew) {
  const std::string proposed = request_.always_rules_toml;
  request_.always_rules_toml = Exact() + "cwd = [\"" + ws_ + "\"]\n";  // shown: something else
  absl::StatusOr<std::vector<policy::Rule>> rules = Rules("");
  EXPECT_EQ(rules.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(rules.status().message().find("changed since the request was shown"), std::string::npos)
      << rules.status();
  EXPECT_EQ(reshow_.toml, proposed) << "the current proposal is shown instead";
}

TEST_F(AlwaysRulesTest, ANarrowerRuleIsWrittenWithAReason) {
  absl::StatusOr<std::vector<policy::Rule>> rules = Rules(Exact() + "cwd = [\"" + ws_ + "\"]\n");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].cwd, std::vector<std::string>{ws_});
  EXPECT_FALSE((*rules)[0].id.empty()) << "named from its program";
  EXPECT_NE((*rules)[0].reason.find("narrowed"), std::string::npos);
}

TEST_F(AlwaysRulesTest, ABroaderRuleIsRefused) {
  absl::StatusOr<std::vector<policy::Rule>> rules =
      Rules("[[rule]]\naction = \"allow\"\nprefix = [\"mkdir\"]\n");
  EXPECT_EQ(rules.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(rules.status().message().find("nothing was decided"), std::string::npos);
}

TEST_F(AlwaysRulesTest, ARuleThatDoesNotParseIsInvalid) {
  EXPECT_EQ(Rules("[[rule]]\naction = ").status().code(), absl::StatusCode::kInvalidArgument);
}

// The proposal widened after the person saw a narrower one (an agent
// changed files meanwhile): a rule within today's proposal but beyond what
// was shown is not written.
TEST_F(AlwaysRulesTest, ARuleBeyondWhatWasShownIsRefusedEvenWithinTodaysProposal) {
  const std::string proposed = request_.always_rules_toml;
  const std::string shown = Exact() + "cwd = [\"" + ws_ + "\"]\n";
  request_.always_rules_toml = shown;
  absl::StatusOr<std::vector<policy::Rule>> beyond = Rules(proposed);
  EXPECT_EQ(beyond.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(beyond.status().message().find("not within what was shown"), std::string::npos)
      << beyond.status();
  EXPECT_EQ(reshow_.toml, proposed);
  // What was shown itself still may be written.
  EXPECT_TRUE(Rules(shown).ok()) << Rules(shown).status();
}

TEST_F(AlwaysRulesTest, ATimeBoxEndsEveryRuleNoLaterThanIt) {
  const absl::Time until = absl::FromUnixSeconds(4102444800);  // 2100-01-01
  absl::StatusOr<std::vector<policy::Rule>> rules = Rules("", until);
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const policy::Rule& rule : *rules) EXPECT_EQ(rule.expires_unix_s, 4102444800);
  // A narrowed rule that ends earlier keeps its own end.
  rules = Rules(Exact() + "expires = 2099-01-01T00:00:00Z\n", until);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_LT((*rules)[0].expires_unix_s, 4102444800);
}

TEST_F(AlwaysRulesTest, ALineThePolicyAllowsAlreadyWritesNothing) {
  request_.command = "ls";
  EXPECT_TRUE(Rules("")->empty());
}

}  // namespace
}  // namespace termbridge::core
