// termbridge-git: the `git` every broker terminal finds first in PATH. git
// reads the repository's .git/config when it starts, and an agent writing
// its workspace from its container can change that file after the broker
// judged the line (`slow-command; git diff` with diff.external planted in
// between). For the read-only commands the built-in rules allow (status,
// log, diff, show, listing branches, and their read-only kin) the guard runs
// the real git with GIT_DIR at a private stand-in whose config holds only
// the keys the allow list calls data (common/workdir/git_snapshot.h), so no
// program the repository names can run, whatever the file says by then.
// Other commands, and git started with options that move it (-C, -c,
// --git-dir), run as they are: the broker's check judged those. See
// docs/security.md, "git runs with the configuration it was judged by".
#ifndef TERMBRIDGE_BROKER_GIT_GUARD_GIT_GUARD_H_
#define TERMBRIDGE_BROKER_GIT_GUARD_GIT_GUARD_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::git_guard {

// The environment variable naming the guard's directory (the PATH entry
// that holds its `git`); its snapshots are made there.
inline constexpr char kGuardDirEnv[] = "TERMBRIDGE_GIT_GUARD_DIR";

// Whether `argv` (argv[0] is git) runs a command the guard runs against a
// snapshot: a read-only subcommand after nothing but harmless global flags
// (--no-pager, --no-optional-locks, ...), and `branch` only when it lists.
bool RunsOnSnapshot(const std::vector<std::string>& argv);

// The real git: the first executable `git` in `path` (a PATH value) that is
// neither in `guard_dir` nor the file `self` (the guard's own real path).
std::optional<std::string> FindRealGit(std::string_view path, std::string_view guard_dir,
                                       const std::string& self);

// For the broker: makes `<state_dir>/git-guard/git`, a link to the
// termbridge-git beside `broker_exe`, and returns that directory for the
// front of the terminals' PATH. An error when there is no such program or
// the link cannot be made (terminals then run git as it is, judged by the
// repository check alone).
absl::StatusOr<std::string> PrepareGuardDir(const std::string& state_dir,
                                            const std::string& broker_exe);

// The guard's main: runs git as above and returns its exit status (a git
// killed by a signal kills the guard with the same signal).
int Main(int argc, char** argv);

}  // namespace termbridge::git_guard

#endif  // TERMBRIDGE_BROKER_GIT_GUARD_GIT_GUARD_H_
