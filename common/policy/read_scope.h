// Where a command's reads land, and whether they stay where an allow rule
// may read (its read scope) and away from secrets (the sensitive paths).
// The words ReadsOf gives are resolved like the protected-path built-ins
// resolve theirs: ~ and $HOME expanded, relative words taken from the cwd
// and the line's own cd targets, symlinks resolved as far as they exist,
// globs judged by the directory they list and every name they match now.
// With no cwd known, relative words stay under "(unknown cwd)", which is
// also the workspace then.
#ifndef TERMBRIDGE_COMMON_POLICY_READ_SCOPE_H_
#define TERMBRIDGE_COMMON_POLICY_READ_SCOPE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"
#include "common/policy/protected_paths.h"

namespace termbridge::policy::internal {

inline constexpr char kUnknownCwd[] = "/(unknown cwd)";

struct ResolvedRead {
  std::string path;  // absolute and normalized, symlinks not resolved
  Parts lexical;     // `path` as components
  Parts physical;    // with symlinks resolved as far as they exist
  Parts links;       // every path at which a symlink was followed on the way
  // The procfs magic link (/proc/self/cwd, /proc/<pid>/root, .../fd/N, ...)
  // the read goes through, "" when none: it leads wherever the reading
  // process's files are, which no path here names.
  std::string magic;
  bool walk = false;
  bool follows_links = false;
  // A glob as written: judged against the sensitive names only (its
  // directory and its matches are reads of their own).
  bool pattern = false;
};

struct ReadPlan {
  std::vector<ResolvedRead> reads;
  std::string unknown;  // CommandReads::unknown
  // "path" or "path (walk)" for each read, patterns left out; relative to
  // an unknown cwd they read "(unknown cwd)/x".
  std::vector<std::string> Shown() const;
};

// What `command` of `line` reads, resolved against `cwd` ("" = unknown).
// git reads its repository where git's discovery finds it: the work tree's
// top level, and (walked following symlinks) the git dir a .git directory,
// symlink or file ("gitdir: ...") names, its commondir and the object
// directories its alternates name. /proc/self/root is seen through as "/".
ReadPlan PlanReads(const SimpleCommand& command, const ParsedLine& line, const std::string& cwd);

// A read scope: globs (`**` as a whole component crosses directories, `*`
// `?` `[..]` stay within a name, `\` escapes) or plain paths, which cover
// everything at or under them. Each entry also in its symlink-resolved form.
struct ReadScope {
  std::vector<std::string> shown;
  std::vector<Parts> entries;
  // Why a workspace root was dropped as too broad ("the workspace /home/u
  // is the home directory"); the first one, "" when none was.
  std::string too_broad;
};
// `read_paths` when not empty, else the workspace: context.read_roots, or
// context.cwd when there are none (an unknown cwd when that is "" too).
// Relative entries are taken from context.cwd. A workspace root that is
// too broad to read freely (/, the home directory or an ancestor of it, a
// dot-directory of the home or inside one, a system directory such as /etc,
// /usr, /var, /tmp itself) is dropped, compared in its resolved form; with
// none left the scope is empty and every read asks. Operator read_paths
// are kept as written.
ReadScope MakeReadScope(const std::vector<std::string>& read_paths, const CheckContext& context);

// A cd, pushd or popd of `line` that goes where Bases cannot follow (cd -,
// popd, a target that does not resolve), as written; "" when none does.
std::string UnknownDirectoryChange(const ParsedLine& line);

// Whether `command` of `line` runs only at or under one of `cwd_globs`
// (Rule::cwd): the context's cwd and every directory a cd of the line goes
// to, in their written and symlink-resolved forms. False for an unknown
// cwd, a cd that cannot be followed, or a command reached through a wrapper.
bool RunsWithin(const std::vector<std::string>& cwd_globs, const SimpleCommand& command,
                const ParsedLine& line, const CheckContext& context);

// Whether every path the read_paths glob `inner` covers is also covered by
// `outer`, for any files on disk: equal globs, or `inner` at or under a
// plain path (or a "dir/**") `outer`, without "..", and with its fixed
// prefix's symlinks resolving at or under `outer`'s. Both absolute or ~.
bool GlobWithin(const std::string& inner, const std::string& outer);

// The first read of `plan` outside `scope` (by its path, or by where its
// symlinks lead), as shown; nullopt when every read is inside. A walk is
// inside only when everything below it is.
// *walk tells whether that read is a walk.
std::optional<std::string> FirstReadOutside(const ReadPlan& plan, const ReadScope& scope,
                                            bool* walk);

// The built-in sensitive paths (SSH and GPG keys, cloud and cluster
// credentials, registry auth, .netrc, git credentials, .env/.envrc files,
// private keys and key stores by name, vault and terraform secrets, shell
// histories, database passwords, /etc/shadow, ...), in the read_paths glob
// syntax. The home's secrets (~/.ssh/**, ~/.aws/**, ...) are listed again
// as **/.ssh/**, ...: a copy of a home is as secret as the home.
const std::vector<std::string>& DefaultSensitivePaths();

struct SensitiveHit {
  std::string path;     // the read (or the file found under a walk)
  std::string pattern;  // the sensitive entry it matched, as written
};
// The first read of `plan` that is sensitive: it matches a pattern (letters
// in either case: a case-insensitive file system opens .ENV as .env), is a
// walk that a pattern reaches below, or goes through a procfs magic link
// (ResolvedRead::magic), which leads anywhere. Patterns that start with `**` (names
// anywhere) are looked for under a walk on the file system, at most
// kMaxWalkEntries entries; a bigger tree is a hit ("more than N entries").
inline constexpr size_t kMaxWalkEntries = 100000;
std::optional<SensitiveHit> FirstSensitiveRead(const ReadPlan& plan,
                                               const std::vector<std::string>& patterns);

// Why the ps in `command` shows what the agent should not see unasked
// (environments, other users' or all processes); nullopt when it does not.
std::optional<std::string> ProcessListingProblem(const SimpleCommand& command);

// Globs that cover exactly the reads of `plan` (escaped; a walk as
// "dir/**"; a symlink's resolved form too), for an "always" rule.
std::vector<std::string> ReadPathsFor(const ReadPlan& plan);
// `path` as a read_paths glob that matches exactly it (* ? [ \ escaped).
std::string EscapeReadGlob(std::string_view path);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_READ_SCOPE_H_
