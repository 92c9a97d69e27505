#include "broker/git_guard/git_guard.h"

#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/workdir/git_discovery.h"
#include "common/workdir/git_snapshot.h"
#include "common/workdir/workdir_config.h"

namespace termbridge::git_guard {
namespace {

// Subcommands that read the repository and write nothing in the git
// directory but what a snapshot may take (an index refresh).
bool ReadOnlySubcommand(std::string_view sub) {
  static constexpr std::string_view kReadOnly[] = {
      "status",      "log",        "diff",     "show",         "shortlog",  "blame",
      "annotate",    "grep",       "ls-files", "ls-tree",      "cat-file",  "describe",
      "whatchanged", "rev-list",   "show-ref", "for-each-ref", "diff-tree", "diff-files",
      "diff-index",  "merge-base", "name-rev", "count-objects"};
  return std::find(std::begin(kReadOnly), std::end(kReadOnly), sub) != std::end(kReadOnly);
}

// Global flags that change neither where git finds the repository nor its
// configuration.
bool HarmlessGlobalFlag(std::string_view a) {
  static constexpr std::string_view kFlags[] = {"--no-pager",          "-P",
                                                "--no-optional-locks", "--no-replace-objects",
                                                "--literal-pathspecs", "--glob-pathspecs",
                                                "--noglob-pathspecs",  "--icase-pathspecs",
                                                "--no-advice"};
  return std::find(std::begin(kFlags), std::end(kFlags), a) != std::end(kFlags);
}

// `git branch` options that list (or print the current branch) and take no
// value in the next word; with any other word it may create, move or delete.
bool BranchListingFlag(std::string_view a) {
  static constexpr std::string_view kFlags[] = {
      "-a",         "--all",     "-r",     "--remotes",     "-v",
      "-vv",        "--verbose", "-l",     "--list",        "--show-current",
      "--no-color", "--color",   "-i",     "--ignore-case", "--no-column",
      "--column",   "-q",        "--quiet"};
  if (std::find(std::begin(kFlags), std::end(kFlags), a) != std::end(kFlags)) return true;
  for (std::string_view prefix : {"--color=", "--sort=", "--format=", "--column="}) {
    if (a.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

int RemoveEntry(const char* path, const struct stat*, int type, struct FTW*) {
  if (type == FTW_DP) {
    rmdir(path);
  } else {
    unlink(path);
  }
  return 0;
}

// Removes the snapshot without following its links into the repository.
void RemoveTree(const std::string& dir) {
  nftw(dir.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

int Fail(const std::string& why) {
  fprintf(stderr, "termbridge: git was not run: %s\n", why.c_str());
  return 128;
}

std::vector<char*> CArgv(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

int ExecReal(const std::string& real, std::vector<std::string>& args) {
  std::vector<char*> argv = CArgv(args);
  execv(real.c_str(), argv.data());
  return Fail(absl::StrCat("cannot run ", real, ": ", strerror(errno)));
}

// Runs git on `snap` and returns its wait status, ignoring the terminal's
// SIGINT and SIGQUIT meanwhile as git handles them (as system(3) does);
// -1 when it could not start.
int RunOnSnapshot(const std::string& real, std::vector<std::string>& args,
                  const workdir::GitSnapshot& snap, const std::string& worktree) {
  struct sigaction ignore = {}, old_int = {}, old_quit = {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    setenv("GIT_DIR", snap.git_dir.c_str(), 1);
    if (!worktree.empty()) setenv("GIT_WORK_TREE", worktree.c_str(), 1);
    std::vector<char*> argv = CArgv(args);
    execv(real.c_str(), argv.data());
    fprintf(stderr, "termbridge: cannot run %s: %s\n", real.c_str(), strerror(errno));
    _exit(127);
  }
  int status = -1;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  return status;
}

// The guard's exit for git's wait status: the same code, or the same signal.
int ExitLike(int status) {
  if (status == -1) return Fail(absl::StrCat("cannot fork: ", strerror(errno)));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace

bool RunsOnSnapshot(const std::vector<std::string>& argv) {
  size_t i = 1;
  while (i < argv.size() && HarmlessGlobalFlag(argv[i])) ++i;
  if (i >= argv.size() || !ReadOnlySubcommand(argv[i])) {
    if (i >= argv.size() || argv[i] != "branch") return false;
    for (size_t k = i + 1; k < argv.size(); ++k) {
      if (!BranchListingFlag(argv[k])) return false;
    }
    return true;
  }
  return true;
}

std::optional<std::string> FindRealGit(std::string_view path, std::string_view guard_dir,
                                       const std::string& self) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string dir(path.substr(start, end - start));
    start = end + 1;
    if (dir.empty() || dir == guard_dir) continue;
    std::string candidate = dir + "/git";
    if (access(candidate.c_str(), X_OK) != 0) continue;
    std::optional<std::string> real = workdir::RealPath(candidate);
    if (!real.has_value() || *real == self) continue;
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    return candidate;
  }
  return std::nullopt;
}

absl::StatusOr<std::string> PrepareGuardDir(const std::string& state_dir,
                                            const std::string& broker_exe) {
  const size_t slash = broker_exe.rfind('/');
  if (slash == std::string::npos) {
    return absl::FailedPreconditionError(absl::StrCat("no directory in ", broker_exe));
  }
  const std::string program = absl::StrCat(broker_exe.substr(0, slash), "/termbridge-git");
  if (access(program.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run ", program, ": ", strerror(errno)));
  }
  const std::string dir = absl::StrCat(state_dir, "/git-guard");
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create ", dir, ": ", strerror(errno)));
  }
  const std::string link = dir + "/git";
  const std::string fresh = absl::StrCat(link, ".", getpid());
  unlink(fresh.c_str());
  if (symlink(program.c_str(), fresh.c_str()) != 0 || rename(fresh.c_str(), link.c_str()) != 0) {
    const int saved = errno;
    unlink(fresh.c_str());
    return absl::FailedPreconditionError(absl::StrCat("cannot link ", link, ": ", strerror(saved)));
  }
  return dir;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  if (args.empty()) args.push_back("git");
  const char* guard_env = getenv(kGuardDirEnv);
  const std::string guard_dir = guard_env != nullptr ? guard_env : "";
  const std::string self = workdir::RealPath("/proc/self/exe").value_or("");
  const char* path_env = getenv("PATH");
  std::optional<std::string> real =
      FindRealGit(path_env != nullptr ? path_env : "/usr/bin:/bin", guard_dir, self);
  if (!real.has_value()) return Fail("no git in PATH");
  // A person who set GIT_DIR, GIT_WORK_TREE or GIT_COMMON_DIR chose the
  // repository (the policy asks for those variables).
  if (!RunsOnSnapshot(args) || getenv("GIT_DIR") != nullptr || getenv("GIT_WORK_TREE") != nullptr ||
      getenv("GIT_COMMON_DIR") != nullptr) {
    return ExecReal(*real, args);
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return Fail(absl::StrCat("cannot read the current directory: ", strerror(errno)));
  }
  absl::StatusOr<std::optional<workdir::GitLocation>> repo = workdir::FindGitRepository(cwd);
  if (!repo.ok()) return Fail(std::string(repo.status().message()));
  if (!repo->has_value()) return ExecReal(*real, args);  // no repository, no config to read
  const char* tmp = getenv("TMPDIR");
  std::string root = !guard_dir.empty() ? guard_dir : (tmp != nullptr && *tmp ? tmp : "/tmp");
  std::string templ = absl::StrCat(root, "/snapshot.XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return Fail(absl::StrCat("cannot create a directory in ", root, ": ", strerror(errno)));
  }
  const std::string dir = templ;
  absl::StatusOr<workdir::GitSnapshot> snap = workdir::BuildGitSnapshot(**repo, dir);
  if (!snap.ok()) {
    RemoveTree(dir);
    return Fail(std::string(snap.status().message()));
  }
  if ((*repo)->worktree.empty() && !snap->bare) {
    RemoveTree(dir);
    return Fail("run git from the work tree, not inside the git directory");
  }
  const int status = RunOnSnapshot(*real, args, *snap, (*repo)->worktree);
  const int saved_errno = errno;
  RemoveTree(dir);
  errno = saved_errno;
  return ExitLike(status);
}

}  // namespace termbridge::git_guard
