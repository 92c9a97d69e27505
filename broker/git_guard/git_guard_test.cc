// termbridge-git against real repositories: the programs a repository's
// config names (diff.external, core.fsmonitor, a textconv driver bound by
// .gitattributes) never run through the guard, and do run through the real
// git (so the test can fail); output, exit codes and linked worktrees are
// git's own; commands that write run as they are.
#include "broker/git_guard/git_guard.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace termbridge::git_guard {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

TEST(GitGuardTest, ReadOnlyCommandsRunOnASnapshotAndTheRestAsTheyAre) {
  for (const Args& a :
       {Args{"git", "status"}, Args{"git", "diff", "--stat"},
        Args{"git", "--no-pager", "log", "-1"}, Args{"git", "show", "HEAD"}, Args{"git", "branch"},
        Args{"git", "branch", "-a", "-vv"}, Args{"git", "branch", "--show-current"}}) {
    EXPECT_TRUE(RunsOnSnapshot(a)) << a[1];
  }
  for (const Args& a :
       {Args{"git"}, Args{"git", "commit", "-m", "x"}, Args{"git", "-C", "d", "log"},
        Args{"git", "-c", "a.b=c", "log"}, Args{"git", "--git-dir=x", "log"},
        Args{"git", "branch", "new"}, Args{"git", "branch", "-D", "old"},
        Args{"git", "rev-parse", "--git-dir"}, Args{"git", "checkout", "x"}}) {
    EXPECT_FALSE(RunsOnSnapshot(a)) << a.back();
  }
}

TEST(GitGuardTest, TheRealGitIsTheFirstThatIsNotTheGuard) {
  const fs::path dir = fs::temp_directory_path() / absl::StrCat("tb-guard-path-", getpid());
  fs::create_directories(dir / "guard");
  fs::create_directories(dir / "bin");
  std::ofstream(dir / "bin/git") << "#!/bin/sh\n";
  fs::permissions(dir / "bin/git", fs::perms::owner_all);
  std::ofstream(dir / "guard/git") << "#!/bin/sh\n";
  fs::permissions(dir / "guard/git", fs::perms::owner_all);
  const std::string path = absl::StrCat((dir / "guard").string(), ":", (dir / "bin").string());
  EXPECT_EQ(FindRealGit(path, (dir / "guard").string(), "/nonexistent"),
            (dir / "bin/git").string());
  EXPECT_EQ(FindRealGit(path, "", fs::canonical(dir / "guard/git").string()),
            (dir / "bin/git").string());
  EXPECT_EQ(FindRealGit((dir / "guard").string(), (dir / "guard").string(), ""), std::nullopt);
  fs::remove_all(dir);
}

