// A private stand-in for a repository's git directory, for running git
// without the configuration an agent can write. git reads .git/config when
// it starts, not when the broker judged the line, and an agent that writes
// its workspace from its container can change it in between (diff.external,
// a textconv or filter driver, core.fsmonitor). The stand-in holds a copy
// of the repository's config files reduced to the keys the allow list calls
// data (workdir_config.h), copies of the small top-level files (HEAD first:
// git refuses a HEAD that is a symlink out of refs/), and symlinks to
// everything else (objects, refs, index, logs, info, ...); hooks are left
// out. git run with GIT_DIR pointing at it reads the copy, which nobody else
// can write. See docs/security.md, "git runs with the configuration it was
// judged by".
#ifndef TERMBRIDGE_COMMON_WORKDIR_GIT_SNAPSHOT_H_
#define TERMBRIDGE_COMMON_WORKDIR_GIT_SNAPSHOT_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/workdir/workdir_config.h"

namespace termbridge::workdir {

// The config file `text` with only the entries IsHarmlessGitConfigKey
// accepts, written back in git's syntax; `bare` is set when it says
// core.bare = true. InvalidArgument where git would refuse the file.
absl::StatusOr<std::string> HarmlessGitConfig(std::string_view text, bool* bare = nullptr);

struct GitSnapshot {
  std::string git_dir;  // what GIT_DIR should name
  bool bare = false;    // core.bare = true in the repository's config
};

// Builds the stand-in for `repo` inside `dir` (an empty directory only the
// caller can write). An error when a config file cannot be read or parsed
// or an entry cannot be made: git must not run then.
absl::StatusOr<GitSnapshot> BuildGitSnapshot(const GitLocation& repo, const std::string& dir);

}  // namespace termbridge::workdir

#endif  // TERMBRIDGE_COMMON_WORKDIR_GIT_SNAPSHOT_H_
