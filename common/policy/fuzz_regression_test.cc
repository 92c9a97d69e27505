// Inputs the fuzz targets of tests/fuzz found (shell_policy, policy_toml),
// each kept in tests/fuzz/corpus/<target>/ and replayed here as the
// behaviour a person would notice.
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

// "Always" for `line`: the rules RulesToAllow proposes, as AppendRules would
// write them, must load and then allow the line, or RulesToAllow must say
// that no rule can (FailedPrecondition). A rule that loads but does not
// match leaves the person approving "always" asked again, with no reason.
void ExpectAlwaysAllowsOrRefuses(const std::string& line) {
  Policy policy = Policy::Default();
  absl::StatusOr<std::vector<Rule>> rules = policy.RulesToAllow(line);
  if (!rules.ok()) {
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kFailedPrecondition) << rules.status();
    return;
  }
  std::string toml = "version = 1\n";
  for (const Rule& rule : *rules) toml += RuleToToml(rule);
  absl::StatusOr<Policy> extended = Policy::FromToml(toml, "always.toml");
  ASSERT_TRUE(extended.ok()) << extended.status() << "\n" << toml;
  Decision decision = extended->Check(line);
  EXPECT_EQ(decision.action, Action::kAllow) << decision.reason << "\n" << toml;
}

// tests/fuzz/corpus/shell_policy/crash-82943638...: redirection targets that
// are not UTF-8 were proposed as write_paths, written to the file as U+FFFD,
// and the saved rule never matched the line again.
TEST(FuzzRegressionTest, AlwaysForAWriteTargetThatIsNotUtf8) {
  ExpectAlwaysAllowsOrRefuses(
      "/root/.pasls 2>\xf2\xf2\xf2\xf2&1 >/d\xb8"
      "ev/null ppmnd &~both");
  ExpectAlwaysAllowsOrRefuses("ls > build/\xff.txt");
  // crash-2170cf30...: F7 B8 B8 B8 passed RuleToToml's UTF-8 check (a lead
  // byte past F4), so the rules it wrote did not load.
  ExpectAlwaysAllowsOrRefuses("make 2> /tmp/x\xf7\xb8\xb8\xb8.log");
}

// A read outside the workspace whose path is not UTF-8 was proposed as a
// read_path, written as U+FFFD, and the saved rule never matched again (the
// clean-clone fuzz.targets run of session 12 found it).
TEST(FuzzRegressionTest, AlwaysForAReadPathThatIsNotUtf8) {
  ExpectAlwaysAllowsOrRefuses("cat /etc/x\xff\xfe.conf");
  ExpectAlwaysAllowsOrRefuses("cat < /=pro\xc3");
}

// tests/fuzz/corpus/shell_policy/crash-794e0a85...: the same command twice
// with different redirections got one rule, covering only the first
// command's files, so the line still asked after "always".
TEST(FuzzRegressionTest, AlwaysForTheSameCommandWritingTwoFiles) {
  ExpectAlwaysAllowsOrRefuses("gls>/>/&1 >>/&1gls>/&1 >gg");
  ExpectAlwaysAllowsOrRefuses("make > build/a.log; make > build/b.log");
}

// tests/fuzz/corpus/shell_policy/crash-b31c7d52... and crash-3b0d4b30...:
// a redirection to a path with an empty component (ending in '/', or with
// "//") was proposed as that write_path, which then did not match the
// same target.
TEST(FuzzRegressionTest, AlwaysForAWriteTargetWithAnEmptyComponent) {
  ExpectAlwaysAllowsOrRefuses("gls>/>/&1 >>/&1gls>& 1/>gg");
  ExpectAlwaysAllowsOrRefuses("ls > build/");
  ExpectAlwaysAllowsOrRefuses("make > //sebtcumfke > buidoers.ldx");
  ExpectAlwaysAllowsOrRefuses("make > build//a.log");
}

}  // namespace
}  // namespace termbridge::policy
