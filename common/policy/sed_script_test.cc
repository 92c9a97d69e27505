// SedScriptProblem against the forms GNU sed reads, and a rule allowing
// `sed -n` that no longer allows a script running or writing anything.
#include "common/policy/sed_script.h"

#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

TEST(SedScriptTest, PlainEditsAreNoProblem) {
  for (const char* script : {"p",
                             "1p",
                             "$p",
                             "s/a/b/",
                             "s/a/b/gI2p",
                             "s|/x|/y|g",
                             "s/a\\/b/c/",
                             "/re/d",
                             "\\,re,d",
                             "1,/x/p",
                             "0,/x/s//y/",
                             "2~3p",
                             "/a/,+2!d",
                             "/x/{p;d}",
                             "y/abc/xyz/",
                             "$a\\\nnew line",
                             "1i text; e touch x",
                             ":top\nN\nbtop",
                             ":a;N;ba",
                             "# e touch x\np",
                             "l 40;q 3",
                             "=",
                             "s/e/w/"}) {
    EXPECT_EQ(SedScriptProblem(script), std::nullopt) << script;
  }
}

TEST(SedScriptTest, WhatRunsWritesOrReadsIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"1e touch x", "runs a command"},    {"e", "runs a command"},
      {"s/.*/touch x/e", "the e flag"},    {"s/a/b/gpe", "the e flag"},
      {"s/a/b/w out", "writes a file"},    {"w out", "writes a file"},
      {"/x/W out", "writes a file"},       {"r /etc/shadow", "reads a file"},
      {"$R ~/.netrc", "reads a file"},     {"p;e touch x", "runs a command"},
      {"/a/{p;e x\n}", "runs a command"},  {"1!e x", "runs a command"},
      {":a;1e touch x", "runs a command"},  // a label ends at ; or a blank
      {":a 1e touch x", "runs a command"}, {"ba;e x", "runs a command"},
      {"s/a/b", "may read otherwise"},  // an s that does not end
      {"k", "may read otherwise"},      // not a command
      {"p x", "may read otherwise"},    // junk after a command
      {"/unended", "may read otherwise"},
  };
  for (const auto& [script, phrase] : cases) {
    std::optional<std::string> problem = SedScriptProblem(script);
    ASSERT_TRUE(problem.has_value()) << script;
    EXPECT_NE(problem->find(phrase), std::string::npos) << script << ": " << *problem;
  }
}

TEST(SedScriptTest, ARuleAllowingSedAllowsOnlyPlainScripts) {
  absl::StatusOr<Policy> policy = Policy::FromToml(
      "[[rule]]\nid = \"sed\"\naction = \"allow\"\nprefix = [\"sed\", \"-n\"]\n", "sed.toml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  CheckContext context;
  context.cwd = "/srv/project";
  context.read_roots = {"/srv/project"};
  Decision plain = policy->Check("sed -n 's/a/b/p' notes.txt", context);
  EXPECT_EQ(plain.action, Action::kAllow) << plain.reason;
  for (const char* line :
       {"sed -n '1e touch x' notes.txt", "sed -n -e p -e '1e touch x' notes.txt",
        "sed -n --expression='s/x/id/e' notes.txt", "sed -n -f script.sed notes.txt",
        "sed -n 'w /tmp/out' notes.txt", "sed -n 'r /etc/shadow' notes.txt",
        "sed -n \"$S\" notes.txt", "sed -ne '1e touch x' notes.txt",
        // getopt takes an unambiguous prefix of a long option
        "sed -n --e='1e touch x' notes.txt", "sed -n --expr '1e touch x' notes.txt",
        "sed -n --fi=script.sed notes.txt",
        // POSIXLY_CORRECT: getopt stops at the first operand, the script
        "sed -n '1e touch x' --expression= notes.txt"}) {
    Decision d = policy->Check(line, context);
    EXPECT_EQ(d.action, Action::kAsk) << line << ": " << d.reason;
  }
}

}  // namespace
}  // namespace termbridge::policy
