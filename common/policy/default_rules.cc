// The read-only commands Policy::Default() allows. They are chosen so that
// their arguments cannot turn them into writers or runners: find is not
// here (-delete, -exec), sed is not (-i). git is allowed for status, log,
// diff, show and listing branches: git runs programs the repository's own
// configuration names (core.fsmonitor, core.pager, diff.external, textconv
// and filter drivers), so the broker checks that configuration before any
// allowed git runs and overrides the config-run programs in every terminal.
// Every allow rule reads only its read scope (the workspace; see
// read_scope.h), so `git -C /elsewhere log` or `cat ~/.aws/credentials`
// asks. Ask rules take back the few options that write (date -s, tree -o,
// file -C, git --output and --ext-diff). Those ask
// rules name options (Rule::options), so every form getopt accepts counts:
// -us, -s2020, --se=2020, --s, options after operands.
#include <string>
#include <utility>
#include <vector>

#include "common/policy/policy_internal.h"

namespace termbridge::policy::internal {
namespace {

Rule Make(std::string id, Action action, MatchKind kind, std::vector<std::string> argv,
          std::string pattern, std::string reason) {
  Rule r;
  r.id = "default." + std::move(id);
  r.action = action;
  r.kind = kind;
  r.argv = std::move(argv);
  r.pattern = std::move(pattern);
  r.reason = std::move(reason);
  r.origin = "default";
  return r;
}

}  // namespace

std::vector<Rule> DefaultRules() {
  std::vector<Rule> rules;
  auto ask = [&](std::string id, std::string pattern, std::string reason) {
    rules.push_back(Make(std::move(id), Action::kAsk, MatchKind::kRegex, {}, std::move(pattern),
                         std::move(reason)));
  };
  // Ask when the program is given one of `options`, spotted as getopt
  // would (HasOption): -us, -s2020, --se=2020 and --s all count for date -s.
  auto ask_options = [&](std::string id, std::vector<std::string> argv,
                         std::vector<std::string> options, std::string reason) {
    Rule r = Make(std::move(id), Action::kAsk, MatchKind::kPrefix, std::move(argv), "",
                  std::move(reason));
    r.options = std::move(options);
    rules.push_back(std::move(r));
  };
  ask_options("date-set", {"date"}, {"-s", "--set"}, "sets the system clock");
  // `date MMDDhhmm[[CC]YY][.ss]` sets the clock too; an operand of digits
  // is the only form it takes (a format operand starts with '+').
  ask("date-set-operand", R"(^date\s(.*\s)?[0-9]+(\.[0-9]*)?(\s|$))",
      "sets the system clock (MMDDhhmm operand)");
  ask_options("git-output", {"git"}, {"--output"}, "writes git output to a file");
  ask_options("git-ext-diff", {"git"}, {"--ext-diff"}, "runs an external diff program");
  ask_options("tree-output", {"tree"}, {"-o", "-R"},
              "writes the tree to a file (-o, or 00Tree.html in every directory with -R)");
  ask_options("file-compile", {"file"}, {"-C", "--compile"}, "compiles a magic file");
  // BSD-style `ps e` (a word without a dash) prints every process's
  // environment, the broker's included.
  ask("ps-environment", R"(^ps\s(.*\s)?([^-\s]\S*)?e)",
      "prints processes' environments (BSD option e)");

  static const char* const kReadOnly[] = {
      "ls",   "pwd",    "whoami",    "id",      "date",     "echo",     "cat",
      "head", "tail",   "wc",        "grep",    "egrep",    "fgrep",    "uname",
      "stat", "file",   "du",        "df",      "which",    "true",     "printenv",
      "ps",   "tree",   "basename",  "dirname", "realpath", "readlink", "cut",
      "diff", "uptime", "sha256sum", "md5sum",  "seq",      "nproc"};
  for (const char* name : kReadOnly) {
    rules.push_back(Make(name, Action::kAllow, MatchKind::kPrefix, {name}, "", "read-only"));
  }
  for (const char* sub : {"status", "log", "diff", "show"}) {
    rules.push_back(Make(std::string("git-") + sub, Action::kAllow, MatchKind::kPrefix,
                         {"git", sub}, "", "read-only git"));
  }
  int n = 0;
  for (const char* flag : {"", "-a", "-r", "-v", "-vv", "-av", "--show-current", "--list"}) {
    std::vector<std::string> argv = {"git", "branch"};
    if (*flag != '\0') argv.push_back(flag);
    rules.push_back(Make("git-branch-" + std::to_string(n++), Action::kAllow, MatchKind::kExact,
                         std::move(argv), "", "lists branches"));
  }
  n = 0;
  for (const char* flag : {"", "-f", "-s", "-i", "-I", "-d", "--fqdn"}) {
    std::vector<std::string> argv = {"hostname"};
    if (*flag != '\0') argv.push_back(flag);
    rules.push_back(Make("hostname-" + std::to_string(n++), Action::kAllow, MatchKind::kExact,
                         std::move(argv), "", "prints the host name"));
  }
  return rules;
}

}  // namespace termbridge::policy::internal
