// How git finds its repository's files, read without running git: bounded
// reads of the small files (.git files, HEAD, commondir, alternates) and
// git's own tests for a git directory. Both the workdir-config check
// (workdir_config.h) and the policy's read scope (common/policy/read_scope.cc)
// find repositories with these, so they agree on what git would open.
// Every file is opened non-blocking and must be a regular file, so a FIFO or
// a device planted in .git cannot stall the caller.
#ifndef TERMBRIDGE_COMMON_WORKDIR_GIT_DISCOVERY_H_
#define TERMBRIDGE_COMMON_WORKDIR_GIT_DISCOVERY_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::workdir {

// .git files, HEAD, commondir and alternates are at most this large.
inline constexpr size_t kMaxGitSmallFileBytes = size_t{64} << 10;

// The regular file `path` whole: nullopt when it does not exist; an error
// when it is anything else than a readable regular file of at most `cap`
// bytes (ResourceExhausted when larger).
absl::StatusOr<std::optional<std::string>> ReadBounded(const std::string& path, size_t cap);

// realpath(3), nullopt when it fails.
std::optional<std::string> RealPath(const std::string& path);

bool IsDirectory(const std::string& path);

// `path` as git takes a path written in one of its files: relative ones
// from `base`.
std::string ResolveFrom(std::string_view path, const std::string& base);

// The common directory of `git_dir`: what its commondir file names (a linked
// worktree), resolved; else `git_dir`.
std::string CommonDirOf(const std::string& git_dir);

// git's validate_headref: a symlink into refs/, "ref: refs/...", or an id.
bool IsValidHead(const std::string& head);

// git's is_git_directory: HEAD, and objects/ and refs/ in the common dir.
bool IsGitDirectory(const std::string& dir);

// The git directory a .git file names ("gitdir: <path>", relative to the
// file's directory). An error says why there is none: the file cannot be
// read (its ReadBounded error; NotFound when it vanished), or
// InvalidArgument when it holds no "gitdir: <path>".
absl::StatusOr<std::string> GitFileTarget(const std::string& dot_git);

// The object directories `objects_dir`/info/alternates names, one a line,
// relative to `objects_dir`, as written (not resolved further); empty when
// there is no such file. An error when it cannot be read whole or names a
// C-quoted path (not unquoted here): where git reads cannot be known.
absl::StatusOr<std::vector<std::string>> AlternateObjectDirs(const std::string& objects_dir);

}  // namespace termbridge::workdir

#endif  // TERMBRIDGE_COMMON_WORKDIR_GIT_DISCOVERY_H_
