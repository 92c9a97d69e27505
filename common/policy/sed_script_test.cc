// SedScriptProblem against the forms GNU sed reads; a rule allowing `sed -n`
// that no longer allows a script running or writing anything; and the files
// `sed -i` rewrites (with their backups), read from argv as sed reads it.
#include "common/policy/sed_script.h"

#include <optional>
#include <string>
#include <utility>
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

// What `line` (one sed command) writes; nullopt when it is opaque.
std::optional<std::vector<std::string>> SedWrites(const std::string& line) {
  ParsedLine p = ParseLine(line);
  EXPECT_FALSE(p.error.has_value()) << line << ": " << p.error.value_or("");
  if (p.error || p.commands.size() != 1) return std::nullopt;
  if (p.commands[0].opaque) return std::nullopt;
  return p.commands[0].write_targets;
}

TEST(SedArgsTest, InPlaceWritesEveryFileAndItsBackup) {
  using Strings = std::vector<std::string>;
  const std::pair<const char*, Strings> cases[] = {
      {"sed s/a/b/ f", {}},
      {"sed -n p f g", {}},
      {"sed -i s/a/b/ f g", {"f", "g"}},
      {"gsed -i s/a/b/ f", {"f"}},
      {"sed -ni s/a/b/p f", {"f"}},
      {"sed -i -e s/a/b/ f", {"f"}},
      {"sed -i -e s/a/b/ -e s/c/d/ f", {"f"}},
      // -l takes a number, which is neither the script nor a file
      {"sed -i -l 5 s/a/b/ f", {"f"}},
      {"sed -i -l5 s/a/b/ f", {"f"}},
      // after --, a word starting with - is a file
      {"sed -i -- s/a/b/ -x", {"-x"}},
      {"sed -i -e s/a/b/ -- -x y", {"-x", "y"}},
      // the backup: FILE+SUFFIX
      {"sed -i.bak s/a/b/ f", {"f", "f.bak"}},
      {"sed --in-place=.orig -e s/a/b/ f g", {"f", "f.orig", "g", "g.orig"}},
      {"sed -Ei~ s/a/b/ src/f", {"src/f", "src/f~"}},
      // -ie is -i with the suffix "e", not -i and -e
      {"sed -ie s/a/b/ f", {"f", "fe"}},
  };
  for (const auto& [line, want] : cases) {
    std::optional<Strings> got = SedWrites(line);
    ASSERT_TRUE(got.has_value()) << line << " is opaque";
    EXPECT_EQ(*got, want) << line;
  }
}

TEST(SedArgsTest, ABackupPathBuiltFromTheSuffixIsOpaque) {
  // GNU sed replaces each `*` of SUFFIX with the file's name, and a suffix
  // with a `/` names another directory: -i'../out/*' renames f to ../out/f.
  for (const char* line : {"sed -i'../out/*' s/a/b/ f", "sed '-i/home/u/.*' s/a/b/ bashrc",
                           "sed --in-place='/tmp/x/*.bak' s/a/b/ f", "sed -i\"$SUFFIX\" s/a/b/ f",
                           "sed -n --in-pl=x s/a/b/ f"}) {
    EXPECT_EQ(SedWrites(line), std::nullopt) << line;
  }
}

TEST(SedArgsTest, ARuleWithoutWritesDoesNotAllowAnInPlaceEdit) {
  absl::StatusOr<Policy> policy = Policy::FromToml(
      "[[rule]]\nid = \"sed\"\naction = \"allow\"\nprefix = [\"sed\"]\n\n"
      "[[rule]]\nid = \"gsed\"\naction = \"allow\"\nprefix = [\"gsed\"]\n\n"
      "[[rule]]\nid = \"sed-src\"\naction = \"allow\"\nprefix = [\"sed\", \"-i\"]\n"
      "writes = true\nwrite_paths = [\"src/**\"]\n",
      "sed.toml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  CheckContext context;
  context.cwd = "/srv/project";
  context.read_roots = {"/srv/project"};
  EXPECT_EQ(policy->Check("sed -i s/a/b/ src/f", context).action, Action::kAllow);
  for (const char* line :
       {"gsed -i s/a/b/ f", "sed -i -- s/a/b/ -x", "sed -i -l 5 s/a/b/ f", "sed -i.bak s/a/b/ f",
        "sed -i s/a/b/ src/f other", "sed -i'../../*' s/a/b/ src/f"}) {
    Decision d = policy->Check(line, context);
    EXPECT_EQ(d.action, Action::kAsk) << line << ": " << d.reason;
  }
}

}  // namespace
}  // namespace termbridge::policy
