// Helpers shared by the files that implement Policy (policy.cc, the TOML and
// JSON codecs and the default rules): names of actions and match kinds, and
// the read-only commands the default policy allows.
#ifndef TERMBRIDGE_COMMON_POLICY_POLICY_INTERNAL_H_
#define TERMBRIDGE_COMMON_POLICY_POLICY_INTERNAL_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"
#include "re2/re2.h"

namespace termbridge::policy::internal {

std::optional<Action> ParseAction(std::string_view name);
std::string_view MatchKindName(MatchKind kind);  // "exact", "prefix", "regex", "builtin"

// The allow rules (and the ask rules that carve exceptions out of them) of
// Policy::Default(), with origin "default".
std::vector<Rule> DefaultRules();

// Write targets (write_paths.cc). A static target is one the shell does not
// expand at run time ($, `, globs), that does not climb with "..", and that
// is not a directory's tree ("DIR/").
bool IsStaticWriteTarget(std::string_view target);
// One anchored RE2 pattern for a rule's write_paths globs (`**` crosses
// directories, `*` and `?` do not; a leading "./" is ignored).
std::string WritePathsRegex(const std::vector<std::string>& globs);
// True when `target` is static and, normalized ("./" and "//" dropped),
// matches the compiled WritePathsRegex: a relative target only a relative
// glob, an absolute one only an absolute glob.
bool WritePathCovered(const re2::RE2& write_paths, std::string_view target);
// Whether writing `target` lands only where `write_paths` cover, with
// `cwd` known: from every directory the shell may be in when it runs (`cwd`
// and the line's cd targets), the file it names and the file its symlinks
// lead to (the kernel follows them: a `build` the agent made a symlink to ~
// turns build/.bashrc into ~/.bashrc) must each be covered, by a relative
// glob as a path under `cwd` (written or resolved) or by an absolute one. A
// cd that cannot be followed, or a procfs magic link on the way, is never
// covered. With `cwd` unknown, a relative target is judged as text. When a
// symlink or a cd takes it out, *why says how ("" otherwise).
bool WriteCovered(const re2::RE2& write_paths, const std::string& target, const ParsedLine& line,
                  const std::string& cwd, std::string* why);
// `path` as a glob that matches exactly it.
std::string EscapeGlob(std::string_view path);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_POLICY_INTERNAL_H_
