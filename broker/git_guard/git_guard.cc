#include "broker/git_guard/git_guard.h"

#include <fcntl.h>
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
      "status",       "log",        "diff",        "show",         "shortlog",
      "blame",        "annotate",   "grep",        "ls-files",     "ls-tree",
      "cat-file",     "describe",   "whatchanged", "rev-list",     "show-ref",
      "for-each-ref", "merge-base", "name-rev",    "count-objects"};
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
  // A cluster of listing letters: -av, -rv, -vv.
  if (a.size() > 1 && a[0] == '-' && a[1] != '-' &&
      a.find_first_not_of("arvliq", 1) == std::string_view::npos) {
    return true;
  }
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

// git status and diff run git inside each populated submodule, and that git
// (from git's exec path, not the guard) reads the submodule's own config:
// the guarded run ignores submodules, one more GIT_CONFIG_COUNT entry
// (their options are refused in Main).
void IgnoreSubmodules() {
  int count = 0;
  const char* given = getenv("GIT_CONFIG_COUNT");
  if (given != nullptr) count = atoi(given);
  if (count < 0) count = 0;
  setenv(absl::StrCat("GIT_CONFIG_KEY_", count).c_str(), "diff.ignoreSubmodules", 1);
  setenv(absl::StrCat("GIT_CONFIG_VALUE_", count).c_str(), "all", 1);
  setenv("GIT_CONFIG_COUNT", std::to_string(count + 1).c_str(), 1);
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
    IgnoreSubmodules();
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

// The output of `git ARGS...` run with stdin and stderr closed (64 KiB at
// most), or an error; `*code` is its exit code.
absl::StatusOr<std::string> Capture(const std::string& real, const std::vector<std::string>& args,
                                    int* code) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError(strerror(errno));
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 2);
    std::vector<std::string> argv = args;
    argv.insert(argv.begin(), "git");
    std::vector<char*> c = CArgv(argv);
    execv(real.c_str(), c.data());
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return absl::InternalError(absl::StrCat("cannot fork: ", strerror(errno)));
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < (size_t{64} << 10)) out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The repository as git itself finds it from `cwd` (rev-parse, which runs
// no configured program): a stand-in built from any other reading of .git,
// HEAD or commondir could disagree with git's and leave git a file that
// names another config. nullopt: no repository.
absl::StatusOr<std::optional<workdir::GitLocation>> GitsOwnDiscovery(const std::string& real,
                                                                     const std::string& cwd) {
  int code = 0;
  absl::StatusOr<std::string> out = Capture(
      real, {"rev-parse", "--absolute-git-dir", "--git-common-dir", "--is-inside-work-tree"},
      &code);
  if (!out.ok()) return out.status();
  if (code == 128) return std::nullopt;
  std::vector<std::string> lines = Lines(*out);
  if (code != 0 || lines.size() != 3) {
    return absl::FailedPreconditionError("git rev-parse could not say where the repository is");
  }
  workdir::GitLocation loc;
  loc.git_dir = workdir::RealPath(lines[0]).value_or("");
  loc.common_dir = workdir::RealPath(workdir::ResolveFrom(lines[1], cwd)).value_or("");
  if (loc.git_dir.empty() || loc.common_dir.empty()) {
    return absl::FailedPreconditionError("the repository's directories cannot be resolved");
  }
  if (lines[2] == "true") {
    absl::StatusOr<std::string> top = Capture(real, {"rev-parse", "--show-toplevel"}, &code);
    if (!top.ok()) return top.status();
    std::vector<std::string> top_lines = Lines(*top);
    if (code != 0 || top_lines.size() != 1) {
      return absl::FailedPreconditionError("git rev-parse could not say where the work tree is");
    }
    loc.worktree = workdir::RealPath(top_lines[0]).value_or("");
    // The work tree git found holds cwd (core.worktree pointing elsewhere
    // would make git read another tree).
    const std::string real_cwd = workdir::RealPath(cwd).value_or(cwd);
    if (loc.worktree.empty() ||
        (real_cwd != loc.worktree &&
         real_cwd.compare(0, loc.worktree.size() + 1, loc.worktree + "/") != 0 &&
         loc.worktree != "/")) {
      return absl::FailedPreconditionError("the work tree git names does not hold this directory");
    }
  }
  return loc;
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
    // A relative entry (., node_modules/.bin) names the agent's workspace.
    if (dir.empty() || dir[0] != '/' || dir == guard_dir) continue;
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
  for (size_t k = 1; k < args.size(); ++k) {
    for (std::string_view option : {"--ignore-submodules", "--submodule", "--recurse-submodules"}) {
      if (args[k].compare(0, option.size(), option) == 0) {
        return Fail(absl::StrCat(args[k],
                                 ": git would run git inside each submodule, with the "
                                 "submodule's own configuration"));
      }
    }
  }
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    return Fail(absl::StrCat("cannot read the current directory: ", strerror(errno)));
  }
  absl::StatusOr<std::optional<workdir::GitLocation>> repo = GitsOwnDiscovery(*real, cwd);
  if (!repo.ok()) return Fail(std::string(repo.status().message()));
  // git would find no repository now; run it all the same and one planted
  // a moment later would be read as it is.
  if (!repo->has_value()) return Fail("not a git repository (or any of the parent directories)");
  // The broker judged the line's reads by its own reading of .git
  // (common/workdir); git must have found the same repository, or what it
  // reads was not judged (a commondir git follows out of the workspace).
  absl::StatusOr<std::optional<workdir::GitLocation>> judged = workdir::FindGitRepository(cwd);
  if (!judged.ok() || !judged->has_value() || (*judged)->git_dir != (*repo)->git_dir ||
      (*judged)->common_dir != (*repo)->common_dir || (*judged)->worktree != (*repo)->worktree) {
    return Fail(absl::StrCat(
        "git finds the repository at ", (*repo)->common_dir,
        ", where termbridge's reading of .git finds ",
        judged.ok() && judged->has_value() ? (*judged)->common_dir : std::string("none"),
        ": what git would read was not what the line was judged by"));
  }
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
