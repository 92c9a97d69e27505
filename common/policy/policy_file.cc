// The policy file on the host. Current() stats the file on every call and
// reloads it when its mtime, size or inode changed; a file that does not
// load leaves the previous policy in force and says why in last_error().
// AppendRules writes "always" approvals atomically: the new text goes to
// <path>.tmp.<pid>, is fsynced and renamed over the file, and the directory
// is fsynced, so a crash leaves either the old file or the new one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/policy/policy.h"
#include "common/policy/text.h"

namespace termbridge::policy {
namespace {

using internal::Append;
using internal::Cat;

constexpr char kNewFileHeader[] =
    "# termbridge command policy: rules are checked deny, ask, allow against\n"
    "# every simple command of a line. Approvals marked \"always\" are appended.\n"
    "version = 1\n";

absl::Status Errno(std::string_view what, const std::string& path) {
  int e = errno;
  std::string message = Cat(what, " ", path, ": ", std::strerror(e));
  if (e == ENOENT) return absl::NotFoundError(message);
  if (e == EACCES || e == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// One byte more than Policy::FromToml accepts (4 MiB, policy_toml.cc), so
// that it names the limit; a policy path naming /dev/zero or a growing log
// ends here instead of filling memory.
constexpr size_t kMaxReadBytes = (4 << 20) + 1;

absl::Status ReadAll(int fd, const std::string& path, std::string* out) {
  char buf[65536];
  while (out->size() < kMaxReadBytes) {
    ssize_t n = read(fd, buf, std::min(sizeof(buf), kMaxReadBytes - out->size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read", path);
    if (n == 0) return absl::OkStatus();
    out->append(buf, static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, const std::string& path, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot write", path);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// The file that renaming must replace: the target of a symlink, if any.
std::string ResolvedPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

std::string DirName(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::Status FsyncDir(const std::string& dir) {
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return Errno("cannot open directory", dir);
  if (fsync(fd.get()) != 0) return Errno("cannot fsync directory", dir);
  return absl::OkStatus();
}

absl::Status WriteAtomically(const std::string& path, std::string_view text, mode_t mode) {
  std::string tmp = Cat(path, ".tmp.", getpid());
  Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (fd.get() < 0) return Errno("cannot create", tmp);
  absl::Status st = WriteAll(fd.get(), tmp, text);
  if (st.ok() && fsync(fd.get()) != 0) st = Errno("cannot fsync", tmp);
  if (st.ok() && close(fd.Release()) != 0) st = Errno("cannot close", tmp);
  if (st.ok() && rename(tmp.c_str(), path.c_str()) != 0) st = Errno("cannot rename onto", path);
  if (!st.ok()) {
    unlink(tmp.c_str());
    return st;
  }
  return FsyncDir(DirName(path));
}

}  // namespace

PolicyFile::PolicyFile(std::string path) : path_(std::move(path)) {}

absl::Status PolicyFile::Load() {
  std::lock_guard<std::mutex> lock(mu_);
  stamp_ = Stamp{};
  stamp_.size = -2;  // differs from every real stamp, so the file is read
  ReloadIfChangedLocked();
  if (!last_error_.empty()) return absl::InvalidArgumentError(last_error_);
  return absl::OkStatus();
}

std::shared_ptr<const Policy> PolicyFile::Current() { return Current(nullptr); }

std::shared_ptr<const Policy> PolicyFile::Current(std::string* why_default) {
  std::lock_guard<std::mutex> lock(mu_);
  ReloadIfChangedLocked();
  if (current_ == nullptr) current_ = Protect(Policy::Default());
  if (why_default != nullptr) {
    if (from_file_) {
      why_default->clear();
    } else if (path_.empty()) {
      *why_default = "no policy file is set";
    } else if (!last_error_.empty()) {
      *why_default = last_error_;
    } else {
      *why_default = Cat(path_, " does not exist");
    }
  }
  return current_;
}

void PolicyFile::SetProtectedPaths(std::vector<std::string> paths) {
  std::lock_guard<std::mutex> lock(mu_);
  protected_paths_ = std::move(paths);
  if (current_ != nullptr) current_ = Protect(*current_);
}

std::shared_ptr<const Policy> PolicyFile::Protect(Policy policy) const {
  policy.SetProtectedPaths(protected_paths_);
  return std::make_shared<const Policy>(std::move(policy));
}

void PolicyFile::ReloadIfChangedLocked() {
  if (path_.empty()) {
    if (current_ == nullptr) {
      current_ = Protect(Policy::Default());
      ++generation_;
    }
    return;
  }
  struct stat sb;
  Stamp now;  // a missing file keeps the default (missing) stamp
  if (stat(path_.c_str(), &sb) == 0) {
    now = {static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec,
           static_cast<int64_t>(sb.st_size), static_cast<uint64_t>(sb.st_ino)};
  } else if (errno != ENOENT) {
    last_error_ = std::string(Errno("cannot stat", path_).message());
    return;
  }
  if (now == stamp_) return;
  if (now.size < 0) {  // the file is gone: the default policy applies
    stamp_ = now;
    current_ = Protect(Policy::Default());
    from_file_ = false;
    ++generation_;
    last_error_.clear();
    return;
  }
  Fd fd(open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  std::string text;
  absl::Status st = fd.get() < 0 ? Errno("cannot open", path_) : ReadAll(fd.get(), path_, &text);
  if (st.ok() && fstat(fd.get(), &sb) == 0) {
    now = {static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec,
           static_cast<int64_t>(sb.st_size), static_cast<uint64_t>(sb.st_ino)};
  }
  stamp_ = now;
  if (!st.ok()) {
    last_error_ = std::string(st.message());
    return;
  }
  absl::StatusOr<Policy> parsed = Policy::FromToml(text, path_);
  if (!parsed.ok()) {
    last_error_ = std::string(parsed.status().message());
    return;
  }
  current_ = Protect(*std::move(parsed));
  from_file_ = true;
  ++generation_;
  last_error_.clear();
}

absl::Status PolicyFile::AppendRules(const std::vector<Rule>& rules) {
  std::lock_guard<std::mutex> lock(mu_);
  if (path_.empty()) return absl::FailedPreconditionError("there is no policy file to append to");
  if (rules.empty()) return absl::OkStatus();
  std::string target = ResolvedPath(path_);
  std::string text;
  mode_t mode = 0644;
  Fd fd(open(target.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() >= 0) {
    struct stat sb;
    if (fstat(fd.get(), &sb) == 0) mode = sb.st_mode & 07777;
    if (absl::Status st = ReadAll(fd.get(), target, &text); !st.ok()) return st;
  } else if (errno == ENOENT) {
    text = kNewFileHeader;
  } else {
    return Errno("cannot open", target);
  }
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  for (const Rule& r : rules) Append(&text, "\n", RuleToToml(r));
  absl::StatusOr<Policy> check = Policy::FromToml(text, path_);
  if (!check.ok()) {
    return absl::FailedPreconditionError(
        Cat("the policy file would not load with the new rules, so it was left alone: ",
            check.status().message()));
  }
  if (absl::Status st = WriteAtomically(target, text, mode); !st.ok()) return st;
  stamp_.size = -2;  // force the reload
  ReloadIfChangedLocked();
  if (!last_error_.empty()) return absl::InternalError(last_error_);
  return absl::OkStatus();
}

uint64_t PolicyFile::generation() {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

std::string PolicyFile::last_error() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace termbridge::policy
