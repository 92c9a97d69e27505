#include "common/workdir/git_snapshot.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/workdir/git_config_syntax.h"
#include "common/workdir/git_discovery.h"

namespace termbridge::workdir {
namespace {

constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr size_t kMaxCopiedFileBytes = size_t{64} << 10;
constexpr size_t kMaxEntries = 4096;

// `s` as a double-quoted config value or subsection.
std::string Quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

// git's boolean: a bare key, true/yes/on, or a non-zero number.
bool GitTrue(const GitConfigEntry& e) {
  if (e.bare) return true;
  std::string v = absl::AsciiStrToLower(e.value);
  if (v == "true" || v == "yes" || v == "on") return true;
  return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos &&
         v.find_first_not_of('0') != std::string::npos;
}

absl::Status Errno(const char* what, const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

absl::Status WriteFile(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("cannot create", path);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Errno("cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  return close(fd) == 0 ? absl::OkStatus() : Errno("cannot write", path);
}

// The sanitized copy of the config file `from` at `to`; nothing when there
// is no such file.
absl::Status CopyConfig(const std::string& from, const std::string& to, bool* bare) {
  absl::StatusOr<std::optional<std::string>> text = ReadBounded(from, kMaxConfigBytes);
  if (!text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read ", from, ": ", text.status().message()));
  }
  if (!text->has_value()) return absl::OkStatus();
  absl::StatusOr<std::string> harmless = HarmlessGitConfig(**text, bare);
  if (!harmless.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot parse ", from, ": ", harmless.status().message()));
  }
  return WriteFile(to, *harmless);
}

// Mirrors the git directory `from` into the new directory `to`: config files
// sanitized, small regular files copied, the rest linked, hooks left out.
// `commondir`, when not empty, replaces the commondir file's text.
absl::Status Mirror(const std::string& from, const std::string& to, const std::string& commondir,
                    bool* bare) {
  if (mkdir(to.c_str(), 0700) != 0) return Errno("cannot create", to);
  DIR* d = opendir(from.c_str());
  if (d == nullptr) return Errno("cannot list", from);
  absl::Status status;
  size_t seen = 0;
  while (status.ok()) {
    errno = 0;
    struct dirent* e = readdir(d);
    if (e == nullptr) {
      if (errno != 0) status = Errno("cannot list", from);
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > kMaxEntries) {
      status = absl::ResourceExhaustedError(
          absl::StrCat(from, " has more than ", kMaxEntries, " entries"));
      break;
    }
    const std::string src = absl::StrCat(from, "/", name);
    const std::string dst = absl::StrCat(to, "/", name);
    if (name == "hooks") continue;
    if (name == "config" || name == "config.worktree") {
      status = CopyConfig(src, dst, name == "config" ? bare : nullptr);
      continue;
    }
    if (name == "commondir") {
      // Only the stand-in's own: git said where the common directory is,
      // and a file it ignored could read otherwise here.
      if (!commondir.empty()) status = WriteFile(dst, absl::StrCat(commondir, "\n"));
      continue;
    }
    struct stat st;
    if (lstat(src.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // gone meanwhile (a lock file)
      status = Errno("cannot stat", src);
      break;
    }
    if (S_ISLNK(st.st_mode) && name == "HEAD") {
      // An old-style symbolic HEAD: git accepts it only as a link into refs/.
      char target[4096];
      ssize_t n = readlink(src.c_str(), target, sizeof(target) - 1);
      if (n < 0) {
        status = Errno("cannot read", src);
        break;
      }
      if (symlink(std::string(target, static_cast<size_t>(n)).c_str(), dst.c_str()) != 0) {
        status = Errno("cannot link", dst);
      }
      continue;
    }
    if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) <= kMaxCopiedFileBytes) {
      absl::StatusOr<std::optional<std::string>> bytes = ReadBounded(src, kMaxCopiedFileBytes);
      if (!bytes.ok() || !bytes->has_value()) continue;  // replaced or gone meanwhile
      status = WriteFile(dst, **bytes);
      continue;
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)) {
      if (symlink(src.c_str(), dst.c_str()) != 0) status = Errno("cannot link", dst);
    }
  }
  closedir(d);
  return status;
}

}  // namespace

absl::StatusOr<std::string> HarmlessGitConfig(std::string_view text, bool* bare) {
  absl::StatusOr<std::vector<GitConfigEntry>> entries = ParseGitConfig(text);
  if (!entries.ok()) return entries.status();
  std::string out = "# termbridge: the repository's config reduced to data (docs/security.md)\n";
  std::optional<std::string> header;
  for (const GitConfigEntry& e : *entries) {
    if (e.section.empty() ||
        !IsHarmlessGitConfigKey(e.section, e.has_subsection, e.subsection, e.key)) {
      continue;
    }
    if (bare != nullptr && e.section == "core" && !e.has_subsection && e.key == "bare") {
      *bare = GitTrue(e);
    }
    std::string h = e.has_subsection ? absl::StrCat("[", e.section, " ", Quoted(e.subsection), "]")
                                     : absl::StrCat("[", e.section, "]");
    if (header != h) {
      absl::StrAppend(&out, h, "\n");
      header = h;
    }
    if (e.bare) {
      absl::StrAppend(&out, "\t", e.key, "\n");
    } else {
      absl::StrAppend(&out, "\t", e.key, " = ", Quoted(e.value), "\n");
    }
  }
  return out;
}

absl::StatusOr<GitSnapshot> BuildGitSnapshot(const GitLocation& repo, const std::string& dir) {
  GitSnapshot snap;
  snap.git_dir = absl::StrCat(dir, "/git");
  if (repo.common_dir == repo.git_dir) {
    if (absl::Status s = Mirror(repo.git_dir, snap.git_dir, "", &snap.bare); !s.ok()) return s;
    return snap;
  }
  // A linked worktree: its own directory, whose commondir names the mirror
  // of the shared one.
  if (absl::Status s = Mirror(repo.common_dir, absl::StrCat(dir, "/common"), "", &snap.bare);
      !s.ok()) {
    return s;
  }
  bool unused = false;
  if (absl::Status s = Mirror(repo.git_dir, snap.git_dir, "../common", &unused); !s.ok()) return s;
  return snap;
}

}  // namespace termbridge::workdir
