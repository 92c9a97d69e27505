// The gate's checks around the policy: exact lines, agent variables, and the
// allowed commands that still ask a person.
#include "broker/core/gate_checks.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "broker/core/problem.h"
#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

struct Error {
  Problem code = Problem::kInternal;
  nlohmann::json details;
};
Error ErrorOf(const absl::Status& status) {
  std::optional<ProblemInfo> problem = ProblemOf(status);
  return problem ? Error{problem->kind, problem->details} : Error{};
}

// Allows every command line (reads anywhere included), so that only the
// gate's own checks can make it ask.
policy::Policy AllowAll() {
  return *policy::Policy::FromToml(
      "version = 1\n[[rule]]\nid = \"any\"\naction = \"allow\"\nregex = \".*\"\n"
      "read_paths = [\"/**\"]\n",
      "test");
}

policy::Decision Allowed(const std::string& line) {
  policy::Decision d = AllowAll().Check(line);
  EXPECT_EQ(d.action, policy::Action::kAllow) << d.reason;
  return d;
}

TEST(GateChecksTest, TheLineIsTheTextThatWasJudged) {
  ExecuteRequest p;
  p.command = "printf '%s\\n'";
  p.args = {"a b", "it's"};
  ASSERT_TRUE(MakeExactCommandLine(&p).ok());
  EXPECT_EQ(p.command, "printf '%s\\n' 'a b' 'it'\\''s'");
  EXPECT_TRUE(p.args.empty());
  p.command = "echo a\r\necho b\r";
  ASSERT_TRUE(MakeExactCommandLine(&p).ok());
  EXPECT_EQ(p.command, "echo a\necho b\n");
  p.command = std::string("echo a\0b", 8);
  auto error = ErrorOf(MakeExactCommandLine(&p));
  EXPECT_EQ(error.code, Problem::kInvalidRequest);
  EXPECT_EQ(error.details["field"], "execution.command");
  p.command = "printf '\x1b[31m'";  // kept: the parser asks, the shell takes it literally
  ASSERT_TRUE(MakeExactCommandLine(&p).ok());
  EXPECT_EQ(p.command, "printf '\x1b[31m'");
}

TEST(GateChecksTest, OpeningATerminalWithAVariableThatRunsCodeIsRefused) {
  ExecuteRequest p;
  p.open_only = true;
  p.env = {{"LANG", "C.UTF-8"}, {"BASH_ENV", "/tmp/x"}};
  auto error = ErrorOf(CheckAgentEnv(p, {}));
  EXPECT_EQ(error.code, Problem::kInvalidRequest);
  EXPECT_EQ(error.details["variable"], "BASH_ENV");
  EXPECT_TRUE(CheckAgentEnv(p, {"BASH_ENV"}).ok());
  p.env = {{"LANG", "C.UTF-8"}};
  EXPECT_TRUE(CheckAgentEnv(p, {}).ok());
  p.open_only = false;
  p.env = {{"LANG", "../../tmp/evil"}};
  EXPECT_EQ(ErrorOf(CheckAgentEnv(p, {})).code, Problem::kInvalidRequest);
  p.env = {{"GREETING", "a\x1b]0;x\x07"}};
  EXPECT_EQ(ErrorOf(CheckAgentEnv(p, {})).code, Problem::kInvalidRequest);
}

TEST(GateChecksTest, VariablesThatAreNotHarmlessAsk) {
  for (const char* name : {"BASH_ENV", "PROMPT_COMMAND", "BASH_FUNC_printf%%", "LD_PRELOAD",
                           "PAGER", "GIT_CONFIG_COUNT", "HOME", "PS4", "ENV", "ZDOTDIR"}) {
    ExecuteRequest p;
    p.env = {{name, "x"}};
    policy::Decision d = Allowed("printf ok");
    TightenDecision(p, CommandTarget{}, {}, &d);
    EXPECT_EQ(d.action, policy::Action::kAsk) << name;
    EXPECT_EQ(d.rule_id, "builtin.agent-env");
    EXPECT_NE(d.reason.find(name), std::string::npos) << d.reason;
  }
  ExecuteRequest p;
  p.env = {{"LC_ALL", "C"}, {"TZ", "UTC"}, {"MYAPP_MODE", "x"}};
  policy::Decision d = Allowed("printf ok");
  TightenDecision(p, CommandTarget{}, {"MYAPP_*"}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow) << d.reason;
}

