// Wrappers are read as they read themselves (wrapper_args.h): the files they
// write, the variables they set, and what the check cannot follow (another
// directory, an emptied environment, another program name, an option it
// does not know), which no allow rule may pass.
#include "common/policy/wrapper_args.h"

#include <string>
#include <utility>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

using Strings = std::vector<std::string>;

// The command the line runs, past its wrappers (the last one emitted).
const SimpleCommand& Inner(const ParsedLine& p) {
  EXPECT_FALSE(p.error.has_value()) << p.error.value_or("");
  EXPECT_FALSE(p.commands.empty());
  return p.commands.back();
}

TEST(WrapperArgsTest, WhatTheCheckCannotFollowIsJudgedAtRunTime) {
  const std::pair<const char*, const char*> cases[] = {
      {"env -C /etc cat passwd", "another directory"},
      {"env --chdir=/etc cat passwd", "another directory"},
      {"env -iC/etc cat passwd", "environment"},
      {"env -i git diff", "environment"},
      {"env - git diff", "environment"},
      {"env --ignore-environment git log", "environment"},
      {"env -u GIT_PAGER git log", "environment"},
      {"env -uGIT_CONFIG_COUNT git log", "environment"},
      {"env --unset=PAGER git log", "environment"},
      {"env -i -S 'git log'", "environment"},
      {"env -a ls rm x", "another name"},
      {"env --argv0=ls rm x", "another name"},
      {"env --ch=/etc cat passwd", "does not know"},
      {"env -Z cat x", "does not know"},
      {"exec -c git log", "environment"},
      {"exec -a ls rm x", "another name"},
      {"chroot /x cat y", "another root"},
      {"timeout --kill 5 ls", "does not know"},
      {"nice -x ls", "does not know"},
      {"script -qc ls $OUT", "run time"},
      {"strace -E PAGER= git log", "tracer"},
      {"command -p git status", "default PATH"},
      {"env -S'#' cat x", "env's own rules"},
      {"env -S 'cat a\\_/etc/passwd'", "env's own rules"},
      {"bash -k -c 'true X=1'", "changes what"},
      {"bash --rcfile x -c true", "changes what"},
      {"bash -i -c 'cat a # x'", "changes what"},
      {"bash -o keyword -c true", "changes how"},
      {"bash +O interactive_comments -c true", "changes how"},
      {"sh -c \"true \\$'\\\\'; touch x #'\"", "otherwise than bash"},
      {"zsh -c '< x'", "otherwise than bash"},
      {"watch --ex cat a", "does not know"},
      {"watch -g -n1 \"true \\$'x'\"", "otherwise than bash"},
      {"./nice cat a", "not the system's"},
      {"exec -l bash -c true", "another name"},
  };
  for (const auto& [line, why] : cases) {
    const ParsedLine p = ParseLine(line);
    const SimpleCommand& c = Inner(p);
    const bool judged_later =
        c.dynamic || c.opaque || (p.commands.size() > 1 && p.commands.front().opaque);
    EXPECT_TRUE(judged_later) << line;
    std::string notes;
    for (const SimpleCommand& x : p.commands) notes += x.note + "|";
    EXPECT_NE(notes.find(why), std::string::npos) << line << ": " << notes;
  }
  // What a wrapper runs is still found: `env -a ls rm x` runs rm.
  EXPECT_EQ(Inner(ParseLine("env -a ls rm x")).program, "rm");
  EXPECT_EQ(Inner(ParseLine("env -C /etc cat passwd")).program, "cat");
  // getopt keeps the last -c; env -S reads its words as its own arguments.
  EXPECT_EQ(Inner(ParseLine("script -q -c true -c 'touch x' /dev/null")).program, "touch");
  EXPECT_EQ(Inner(ParseLine("env -S '-u PAGER git log'")).program, "git");
  EXPECT_TRUE(Inner(ParseLine("env -S '-u PAGER git log'")).dynamic);
}

