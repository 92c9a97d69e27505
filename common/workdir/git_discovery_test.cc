// git_discovery against real files: what a .git file names, the alternates a
// repository borrows from, and files that cannot be read whole.
#include "common/workdir/git_discovery.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace termbridge::workdir {
namespace {

namespace fs = std::filesystem;

class GitDiscoveryTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tb-gitdisc-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl).string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void Write(const std::string& rel, const std::string& text) {
    fs::path path = fs::path(root_) / rel;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  std::string root_;
};

TEST_F(GitDiscoveryTest, AGitFileNamesItsDirectoryRelativeToItself) {
  Write("a/.git", "gitdir: ../store/a.git\n");
  EXPECT_EQ(GitFileTarget(root_ + "/a/.git").value(), root_ + "/a/../store/a.git");
  Write("b/.git", "gitdir: /elsewhere/b.git \r\n");
  EXPECT_EQ(GitFileTarget(root_ + "/b/.git").value(), "/elsewhere/b.git");
  Write("c/.git", "gitdir:\n");
  EXPECT_TRUE(absl::IsInvalidArgument(GitFileTarget(root_ + "/c/.git").status()));
  Write("d/.git", "ref: refs/heads/main\n");
  EXPECT_TRUE(absl::IsInvalidArgument(GitFileTarget(root_ + "/d/.git").status()));
  EXPECT_TRUE(absl::IsNotFound(GitFileTarget(root_ + "/none/.git").status()));
  Write("e/.git", std::string(kMaxGitSmallFileBytes + 1, ' '));
  EXPECT_TRUE(absl::IsResourceExhausted(GitFileTarget(root_ + "/e/.git").status()));
  // A FIFO planted as .git is refused at once, not waited on.
  fs::create_directories(root_ + "/f");
  ASSERT_EQ(mkfifo((root_ + "/f/.git").c_str(), 0600), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(GitFileTarget(root_ + "/f/.git").status()));
}

TEST_F(GitDiscoveryTest, AlternatesAreReadWholeOrNotAtAll) {
  const std::string objects = root_ + "/repo/objects";
  fs::create_directories(objects);
  EXPECT_TRUE(AlternateObjectDirs(objects).value().empty());  // no file
  Write("repo/objects/info/alternates", "# a comment\n/abs/objects\n../../other/objects  \n\n");
  EXPECT_EQ(AlternateObjectDirs(objects).value(),
            (std::vector<std::string>{"/abs/objects", objects + "/../../other/objects"}));
  Write("repo/objects/info/alternates", "\"/quoted\\npath\"\n");
  EXPECT_TRUE(absl::IsFailedPrecondition(AlternateObjectDirs(objects).status()));
  // Past the limit nothing is taken as read: the caller cannot know all of it.
  Write("repo/objects/info/alternates",
        std::string(kMaxGitSmallFileBytes, '#') + "\n/late/objects\n");
  absl::StatusOr<std::vector<std::string>> big = AlternateObjectDirs(objects);
  EXPECT_TRUE(absl::IsResourceExhausted(big.status()));
  EXPECT_NE(big.status().message().find("info/alternates"), std::string::npos);
}

TEST_F(GitDiscoveryTest, AGitDirectoryIsWhatGitTakesForOne) {
  Write("g/HEAD", "ref: refs/heads/main\n");
  EXPECT_FALSE(IsGitDirectory(root_ + "/g"));  // no objects/ or refs/
  fs::create_directories(root_ + "/g/objects");
  fs::create_directories(root_ + "/g/refs");
  EXPECT_TRUE(IsGitDirectory(root_ + "/g"));
  Write("g/HEAD", "garbage\n");
  EXPECT_FALSE(IsGitDirectory(root_ + "/g"));
  Write("g/HEAD", std::string(40, 'a') + "\n");
  EXPECT_TRUE(IsGitDirectory(root_ + "/g"));
  // A linked worktree's dir: HEAD here, objects/ and refs/ where commondir says.
  Write("wt/HEAD", "ref: refs/heads/x\n");
  Write("wt/commondir", "../g\n");
  EXPECT_EQ(CommonDirOf(root_ + "/wt"), root_ + "/g");
  EXPECT_TRUE(IsGitDirectory(root_ + "/wt"));
}

}  // namespace
}  // namespace termbridge::workdir
