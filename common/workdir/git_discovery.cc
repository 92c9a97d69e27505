// Bounded reads of git's small files and git's own repository tests
// (setup.c's is_git_directory and validate_headref, read_gitfile,
// objects/info/alternates).
#include "common/workdir/git_discovery.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/workdir/path_text.h"

namespace termbridge::workdir {

using internal::ConsumePrefix;
using internal::StartsWith;
using internal::StripLeadingSpace;
using internal::StripTrailingSpace;

namespace {

std::string Join(const std::string& dir, std::string_view name) {
  return dir == "/" ? absl::StrCat("/", std::string(name))
                    : absl::StrCat(dir, "/", std::string(name));
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ReadBounded(const std::string& path, size_t cap) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    return absl::ErrnoToStatus(errno, "");
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { close(*f); });
  struct stat st;
  if (fstat(fd, &st) != 0) return absl::ErrnoToStatus(errno, "");
  if (!S_ISREG(st.st_mode)) return absl::FailedPreconditionError("not a regular file");
  if (static_cast<uint64_t>(st.st_size) > cap) {
    return absl::ResourceExhaustedError(absl::StrCat("larger than ", cap, " bytes"));
  }
  std::string bytes;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "");
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > cap) {
      return absl::ResourceExhaustedError(absl::StrCat("larger than ", cap, " bytes"));
    }
  }
  return bytes;
}

std::optional<std::string> RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return std::nullopt;
  return std::string(buf);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string ResolveFrom(std::string_view path, const std::string& base) {
  if (StartsWith(path, "/")) return std::string(path);
  return absl::StrCat(base, "/", std::string(path));
}

std::string CommonDirOf(const std::string& git_dir) {
  auto text = ReadBounded(Join(git_dir, "commondir"), kMaxGitSmallFileBytes);
  if (!text.ok() || !text->has_value()) return git_dir;
  std::string_view path = StripTrailingSpace(**text);
  if (path.empty()) return git_dir;
  return RealPath(ResolveFrom(path, git_dir)).value_or(git_dir);
}

bool IsValidHead(const std::string& head) {
  struct stat st;
  if (lstat(head.c_str(), &st) != 0) return false;
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(head.c_str(), target, sizeof target);
    return n > 0 && StartsWith(std::string_view(target, n), "refs/");
  }
  auto text = ReadBounded(head, kMaxGitSmallFileBytes);
  if (!text.ok() || !text->has_value()) return false;
  std::string_view t = **text;
  if (ConsumePrefix(&t, "ref:")) {
    return StartsWith(StripLeadingSpace(t), "refs/");
  }
  size_t hex = 0;
  while (hex < t.size() && absl::ascii_isxdigit(t[hex])) ++hex;
  return hex == 40 || hex == 64;
}

bool IsGitDirectory(const std::string& dir) {
  std::string common = CommonDirOf(dir);
  return IsValidHead(Join(dir, "HEAD")) && IsDirectory(Join(common, "objects")) &&
         IsDirectory(Join(common, "refs"));
}

absl::StatusOr<std::string> GitFileTarget(const std::string& dot_git) {
  auto text = ReadBounded(dot_git, kMaxGitSmallFileBytes);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return absl::NotFoundError("vanished");
  std::string_view t = StripTrailingSpace(**text);
  if (!ConsumePrefix(&t, "gitdir: ") || t.empty()) {
    return absl::InvalidArgumentError("no \"gitdir: <path>\"");
  }
  size_t slash = dot_git.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : dot_git.substr(0, slash);
  return ResolveFrom(t, dir);
}

absl::StatusOr<std::vector<std::string>> AlternateObjectDirs(const std::string& objects_dir) {
  const std::string file = Join(objects_dir, "info/alternates");
  auto text = ReadBounded(file, kMaxGitSmallFileBytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(file, ": ", text.status().message()));
  }
  std::vector<std::string> dirs;
  if (!text->has_value()) return dirs;
  std::string_view rest = **text;
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = StripTrailingSpace(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '"') {
      return absl::FailedPreconditionError(absl::StrCat(file, " names a quoted path"));
    }
    dirs.push_back(ResolveFrom(line, objects_dir));
  }
  return dirs;
}

}  // namespace termbridge::workdir
