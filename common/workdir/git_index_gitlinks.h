// The submodule entries (gitlinks, mode 160000) of a git index file. A
// read-only `git status` or `git diff` runs git again inside every populated
// submodule, with that submodule's own configuration and hooks, so the
// workdir check has to visit them; this file finds them without running git.
#ifndef TERMBRIDGE_COMMON_WORKDIR_GIT_INDEX_GITLINKS_H_
#define TERMBRIDGE_COMMON_WORKDIR_GIT_INDEX_GITLINKS_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::workdir {

struct GitIndexGitlinks {
  std::vector<std::string> paths;  // worktree-relative paths of gitlink entries
  // Hex object id from a split index's "link" extension: the base entries
  // live in "sharedindex.<id>" next to the index. Empty when not split.
  std::string shared_index;
};

// Reads index versions 2, 3 and 4. `hash_size` is 20 (SHA-1) or 32
// (SHA-256). InvalidArgument for bytes that are not an index git could use.
absl::StatusOr<GitIndexGitlinks> ParseGitIndexGitlinks(std::string_view bytes, size_t hash_size);

}  // namespace termbridge::workdir

#endif  // TERMBRIDGE_COMMON_WORKDIR_GIT_INDEX_GITLINKS_H_
