// FindGitConfigThatRunsCode against real directories: hand-made repositories
// carrying each attack key, hooks, gitfile and linked worktrees, bare
// repositories, files that cannot be read; and, when git is installed,
// repositories made by git itself (a fresh init is clean; a submodule's
// config is found through the index, in index versions 2 and 4 and split).
#include "common/workdir/workdir_config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace termbridge::workdir {
namespace {

namespace fs = std::filesystem;

void WriteFile(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool HaveGit() { return system("git --version >/dev/null 2>&1") == 0; }

// Runs `git <args>` in `dir` with no user or system config; true on success.
bool Git(const fs::path& dir, const std::string& args) {
  std::string cmd =
      absl::StrCat("cd '", dir.string(), "' && GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null ",
                   "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main ",
                   "-c protocol.file.allow=always ", args, " >/dev/null 2>&1");
  return system(cmd.c_str()) == 0;
}

class WorkdirConfigTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tb-workdir-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl);
    ASSERT_FALSE(fs::exists(root_.parent_path() / ".git")) << "temp dir is inside a repository";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // A minimal git directory at `git_dir` with `config` as its config file.
  static void MakeGitDir(const fs::path& git_dir, const std::string& config) {
    WriteFile(git_dir / "HEAD", "ref: refs/heads/main\n");
    fs::create_directories(git_dir / "objects");
    fs::create_directories(git_dir / "refs" / "heads");
    WriteFile(git_dir / "config", config);
  }

  // A repository at root_/repo whose .git/config is the usual four lines
  // followed by `extra`.
  fs::path MakeRepo(const std::string& extra) {
    fs::path repo = root_ / "repo";
    MakeGitDir(repo / ".git",
               "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
               "\tlogallrefupdates = true\n" +
                   extra);
    return repo;
  }

  static GitRepoRisks Find(const fs::path& cwd) {
    auto found = FindGitConfigThatRunsCode(cwd.string());
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *found : GitRepoRisks{};
  }

  static std::vector<std::string> Risks(const fs::path& cwd) {
    std::vector<std::string> out;
    for (const GitCodeRisk& r : Find(cwd).risks) out.push_back(r.ToString());
    return out;
  }

  static std::vector<std::string> Whats(const fs::path& cwd) {
    std::vector<std::string> out;
    for (const GitCodeRisk& r : Find(cwd).risks) out.push_back(r.what);
    return out;
  }

  fs::path root_;
};

using Strings = std::vector<std::string>;

