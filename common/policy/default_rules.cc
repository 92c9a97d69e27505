// The read-only commands Policy::Default() allows. They are chosen so that
// their arguments cannot turn them into writers or runners: find is not
// here (-delete, -exec), sed is not (-i), git is allowed only for status,
// log, diff, show and listing branches, and ask rules take back the few
// options that write (date -s, git --output, tree -o, file -C).
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
  ask("date-set", R"(^date(\s.*)?\s(-[A-Za-z]*s[A-Za-z]*|--set(=.*)?)(\s|$))",
      "sets the system clock");
  ask("git-output", R"(^git\s.*--output(\s|=|$))", "writes git output to a file");
  ask("git-ext-diff", R"(^git\s.*--ext-diff)", "runs an external diff program");
  ask("tree-output", R"(^tree\s(.*\s)?-[A-Za-z]*[oR])",
      "writes the tree to a file (-o, or 00Tree.html in every directory with -R)");
  ask("file-compile", R"(^file\s(.*\s)?(-[A-Za-z]*C|--compile))", "compiles a magic file");

  static const char* const kReadOnly[] = {
      "ls",    "pwd",   "whoami",   "id",     "date",     "echo",     "cat",      "head",
      "tail",  "wc",    "grep",     "egrep",  "fgrep",    "uname",    "stat",     "file",
      "du",    "df",    "which",    "true",   "printenv", "ps",       "tree",     "basename",
      "dirname", "realpath", "readlink", "cut", "diff",   "uptime",   "sha256sum", "md5sum",
      "seq",   "nproc"};
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
