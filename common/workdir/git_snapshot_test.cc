// The stand-in git directory: its config keeps data and drops every key
// that names a program, a file or an include; small files are copies, the
// rest links; hooks are left out; a linked worktree's shared directory is
// mirrored too. Checked against repositories git itself made.
#include "common/workdir/git_snapshot.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/workdir/git_config_syntax.h"
#include "gtest/gtest.h"

namespace termbridge::workdir {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool Git(const fs::path& dir, const std::string& args) {
  std::string cmd =
      absl::StrCat("cd '", dir.string(), "' && GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null ",
                   "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main ",
                   args, " >/dev/null 2>&1");
  return system(cmd.c_str()) == 0;
}

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "tb-snap-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(GitSnapshotTest, TheConfigKeepsDataAndDropsEveryProgram) {
  bool bare = false;
  absl::StatusOr<std::string> out = HarmlessGitConfig(
      "[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tfsmonitor = ./evil\n"
      "\tpager = evil\n[diff]\n\texternal = ./evil\n[diff \"x\"]\n\ttextconv = ./evil\n"
      "[filter \"f\"]\n\tclean = ./evil\n[include]\n\tpath = ../evil.cfg\n"
      "[includeIf \"gitdir:/\"]\n\tpath = evil.cfg\n[alias]\n\tst = !evil\n"
      "[remote \"origin\"]\n\turl = \"https://h/a \\\"b\\\"\\\\c\"\n"
      "[user]\n\temail = a@b\n[core]\n\tsymlinks\n",
      &bare);
  ASSERT_TRUE(out.ok()) << out.status();
  for (const char* gone :
       {"fsmonitor", "pager", "external", "textconv", "clean", "path", "alias", "evil"}) {
    EXPECT_FALSE(absl::StrContains(*out, gone)) << gone << " in:\n" << *out;
  }
  EXPECT_TRUE(bare);
  absl::StatusOr<std::vector<GitConfigEntry>> again = ParseGitConfig(*out);
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << *out;
  std::vector<std::string> names;
  for (const GitConfigEntry& e : *again) names.push_back(absl::StrCat(e.Name(), "=", e.value));
  EXPECT_EQ(names, (std::vector<std::string>{"core.repositoryformatversion=0", "core.bare=true",
                                             "remote.origin.url=https://h/a \"b\"\\c",
                                             "user.email=a@b", "core.symlinks="}));
  EXPECT_TRUE(again->back().bare);
  EXPECT_FALSE(HarmlessGitConfig("[core\n").ok());
}

TEST(GitSnapshotTest, AStandInForARepositoryGitMade) {
  if (system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no git";
  TempDir t;
  const fs::path repo = t.path() / "repo";
  fs::create_directories(repo);
  ASSERT_TRUE(Git(repo, "init -q"));
  ASSERT_TRUE(Git(repo, "config core.fsmonitor ./evil"));
  ASSERT_TRUE(Git(repo, "config diff.external ./evil"));
  fs::create_directories(repo / ".git/hooks");
  std::ofstream(repo / ".git/hooks/post-index-change") << "#!/bin/sh\n";
  absl::StatusOr<std::optional<GitLocation>> loc = FindGitRepository(repo.string());
  ASSERT_TRUE(loc.ok() && loc->has_value()) << loc.status();
  const fs::path snap_dir = t.path() / "snap";
  fs::create_directories(snap_dir);
  absl::StatusOr<GitSnapshot> snap = BuildGitSnapshot(**loc, snap_dir.string());
  ASSERT_TRUE(snap.ok()) << snap.status();
  const fs::path git = snap->git_dir;
  EXPECT_FALSE(snap->bare);
  EXPECT_EQ(ReadAll(git / "HEAD"), ReadAll(repo / ".git/HEAD"));
  EXPECT_FALSE(fs::is_symlink(git / "HEAD"));
  EXPECT_TRUE(fs::is_symlink(git / "objects"));
  EXPECT_TRUE(fs::is_symlink(git / "refs"));
  EXPECT_FALSE(fs::exists(git / "hooks"));
  const std::string config = ReadAll(git / "config");
  EXPECT_FALSE(absl::StrContains(config, "evil")) << config;
  EXPECT_TRUE(absl::StrContains(config, "repositoryformatversion")) << config;
  // git takes it for a repository.
  EXPECT_EQ(system(absl::StrCat("GIT_DIR='", git.string(), "' git rev-parse --is-bare-repository",
                                " >/dev/null 2>&1")
                       .c_str()),
            0);
}

TEST(GitSnapshotTest, ALinkedWorktreeGetsItsSharedDirectoryMirroredToo) {
  if (system("git --version >/dev/null 2>&1") != 0) GTEST_SKIP() << "no git";
  TempDir t;
  const fs::path repo = t.path() / "repo";
  fs::create_directories(repo);
  ASSERT_TRUE(Git(repo, "init -q"));
  std::ofstream(repo / "f.txt") << "x\n";
  ASSERT_TRUE(Git(repo, "add f.txt"));
  ASSERT_TRUE(Git(repo, "commit -q -m one"));
  ASSERT_TRUE(Git(repo, "worktree add -q ../wt"));
  ASSERT_TRUE(Git(repo, "config diff.external ./evil"));
  absl::StatusOr<std::optional<GitLocation>> loc = FindGitRepository((t.path() / "wt").string());
  ASSERT_TRUE(loc.ok() && loc->has_value()) << loc.status();
  EXPECT_NE((*loc)->git_dir, (*loc)->common_dir);
  const fs::path snap_dir = t.path() / "snap";
  fs::create_directories(snap_dir);
  absl::StatusOr<GitSnapshot> snap = BuildGitSnapshot(**loc, snap_dir.string());
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_EQ(ReadAll(fs::path(snap->git_dir) / "commondir"), "../common\n");
  EXPECT_FALSE(absl::StrContains(ReadAll(snap_dir / "common/config"), "evil"));
  const std::string cmd = absl::StrCat(
      "cd '", (t.path() / "wt").string(), "' && GIT_DIR='", snap->git_dir, "' GIT_WORK_TREE='",
      (t.path() / "wt").string(), "' git log --oneline -1 2>&1 | grep -q one");
  EXPECT_EQ(system(cmd.c_str()), 0);
}

}  // namespace
}  // namespace termbridge::workdir