TEST_F(WorkdirConfigTest, RelativeCwdIsAnError) {
  EXPECT_EQ(FindGitConfigThatRunsCode("repo").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FindGitConfigThatRunsCode("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WorkdirConfigTest, NotARepositoryIsEmpty) {
  fs::create_directories(root_ / "plain" / "dir");
  GitRepoRisks found = Find(root_ / "plain" / "dir");
  EXPECT_TRUE(found.empty()) << found.Summary();
  EXPECT_EQ(found.git_dir, "");
}

TEST_F(WorkdirConfigTest, HarmlessConfigIsEmpty) {
  fs::path repo = MakeRepo(
      "[remote \"origin\"]\n\turl = git@example.com:a/b.git\n"
      "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
      "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
      "[user]\n\tname = A\n\temail = a@example.com\n[color \"status\"]\n\tadded = green\n"
      "[extensions]\n\tworktreeConfig = true\n[submodule \"lib\"]\n\turl = ../lib\n\tactive\n");
  GitRepoRisks found = Find(repo);
  EXPECT_TRUE(found.empty()) << found.Summary();
  EXPECT_EQ(found.git_dir, (repo / ".git").string());
}

// Each key git turns into a program to run, an included file, or a place to
// find programs.
TEST_F(WorkdirConfigTest, EveryAttackKeyIsFound) {
  struct Case {
    std::string config;
    std::string name;
  };
  const Case kCases[] = {
      {"[core]\n\tfsmonitor = touch /tmp/pwned\n", "core.fsmonitor"},
      {"[core]\n\tpager = sh -c id\n", "core.pager"},
      {"[pager]\n\tstatus = sh -c id\n", "pager.status"},
      {"[diff]\n\texternal = ./x\n", "diff.external"},
      {"[diff \"pdf\"]\n\ttextconv = ./x\n", "diff.pdf.textconv"},
      {"[diff \"pdf\"]\n\tcommand = ./x\n", "diff.pdf.command"},
      {"[filter \"f\"]\n\tclean = ./x\n", "filter.f.clean"},
      {"[filter \"f\"]\n\tsmudge = ./x\n", "filter.f.smudge"},
      {"[filter \"f\"]\n\tprocess = ./x\n", "filter.f.process"},
      {"[core]\n\thooksPath = .githooks\n", "core.hookspath"},
      {"[core]\n\tsshCommand = ./x\n", "core.sshcommand"},
      {"[core]\n\teditor = ./x\n", "core.editor"},
      {"[core]\n\taskPass = ./x\n", "core.askpass"},
      {"[core]\n\tgitProxy = ./x\n", "core.gitproxy"},
      {"[core]\n\talternateRefsCommand = ./x\n", "core.alternaterefscommand"},
      {"[sequence]\n\teditor = ./x\n", "sequence.editor"},
      {"[gpg]\n\tprogram = ./x\n", "gpg.program"},
      {"[credential]\n\thelper = !./x\n", "credential.helper"},
      {"[alias]\n\tst = !./x\n", "alias.st"},
      {"[include]\n\tpath = ../evil.inc\n", "include.path"},
      {"[includeIf \"gitdir:/\"]\n\tpath = ../evil.inc\n", "includeif.gitdir:/.path"},
      {"[interactive]\n\tdiffFilter = ./x\n", "interactive.difffilter"},
      {"[uploadpack]\n\tpackObjectsHook = ./x\n", "uploadpack.packobjectshook"},
      {"[merge \"m\"]\n\tdriver = ./x\n", "merge.m.driver"},
      {"[submodule \"s\"]\n\tupdate = !./x\n", "submodule.s.update"},
      {"[remote \"origin\"]\n\tuploadpack = ./x\n", "remote.origin.uploadpack"},
      {"[remote \"origin\"]\n\treceivepack = ./x\n", "remote.origin.receivepack"},
      {"[remote \"origin\"]\n\tvcs = evil\n", "remote.origin.vcs"},
      {"[extensions]\n\tpartialClone = origin\n", "extensions.partialclone"},
      {"[log]\n\tshowSignature = true\n", "log.showsignature"},
      {"[lfs \"customtransfer.x\"]\n\tpath = ./x\n", "lfs.customtransfer.x.path"},
      {"[protocol \"ext\"]\n\tallow = always\n", "protocol.ext.allow"},
  };
  for (const Case& c : kCases) {
    fs::remove_all(root_ / "repo");
    fs::path repo = MakeRepo(c.config);
    EXPECT_EQ(Risks(repo), Strings{absl::StrCat(c.name, " (.git/config:7)")}) << c.config;
  }
}

TEST_F(WorkdirConfigTest, CaseVariantsAndOldSubsectionForm) {
  fs::path repo = MakeRepo(
      "[Core]\n\tFSMonitor = x\n[CORE] PAGER = y\n[Diff.PDF]\n\tTextConv = z\n"
      "[filter \"LFS\"]\n\tClean = w\n");
  EXPECT_EQ(Risks(repo),
            (Strings{"core.fsmonitor (.git/config:7)", "core.pager (.git/config:8)",
                     "diff.pdf.textconv (.git/config:10)", "filter.LFS.clean (.git/config:12)"}));
}

TEST_F(WorkdirConfigTest, ContinuationLineKeepsTheKeysLine) {
  fs::path repo = MakeRepo("[core]\n\tfsmon\\\nitor = x\n\tfsmonitor = tou\\\nch /tmp/p\n");
  // "fsmon\<newline>itor" is not a continuation in a key: git refuses it.
  EXPECT_EQ(Whats(repo), Strings{"cannot parse .git/config: line 7: bad config line"});
  fs::remove_all(repo);
  repo = MakeRepo("[core]\n\tabbrev = \\\n12\n\tfsmonitor = tou\\\nch /tmp/p\n");
  EXPECT_EQ(Risks(repo), Strings{"core.fsmonitor (.git/config:9)"});
}

TEST_F(WorkdirConfigTest, KeyBeforeAnySectionIsFound) {
  fs::path repo = root_ / "repo";
  MakeGitDir(repo / ".git", "fsmonitor = x\n");
  EXPECT_EQ(Risks(repo), Strings{"fsmonitor (.git/config:1)"});
}

TEST_F(WorkdirConfigTest, NestedSubdirectoryFindsTheRepository) {
  fs::path repo = MakeRepo("[core]\n\tfsmonitor = x\n");
  fs::create_directories(repo / "a" / "b" / "c");
  GitRepoRisks found = Find(repo / "a" / "b" / "c");
  EXPECT_EQ(found.git_dir, (repo / ".git").string());
  EXPECT_EQ(found.Summary(), "core.fsmonitor (.git/config:7)");
}

TEST_F(WorkdirConfigTest, SymlinkedCwdIsResolved) {
  fs::path repo = MakeRepo("[core]\n\tpager = x\n");
  fs::create_directories(repo / "sub");
  fs::create_directory_symlink(repo / "sub", root_ / "link");
  EXPECT_EQ(Risks(root_ / "link"), Strings{"core.pager (.git/config:7)"});
}

TEST_F(WorkdirConfigTest, ConfigWorktreeIsRead) {
  fs::path repo = MakeRepo("[extensions]\n\tworktreeConfig = true\n");
  WriteFile(repo / ".git" / "config.worktree", "[core]\n\tfsmonitor = x\n");
  EXPECT_EQ(Risks(repo), Strings{"core.fsmonitor (.git/config.worktree:2)"});
}

TEST_F(WorkdirConfigTest, GitFileWithRelativeGitdir) {
  MakeGitDir(root_ / "store" / "wt.git", "[core]\n\tbare = false\n\tfsmonitor = x\n");
  WriteFile(root_ / "wt" / ".git", "gitdir: ../store/wt.git\n");
  fs::create_directories(root_ / "wt" / "src");
  GitRepoRisks found = Find(root_ / "wt" / "src");
  EXPECT_EQ(found.git_dir, (root_ / "store" / "wt.git").string());
  ASSERT_EQ(found.risks.size(), 1u);
  EXPECT_EQ(found.risks[0].what, "core.fsmonitor");
  EXPECT_EQ(found.risks[0].where, (root_ / "store" / "wt.git" / "config").string() + ":3");
}

TEST_F(WorkdirConfigTest, LinkedWorktreeReadsTheCommonConfig) {
  fs::path repo = MakeRepo("[core]\n\tfsmonitor = x\n");
  fs::path wt_git = repo / ".git" / "worktrees" / "wt";
  WriteFile(wt_git / "HEAD", "ref: refs/heads/topic\n");
  WriteFile(wt_git / "commondir", "../..\n");
  WriteFile(wt_git / "config.worktree", "[diff]\n\texternal = y\n");
  WriteFile(root_ / "wt" / ".git", absl::StrCat("gitdir: ", wt_git.string(), "\n"));
  EXPECT_EQ(Whats(root_ / "wt"), (Strings{"core.fsmonitor", "diff.external"}));
}

TEST_F(WorkdirConfigTest, BrokenGitFileIsFound) {
  WriteFile(root_ / "wt" / ".git", "gitdir: ../nowhere\n");
  EXPECT_EQ(Whats(root_ / "wt"), Strings{absl::StrCat(".git names ", (root_ / "wt").string(),
                                                      "/../nowhere, not a git directory")});
  WriteFile(root_ / "wt" / ".git", "nonsense\n");
  EXPECT_EQ(Whats(root_ / "wt"), Strings{"cannot parse .git: no \"gitdir: <path>\""});
}

TEST_F(WorkdirConfigTest, BareRepository) {
  MakeGitDir(root_ / "bare.git", "[core]\n\tbare = true\n[uploadpack]\n\tpackObjectsHook = x\n");
  GitRepoRisks found = Find(root_ / "bare.git");
  EXPECT_EQ(found.git_dir, (root_ / "bare.git").string());
  EXPECT_EQ(found.Summary(), absl::StrCat("uploadpack.packobjectshook (",
                                          (root_ / "bare.git" / "config").string(), ":4)"));
}

TEST_F(WorkdirConfigTest, InvalidDotGitDirectoryIsSkippedLikeGitDoes) {
  fs::path repo = MakeRepo("[core]\n\tpager = x\n");
  fs::create_directories(repo / "inner" / ".git");  // no HEAD: git looks further up
  EXPECT_EQ(Whats(repo / "inner"), Strings{"core.pager"});
}

TEST_F(WorkdirConfigTest, CoreWorktreeMustNameItsOwnDirectory) {
  fs::path repo = MakeRepo("[core]\n\tworktree = ..\n");
  EXPECT_TRUE(Find(repo).empty());
  fs::remove_all(repo);
  repo = MakeRepo("[core]\n\tworktree = /\n");
  EXPECT_EQ(Risks(repo), Strings{"core.worktree (.git/config:7)"});
}

TEST_F(WorkdirConfigTest, HooksThatReadOnlyCommandsRun) {
  fs::path repo = MakeRepo("");
  WriteFile(repo / ".git" / "hooks" / "pre-commit.sample", "#!/bin/sh\n");
  WriteFile(repo / ".git" / "hooks" / "pre-commit", "#!/bin/sh\n");
  WriteFile(repo / ".git" / "hooks" / "pre-push", "#!/bin/sh\n");
  EXPECT_TRUE(Find(repo).empty());
  WriteFile(repo / ".git" / "hooks" / "post-index-change", "#!/bin/sh\ntouch /tmp/pwned\n");
  EXPECT_EQ(Risks(repo), Strings{"hook post-index-change (.git/hooks/post-index-change)"});
}

TEST_F(WorkdirConfigTest, UnreadableOrOversizedConfigIsFound) {
  fs::path repo = MakeRepo("");
  WriteFile(repo / ".git" / "config",
            "[core]\n" + std::string(1 << 20, '#') + "\n\tfsmonitor = x\n");
  EXPECT_EQ(Whats(repo), Strings{"cannot read .git/config: larger than 1048576 bytes"});
  fs::remove(repo / ".git" / "config");
  ASSERT_EQ(mkfifo((repo / ".git" / "config").c_str(), 0600), 0);  // must not block
  EXPECT_EQ(Whats(repo), Strings{"cannot read .git/config: not a regular file"});
  fs::remove(repo / ".git" / "config");
  fs::create_directories(repo / ".git" / "config");
  EXPECT_EQ(Whats(repo), Strings{"cannot read .git/config: not a regular file"});
}

TEST_F(WorkdirConfigTest, UnparsableConfigIsFound) {
  fs::path repo = MakeRepo("[core\n\tfsmonitor = x\n");
  EXPECT_EQ(Whats(repo), Strings{"cannot parse .git/config: line 6: bad section header"});
}

TEST_F(WorkdirConfigTest, RisksAreCapped) {
  std::string many = "[alias]\n";
  for (int i = 0; i < 40; ++i) many += absl::StrCat("\ta", i, " = !x\n");
  GitRepoRisks found = Find(MakeRepo(many));
  EXPECT_EQ(found.risks.size(), GitRepoRisks::kMaxRisks);
  EXPECT_TRUE(found.truncated);
  EXPECT_TRUE(absl::EndsWith(found.Summary(), "; ..."));
}

TEST_F(WorkdirConfigTest, FreshGitInitIsClean) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed";
  fs::path repo = root_ / "fresh";
  fs::create_directories(repo);
  ASSERT_TRUE(Git(repo, "init -q ."));
  WriteFile(repo / "a.txt", "a\n");
  ASSERT_TRUE(Git(repo, "add a.txt") && Git(repo, "commit -q -m first"));
  GitRepoRisks found = Find(repo);
  EXPECT_EQ(found.git_dir, (repo / ".git").string());
  EXPECT_TRUE(found.empty()) << found.Summary();
}

// A superproject whose index holds a gitlink to `sub`, a populated repository
// whose own config names a program: git status in the superproject runs it.
class WorkdirSubmoduleTest : public WorkdirConfigTest {
 protected:
  // `init` is the git init command line for both repositories.
  fs::path MakeSuperproject(const std::string& init = "init -q .") {
    fs::path super = root_ / "super";
    fs::create_directories(super / "sub");
    EXPECT_TRUE(Git(super / "sub", init));
    WriteFile(super / "sub" / "b.txt", "b\n");
    EXPECT_TRUE(Git(super / "sub", "add b.txt") && Git(super / "sub", "commit -q -m b"));
    EXPECT_TRUE(Git(super, init));
    WriteFile(super / "a.txt", "a\n");
    EXPECT_TRUE(Git(super, "add a.txt sub") && Git(super, "commit -q -m a"));
    EXPECT_TRUE(Find(super).empty());
    EXPECT_TRUE(Git(super / "sub", "config core.fsmonitor 'touch /tmp/pwned'"));
    return super;
  }
};

TEST_F(WorkdirSubmoduleTest, SubmoduleConfigIsFoundThroughTheIndex) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed";
  fs::path super = MakeSuperproject();
  EXPECT_EQ(Risks(super), Strings{"core.fsmonitor (sub/.git/config:6)"});
  WriteFile(super / "sub" / ".git" / "hooks" / "post-index-change", "#!/bin/sh\n");
  EXPECT_EQ(Whats(super), (Strings{"core.fsmonitor", "hook post-index-change"}));
}

