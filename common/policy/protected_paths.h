// The built-ins that keep an agent's commands away from the broker's own
// files (its state dir, policy file, audit log, socket, credentials) and
// from other processes' /proc entries. A command is checked by every path
// it could name: argv words, option values (--file=P, -fP, if=P), `<` and
// `>` targets and VAR=P values, with ~ and $HOME expanded, relative words
// resolved against the shell's cwd and the line's own cd targets, symlinks
// resolved as far as they exist, and globs matched component by component.
// mv, cp, tar, rsync and the like are also denied an ancestor of one, which
// they would carry along.
#ifndef TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_
#define TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/builtin_rules.h"
#include "common/policy/policy.h"

namespace termbridge::policy::internal {

// The path machinery shared with the read checks (read_scope.cc).
using Parts = std::vector<std::string>;  // the components of an absolute path
bool HasGlobChars(std::string_view s);
Parts SplitPath(std::string_view path);
// "/" + parts[from..to) joined by "/"; "/" when empty.
std::string JoinAbs(const Parts& parts, size_t from = 0, size_t to = std::string::npos);
// An absolute path with ".", ".." and "//" resolved as text.
Parts Lexical(std::string_view abs);
// `word` with a leading ~, ~user, ~+, $HOME, ${HOME}, $PWD or ${PWD}
// expanded ($PWD and ~+ become "."); nullopt when the path still depends on
// run-time values or names no known directory.
std::optional<std::string> ExpandHome(std::string word);
// Symlinks resolved for the longest existing prefix, the rest appended as
// text; every path at which a link was followed goes to *visited. With
// `magic`, /proc/self/root (and thread-self's, a task's) is seen through as
// "/", and the first other procfs magic link on the way (/proc/<self|pid>/
// {root,cwd,exe,fd/N,map_files/R}, also under task/<tid>) goes to *magic:
// it leads wherever the reading process's files are, so the rest is text.
std::string Physical(const std::string& abs, Parts* visited, std::string* magic = nullptr);
// The absolute paths a relative or absolute word names, given the bases.
Parts Absolutes(const std::string& word, const Parts& bases);
// Where the shell may be when a command of `line` runs: `cwd` (when
// absolute) and every directory a cd or pushd in the line goes to, at most
// kMaxBases (a line that reaches the bound may go further).
inline constexpr size_t kMaxBases = 16;
Parts Bases(const ParsedLine& line, const std::string& cwd);
// The directory a cd or pushd goes to, as written ("~" when none is named).
std::string CdTarget(const SimpleCommand& c);
// Whether glob components g[i..] can name a path at or under p[j..]
// (`**` may stand for any number of components); with `fold_case`, letters
// match in either case.
bool GlobReaches(const Parts& g, size_t i, const Parts& p, size_t j, bool fold_case = false);
bool AtOrUnder(const Parts& path, const Parts& root);

// The forms a protected path is compared in: ~ and $HOME expanded, made
// absolute against the process cwd, normalized (., .., //), and the same
// with symlinks resolved. Empty entries are dropped.
std::vector<std::string> ProtectedForms(const std::vector<std::string>& paths);

// builtin.broker-state: the command names a path at or under a protected one.
bool TouchesProtectedPath(const SimpleCommand& command, const ParsedLine& line,
                          const BuiltinContext& context);

// builtin.process-files: the command names /proc/<pid>/{cwd,root,fd,fdinfo,
// environ,mem,map_files,maps,pagemap} (or the same under task/<tid>/).
bool TouchesProcessFiles(const SimpleCommand& command, const ParsedLine& line,
                         const BuiltinContext& context);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_