// Lines zsh, dash or fish read otherwise than bash (each of these ran
// something in one of them that the bash reading does not see), and lines
// every shell reads alike.
TEST(GateChecksTest, ALineAnotherShellMayReadOtherwiseIsNamed) {
  for (const char* line : {
           "echo hi # ; touch canary",              // zsh without interactive_comments
           "echo ok #$(touch canary)",              // the same, a substitution after '#'
           "echo $'\\';touch canary;#'",            // dash has no $'...'
           "echo *(e:'touch canary':)",             // a zsh glob qualifier runs code
           "cat =(touch canary)",                   // zsh process substitution
           "echo 'x\\' '; touch canary; echo \\'",  // fish: \' inside single quotes
           "echo (touch canary)",                   // fish command substitution
           "cat **/id_rsa",                         // zsh recursive glob
           "cat *.txt",                             // globs: dot files, qualifiers, numeric ranges
           "cat <1-9> out",                         // a zsh numeric glob, bash a redirection
           "echo a ^b",                             // zsh extended_glob negation
           "echo a~b",                              // zsh extended_glob exclusion
           "ls =ssh",                               // zsh: the path of ssh
           "cat ''=gettext.sh",                     // zsh expands ''=cmd as =cmd too
           "echo x >\"\"=tool",                     // a write to the path of a program
           "cat ''%x",
           "cat ''~/x",          // empty quotes before % and ~
           "echo {a,b}",         // no brace expansion in dash
           "echo ~root",         // user lookups
           "echo hi &> out",     // dash: a background job, then a redirection
           "echo hi |& cat",     // dash: a syntax error; zsh, bash: stderr too
           "echo hi >| out",     // fish: no such redirection
           "echo hi >! out",     // zsh: clobber
           "echo \"$HOME\"",     // expansions inside double quotes
           "echo \"a!b\"",       // history in double quotes
           "echo \xe4\xb8\xa5",  // non-ASCII
           "echo a\nb",          // two lines
           "echo 'open",         // not closed
       }) {
    EXPECT_TRUE(PortableLineProblem(line, /*posix_quotes=*/false).has_value()) << line;
  }
  for (const char* line :
       {"echo hi", "printf '%s' x", "git log -p --stat", "make -j2 2>&1 | tail -n 20",
        "ls -la ~/src > out.txt", "X=1 printenv X && echo 'a b' || echo \"c d\"",
        "grep -rn 'a(b)*c' src", "echo 50% done:yes,ok", "cd ~", ""}) {
    EXPECT_EQ(PortableLineProblem(line, /*posix_quotes=*/false), std::nullopt) << line;
  }
  // zsh and sh take a backslash inside single quotes literally; fish does not.
  EXPECT_EQ(PortableLineProblem("printf 'a-%s\\n' x", /*posix_quotes=*/true), std::nullopt);
  EXPECT_TRUE(PortableLineProblem("printf 'a-%s\\n' x", /*posix_quotes=*/false).has_value());
  for (const char* line : {"echo $'\\';touch canary;#'", "echo hi # x"}) {
    EXPECT_TRUE(PortableLineProblem(line, /*posix_quotes=*/true).has_value()) << line;
  }
}

TEST(GateChecksTest, AnotherShellAsksForALineItMayReadOtherwise) {
  CommandTarget zsh;
  zsh.shell = "/usr/bin/zsh";
  zsh.shell_kind = session::ShellKind::kZsh;
  ExecuteRequest p;
  p.command = "echo hi # ; touch canary";
  policy::Decision d = Allowed(p.command);
  TightenDecision(p, zsh, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAsk);
  EXPECT_EQ(d.rule_id, "builtin.shell-dialect");
  EXPECT_NE(d.reason.find("/usr/bin/zsh"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("'#'"), std::string::npos) << d.reason;
  // bash reads it as judged; a portable line runs in zsh too.
  d = Allowed(p.command);
  TightenDecision(p, CommandTarget{}, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow) << d.reason;
  p.command = "echo hi";
  d = Allowed(p.command);
  TightenDecision(p, zsh, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow) << d.reason;
}

TEST(GateChecksTest, InputToAProgramThatRunsItsInputAsks) {
  CommandTarget target;
  target.input = true;
  target.readers = {"git", "less"};
  policy::Decision d = Allowed("q");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAsk);
  EXPECT_EQ(d.rule_id, "builtin.input-reader");
  target.readers = {"cat"};
  d = Allowed("hello");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow);
}

// Between the shell's fork and the program's exec, nothing but the shell is
// in the foreground: what will read the line is unknown, and unknown asks.
TEST(GateChecksTest, InputWhoseReaderIsNotKnownYetAsks) {
  CommandTarget target;
  target.input = true;
  target.readers = {"read"};
  target.readers_known = false;
  policy::Decision d = Allowed("less canary");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAsk);
  EXPECT_EQ(d.rule_id, "builtin.input-reader");
}

class TempRepo {
 public:
  TempRepo() {
    std::string tmpl = ::testing::TempDir() + "/tb_gate_repo_XXXXXX";
    path_ = mkdtemp(tmpl.data());
    std::filesystem::create_directories(path_ + "/.git/objects");
    std::filesystem::create_directories(path_ + "/.git/refs");
    std::ofstream(path_ + "/.git/HEAD") << "ref: refs/heads/main\n";
    std::ofstream(path_ + "/.git/config") << "[core]\n\trepositoryformatversion = 0\n";
  }
  ~TempRepo() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(GateChecksTest, GitAsksWhereTheRepositoryNamesProgramsToRun) {
  TempRepo repo;
  CommandTarget target;
  target.cwd = repo.path();
  policy::Decision d = Allowed("git status");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow) << d.reason;
  std::ofstream(repo.path() + "/.git/config", std::ios::app)
      << "\tfsmonitor = touch " << repo.path() << "/canary\n";
  d = Allowed("git status");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAsk);
  EXPECT_EQ(d.rule_id, "builtin.repo-config");
  EXPECT_NE(d.reason.find("core.fsmonitor"), std::string::npos) << d.reason;
  // Elsewhere than the directory checked: it asks too.
  d = AllowAll().Check("git -C /elsewhere status");
  TightenDecision(ExecuteRequest{}, CommandTarget{}, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAsk);
  // Other commands are not affected.
  d = Allowed("printf ok");
  TightenDecision(ExecuteRequest{}, target, {}, &d);
  EXPECT_EQ(d.action, policy::Action::kAllow);
}

}  // namespace
}  // namespace termbridge::core