TEST_F(WorkdirSubmoduleTest, IndexVersion4AndSplitIndex) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed";
  fs::path super = MakeSuperproject();
  ASSERT_TRUE(Git(super, "update-index --index-version 4"));
  EXPECT_EQ(Whats(super), Strings{"core.fsmonitor"});
  ASSERT_TRUE(Git(super, "update-index --index-version 2 --split-index"));
  EXPECT_EQ(Whats(super), Strings{"core.fsmonitor"});
}

TEST_F(WorkdirSubmoduleTest, Sha256Repositories) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed";
  fs::create_directories(root_ / "probe");
  if (!Git(root_ / "probe", "init -q --object-format=sha256 .")) {
    GTEST_SKIP() << "this git has no SHA-256 repositories";
  }
  fs::path super = MakeSuperproject("init -q --object-format=sha256 .");
  EXPECT_EQ(Whats(super), Strings{"core.fsmonitor"});
}

TEST_F(WorkdirSubmoduleTest, UnpopulatedSubmoduleIsSkipped) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed";
  fs::path super = MakeSuperproject();
  fs::remove_all(super / "sub");
  fs::create_directories(super / "sub");
  EXPECT_TRUE(Find(super).empty());
}

TEST_F(WorkdirConfigTest, CorruptIndexIsFound) {
  fs::path repo = MakeRepo("");
  WriteFile(repo / ".git" / "index", "DIRX0000");
  EXPECT_EQ(Whats(repo), Strings{"cannot read .git/index: malformed index: no DIRC header"});
}

}  // namespace
}  // namespace termbridge::workdir