TEST(WrapperArgsTest, FilesAWrapperWritesAreTheCommandsWriteTargets) {
  const std::pair<const char*, Strings> cases[] = {
      {"\\time -o out.txt ls", {"out.txt"}},
      {"command time -o out.txt ls", {"out.txt"}},
      {"/usr/bin/time --output=out.txt -f %e ls", {"out.txt"}},
      {"'time' -ao out.txt ls", {"out.txt"}},
      {"time -p ls", {}},
      {"nohup ls", {"nohup.out"}},
      {"flock lock ls", {"lock"}},
      {"flock -w 5 lock -c ls", {"lock"}},
      {"script -qc ls /dev/null", {}},
      {"script -qc ls out.txt", {"out.txt"}},
      {"script out.txt -qc ls", {"out.txt"}},
      {"script -qc ls /dev/null -O log", {"log", "/dev/null"}},
      {"script -q -c ls -T timing /dev/null", {"timing"}},
      {"script -qc ls", {"typescript"}},
      {"timeout 5 ls", {}},
  };
  for (const auto& [line, want] : cases) {
    Strings got = Inner(ParseLine(line)).write_targets;
    got.erase(std::remove(got.begin(), got.end(), "/dev/null"), got.end());
    Strings expected = want;
    expected.erase(std::remove(expected.begin(), expected.end(), "/dev/null"), expected.end());
    EXPECT_EQ(got, expected) << line;
  }
}

TEST(WrapperArgsTest, PlainWrappersStillAllowWhatTheyRun) {
  const Policy policy = Policy::Default();
  for (const char* line : {"timeout 5 ls",
                           "timeout -s KILL --preserve-status 5 ls",
                           "nice -n 5 ls",
                           "nice -5 ls",
                           "stdbuf -oL ls",
                           "setsid -w ls",
                           "command ls",
                           "exec ls",
                           "time -p ls",
                           "/usr/bin/time -f %e ls",
                           "env -S 'git log' -1",
                           "env -- git log",
                           "busybox ls",
                           "script -qc ls /dev/null",
                           "ionice -c3 ls",
                           "taskset 1 ls",
                           "chrt -o 0 ls",
                           "env -S 'git log' -1",
                           "bash -e -o pipefail -c ls",
                           "sh -c 'ls -la'",
                           "watch -n1 ls",
                           "flock /dev/null -c ls"}) {
    EXPECT_EQ(policy.Check(line).action, Action::kAllow)
        << line << ": " << policy.Check(line).reason;
  }
}

// A terminal's PATH finds termbridge-git first (broker/git_guard); git named
// by a path would skip it.
TEST(WrapperArgsTest, GitIsTrustedByNameOnly) {
  const Policy policy = Policy::Default();
  EXPECT_EQ(policy.Check("git status").action, Action::kAllow);
  for (const char* line : {"/usr/bin/git status", "/bin/git log", "nice /usr/bin/git diff"}) {
    EXPECT_NE(policy.Check(line).action, Action::kAllow) << line;
  }
}

// The third review's: programs the built-in rules allow that run another
// (git's signature checks run gpg, file -z runs gzip, diff -l runs pr), read
// a zone file (TZ=~/..., date -d 'TZ="..."'), or a keyword read as GNU time.
TEST(WrapperArgsTest, ThirdReviewLinesAsk) {
  const Policy policy = Policy::Default();
  for (const char* line :
       {"git log --show-signature", "git show --pretty=%GK HEAD", "git log --format=%GS",
        "file -z x.Z", "file --uncompress x.gz", "diff -l a b", "date -d 'TZ=\"/x\" now'",
        "date -f dates.txt", "TZ=~/.ssh/id_rsa date", "TZ=:~/x date", "env TZ=~/x date",
        "time -v ls", "fish -c ls", "zsh -P -c ls"}) {
    EXPECT_NE(policy.Check(line).action, Action::kAllow) << line;
  }
  EXPECT_EQ(Inner(ParseLine("time -v ls")).program, "-v");
  for (const char* line : {"time -p ls", "time ls", "git log --format=%H", "file x.txt", "diff a b",
                           "date -d yesterday", "TZ=UTC date"}) {
    EXPECT_EQ(policy.Check(line).action, Action::kAllow)
        << line << ": " << policy.Check(line).reason;
  }
}

TEST(WrapperArgsTest, TracersAreOpaqueButDenyRulesSeeWhatTheyRun) {
  const Policy policy = Policy::Default();
  EXPECT_EQ(policy.Check("strace ls").action, Action::kAsk);
  EXPECT_EQ(policy.Check("strace -f -o trace.txt ls").action, Action::kAsk);
  EXPECT_EQ(policy.Check("strace rm -rf /").action, Action::kDeny);
  EXPECT_EQ(policy.Check("sudo -D /etc cat shadow").action, Action::kDeny);
}

}  // namespace
}  // namespace termbridge::policy
