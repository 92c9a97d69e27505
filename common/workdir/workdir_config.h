// Whether a read-only git command (status, log, diff, show, listing
// branches) run in a directory would run a program that the repository
// itself names. git reads .git/config, .git/config.worktree and .git/hooks,
// and an agent that can write its workspace can write those: core.fsmonitor,
// core.pager, diff.external, a filter or textconv driver, an include, a
// post-index-change hook, a submodule with any of these. The broker asks a
// person instead of allowing such a command by policy.
//
// The judgement is an allow list: a config key is harmless only if it is
// known to be data (core.filemode, remote.<name>.url, user.email, ...);
// every other key is reported. A file that cannot be read or parsed is
// reported too, so a failure never reads as "safe".
#ifndef TERMBRIDGE_COMMON_WORKDIR_WORKDIR_CONFIG_H_
#define TERMBRIDGE_COMMON_WORKDIR_WORKDIR_CONFIG_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::workdir {

// One thing in the repository that could make git run code.
struct GitCodeRisk {
  std::string what;  // "core.fsmonitor", "hook post-index-change", "cannot read ...: ..."
  // "file:line" or "file"; relative to the top of the worktree when inside
  // it (".git/config:7"), else absolute. Empty when there is no one place.
  std::string where;

  std::string ToString() const;  // "core.fsmonitor (.git/config:7)"
};

struct GitRepoRisks {
  static constexpr size_t kMaxRisks = 32;

  std::string git_dir;             // absolute; empty when cwd is not inside a repository
  std::vector<GitCodeRisk> risks;  // in discovery order, at most kMaxRisks
  bool truncated = false;          // more risks existed than were kept

  bool empty() const { return risks.empty(); }
  // "core.fsmonitor (.git/config:7); hook post-index-change (.git/hooks/...)",
  // with "; ..." when truncated. "" when empty.
  std::string Summary() const;
};

// Finds the repository git would use in `cwd` (walking up to a .git
// directory, a .git file with "gitdir: <path>", or a bare repository) and
// reports every config key outside the allow list, every hook a read-only
// command could run, and the same for each populated submodule, recursively.
// Not inside a repository: an empty result. InvalidArgument only when `cwd`
// is not an absolute path.
absl::StatusOr<GitRepoRisks> FindGitConfigThatRunsCode(const std::string& cwd);

// Where git finds its repository from a directory (git_dir, common_dir and
// worktree real paths; worktree "" when bare or when the directory is inside
// the git directory itself).
struct GitLocation {
  std::string git_dir;
  std::string common_dir;
  std::string worktree;
};

// The repository git would use in `cwd`, found as FindGitConfigThatRunsCode
// finds it: nullopt when there is none; an error when discovery meets
// something it cannot read (a broken .git file, a directory it cannot stat).
absl::StatusOr<std::optional<GitLocation>> FindGitRepository(const std::string& cwd);

// Whether a config key is known to be data that no git command turns into a
// program to run. `section` and `key` lowercased, `subsection` as written.
bool IsHarmlessGitConfigKey(std::string_view section, bool has_subsection,
                            std::string_view subsection, std::string_view key);

// Whether a file named `name` in the hooks directory can only be run by a
// command that writes history or talks to a remote (pre-commit, pre-push,
// post-checkout, ...), or never (*.sample).
bool IsHookNotRunByReadOnlyGit(std::string_view name);

}  // namespace termbridge::workdir

#endif  // TERMBRIDGE_COMMON_WORKDIR_WORKDIR_CONFIG_H_