class GuardRun : public ::testing::Test {
 protected:
  void SetUp() override {
    guard_ = getenv("TB_GIT_GUARD_BIN") != nullptr ? getenv("TB_GIT_GUARD_BIN") : "";
    if (guard_.empty() || system("git --version >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << "needs git and TB_GIT_GUARD_BIN";
    }
    std::string t = (fs::temp_directory_path() / "tb-guard-XXXXXX").string();
    root_ = mkdtemp(t.data());
    repo_ = root_ / "repo";
    canary_ = root_ / "canary";
    fs::create_directories(repo_);
    Sh("git init -q && echo one > f.txt && git add f.txt && git commit -q -m first && "
       "echo two >> f.txt");
    std::ofstream(repo_ / "evil.sh") << "#!/bin/sh\ntouch '" << canary_.string() << "'\nexit 0\n";
    fs::permissions(repo_ / "evil.sh", fs::perms::owner_all);
  }
  void TearDown() override {
    if (!root_.empty()) fs::remove_all(root_);
  }

  // Runs `cmd` in `dir` (default: the repository) with no user or system
  // config; returns its exit status and fills *out.
  int Sh(const std::string& cmd, std::string* out = nullptr, const fs::path& dir = {}) {
    const std::string file = (root_ / "out.txt").string();
    std::string line = absl::StrCat(
        "cd '", (dir.empty() ? repo_ : dir).string(),
        "' && GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat ",
        "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e ",
        "sh -c '", cmd, "' > '", file, "' 2>&1");
    int status = system(line.c_str());
    if (out != nullptr) {
      std::ifstream in(file);
      std::stringstream s;
      s << in.rdbuf();
      *out = s.str();
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string Guard() const { return guard_; }
  bool Ran() const { return fs::exists(canary_); }

  std::string guard_;
  fs::path root_, repo_, canary_;
};

TEST_F(GuardRun, ProgramsTheRepositoryNamesNeverRunThroughTheGuard) {
  Sh("git config diff.external ./evil.sh && git config core.fsmonitor ./evil.sh && "
     "git config diff.t.textconv ./evil.sh && echo \"f.txt diff=t\" > .gitattributes");
  std::string out;
  EXPECT_EQ(Sh(Guard() + " diff", &out), 0);
  EXPECT_TRUE(absl::StrContains(out, "+two")) << out;
  EXPECT_EQ(Sh(Guard() + " status --short", &out), 0);
  EXPECT_TRUE(absl::StrContains(out, "M f.txt")) << out;
  EXPECT_EQ(Sh(Guard() + " log -p -1", &out), 0);
  EXPECT_TRUE(absl::StrContains(out, "first")) << out;
  EXPECT_FALSE(Ran());
  // The same through the real git runs the planted program.
  Sh("git diff");
  EXPECT_TRUE(Ran());
}

TEST_F(GuardRun, ExitCodesSignalsAndWritesAreGits) {
  EXPECT_EQ(Sh(Guard() + " diff --quiet"), 1);
  EXPECT_EQ(Sh(Guard() + " show no-such-rev"), 128);
  // Not a read-only command: it runs as it is and its commit lands.
  EXPECT_EQ(Sh(Guard() + " commit -q -a -m second"), 0);
  std::string out;
  EXPECT_EQ(Sh("git log --oneline", &out), 0);
  EXPECT_TRUE(absl::StrContains(out, "second")) << out;
  // Nothing is left behind in the guard's directory.
  fs::create_directories(root_ / "guard");
  EXPECT_EQ(
      Sh(absl::StrCat(kGuardDirEnv, "=", (root_ / "guard").string(), " ", Guard(), " status")), 0);
  EXPECT_TRUE(fs::is_empty(root_ / "guard"));
  // A read-only command from a subdirectory and from a linked worktree.
  fs::create_directories(repo_ / "sub");
  EXPECT_EQ(Sh(Guard() + " status --short .", &out, repo_ / "sub"), 0);
  EXPECT_EQ(Sh("git worktree add -q ../wt && git config diff.external ./evil.sh"), 0);
  std::ofstream(root_ / "wt/f.txt", std::ios::app) << "three\n";
  EXPECT_EQ(Sh(Guard() + " diff", &out, root_ / "wt"), 0);
  EXPECT_TRUE(absl::StrContains(out, "+three")) << out;
  EXPECT_FALSE(Ran());
}

// Where the guard's reading of .git and git's own would differ, git's wins:
// a HEAD padded past any small-file cap, a commondir naming another config.
TEST_F(GuardRun, GitsOwnDiscoveryDecides) {
  Sh("git config diff.external ./evil.sh");
  {
    std::ofstream head(repo_ / ".git/HEAD", std::ios::app);
    head << std::string(70000, '\n');
  }
  std::string out;
  Sh(Guard() + " diff", &out);
  EXPECT_FALSE(Ran()) << out;
  Sh("git diff");
  EXPECT_TRUE(Ran()) << "the real git did not run the planted program: the test proves nothing";
  fs::remove(canary_);
  Sh("printf \"ref: refs/heads/master\\n\" > .git/HEAD; git config --unset diff.external");
  // A commondir git ignores (it names no repository) must not be followed
  // in the stand-in either.
  fs::create_directories(repo_ / ".git/ec");
  fs::create_symlink("../objects", repo_ / ".git/ec/objects");
  fs::create_symlink("../refs", repo_ / ".git/ec/refs");
  std::ofstream(repo_ / ".git/ec/config")
      << "[diff]\n\texternal = " << (repo_ / "evil.sh").string() << "\n";
  std::ofstream(repo_ / ".git/commondir") << (repo_ / ".git/ec").string() << " \n";
  Sh(Guard() + " diff", &out);
  EXPECT_FALSE(Ran()) << out;
  // One git follows out of the workspace (a padded commondir, past the
  // check's cap): git and the check disagree, and git does not run.
  std::ofstream(repo_ / ".git/commondir")
      << (repo_ / ".git/ec").string() << std::string(70000, '\n');
  EXPECT_EQ(Sh(Guard() + " log -1", &out), 128) << out;
  EXPECT_TRUE(absl::StrContains(out, "was not what the line was judged by")) << out;
  EXPECT_FALSE(Ran()) << out;
}

// git status runs git inside each populated submodule, with the
// submodule's own config: the guarded run ignores submodules and refuses the
// options that would bring them back.
TEST_F(GuardRun, SubmodulesAreIgnored) {
  const fs::path sub = root_ / "subsrc";
  fs::create_directories(sub);
  Sh("git init -q && echo s > s.txt && git add s.txt && git commit -q -m s", nullptr, sub);
  ASSERT_EQ(Sh("git -c protocol.file.allow=always submodule add -q " + sub.string() +
               " sub && git commit -q -m sub"),
            0);
  Sh("git -C sub config filter.x.clean ../evil.sh && echo \"* filter=x\" > "
     ".git/modules/sub/info/attributes && touch -d @$(( $(date +%s) + 5 )) sub/s.txt");
  std::string out;
  EXPECT_EQ(Sh(Guard() + " status --short", &out), 0) << out;
  EXPECT_FALSE(Ran()) << out;
  EXPECT_EQ(Sh(Guard() + " status --ignore-submodules=none", &out), 128) << out;
  EXPECT_FALSE(Ran()) << out;
  Sh("git status");
  EXPECT_TRUE(Ran()) << "the real git did not run the planted filter: the test proves nothing";
}

}  // namespace
}  // namespace termbridge::git_guard
