// A rule's write_paths against where a write really lands: a target covered
// as text still asks when a symlink on its way (made by the agent in its
// workspace, from its container) or a cd of the line takes it elsewhere.
// Real directories and symlinks under a temp dir.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

namespace fs = std::filesystem;

class WritePathsTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/tb-writes-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl.c_str()).string();
    home_ = root_ + "/home";
    proj_ = home_ + "/proj";
    fs::create_directories(proj_ + "/build");
    std::ofstream(home_ + "/.bashrc") << "# the person's\n";
    std::ofstream(proj_ + "/build/a") << "x\n";
    context_ = CheckContext{proj_, {proj_}};
  }
  void TearDown() override { fs::remove_all(root_); }

  // A policy allowing `program` to write `write_paths` (TOML array text).
  static Policy Allowing(const std::string& program, const std::string& write_paths) {
    absl::StatusOr<Policy> p =
        Policy::FromToml("[[rule]]\nid = \"w\"\naction = \"allow\"\nprefix = [\"" + program +
                             "\"]\nwrites = true\nwrite_paths = " + write_paths + "\n\n" +
                             "[[rule]]\nid = \"cd\"\naction = \"allow\"\nprefix = [\"cd\"]\n",
                         "writes.toml");
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : Policy::Default();
  }
  void ExpectAllowed(const Policy& p, const std::string& line) const {
    Decision d = p.Check(line, context_);
    EXPECT_EQ(ActionName(d.action), "allow") << line << ": " << d.reason;
  }
  void ExpectAsked(const Policy& p, const std::string& line, const std::string& why) const {
    Decision d = p.Check(line, context_);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_NE(d.reason.find(why), std::string::npos) << line << ": " << d.reason;
  }

  std::string root_, home_, proj_;
  CheckContext context_;
};

TEST_F(WritePathsTest, ASymlinkOutOfThePathsAsks) {
  Policy tee = Allowing("tee", "[\"build/**\", \"out/**\"]");
  ExpectAllowed(tee, "tee build/a");
  ExpectAllowed(tee, "tee build/new");
  // A directory the agent made a symlink to the home, and a file that is one.
  fs::create_symlink(home_, proj_ + "/out");
  fs::create_symlink(home_ + "/.bashrc", proj_ + "/build/rc");
  fs::create_symlink(home_ + "/not-yet", proj_ + "/build/dangling");
  ExpectAsked(tee, "tee out/.bashrc", "a symlink leads it to " + home_ + "/.bashrc");
  ExpectAsked(tee, "tee build/rc", "a symlink leads it to " + home_ + "/.bashrc");
  ExpectAsked(tee, "tee -a build/dangling", "a symlink leads it to " + home_ + "/not-yet");
  Policy echo = Allowing("echo", "[\"build/**\"]");
  ExpectAllowed(echo, "echo x > build/a");
  ExpectAsked(echo, "echo x >> build/rc", "a symlink leads it to");
  Policy sed = Allowing("sed", "[\"build/**\"]");
  ExpectAllowed(sed, "sed -i s/a/b/ build/a");
  ExpectAsked(sed, "sed -i --follow-symlinks s/a/b/ build/rc", "a symlink leads it to");
  // "Always" would write a rule naming build/rc, which would not allow it.
  absl::StatusOr<std::vector<Rule>> always = tee.RulesToAllow("tee build/rc", context_);
  ASSERT_FALSE(always.ok());
  EXPECT_NE(always.status().message().find("a symlink leads it to"), std::string::npos)
      << always.status();
  ASSERT_TRUE(tee.RulesToAllow("tee build/a", context_).ok());
  // A link that stays inside the paths is followed and covered.
  fs::create_directories(proj_ + "/build/real");
  fs::create_symlink("real", proj_ + "/build/alias");
  ExpectAllowed(tee, "tee build/alias/x");
}

TEST_F(WritePathsTest, TheLinesCdIsFollowed) {
  Policy tee = Allowing("tee", "[\"**\"]");
  ExpectAllowed(tee, "tee notes");
  // A relative glob covers what is under the cwd, however it is written.
  ExpectAllowed(tee, "tee " + proj_ + "/notes");
  ExpectAsked(tee, "tee " + home_ + "/.bashrc", "do not cover");
  ExpectAsked(tee, "tee /tmp/notes", "do not cover");
  ExpectAllowed(tee, "cd build && tee notes");
  ExpectAsked(tee, "cd .. && tee .bashrc", "it is " + home_ + "/.bashrc");
  ExpectAsked(tee, "cd ~ && tee .bashrc", "after a cd");
  ExpectAsked(tee, "cd ~/.. && tee .bashrc", "after a cd");
  ExpectAsked(tee, "cd - && tee .bashrc", "changes directory");
  fs::create_symlink(home_, proj_ + "/up");
  ExpectAsked(tee, "cd up && tee .bashrc", "a symlink leads it to " + home_ + "/.bashrc");
  // The file a relative target names from each directory the line may be
  // in must be covered: which cd comes first is not followed, so `tee x`
  // counts as x and build/x here.
  Policy build = Allowing("tee", "[\"build/**\", \"x\"]");
  ExpectAllowed(build, "cd build && tee x");
  ExpectAsked(Allowing("tee", "[\"build/**\"]"), "cd build && tee x", "");
  ExpectAsked(build, "cd build && tee ../x", "");
}

TEST_F(WritePathsTest, AWorkspaceReachedThroughASymlinkStillWrites) {
  fs::create_symlink(proj_, root_ + "/ws");
  context_ = CheckContext{root_ + "/ws", {root_ + "/ws"}};
  Policy tee = Allowing("tee", "[\"build/**\"]");
  ExpectAllowed(tee, "tee build/a");
  Policy absolute = Allowing("tee", "[\"" + proj_ + "/build/**\"]");
  ExpectAllowed(absolute, "tee " + proj_ + "/build/a");
  fs::remove_all(proj_ + "/build");
  fs::create_symlink(home_, proj_ + "/build");
  ExpectAsked(absolute, "tee " + proj_ + "/build/.bashrc", "a symlink leads it to");
  ExpectAsked(tee, "tee build/.bashrc", "a symlink leads it to");
}

}  // namespace
}  // namespace termbridge::policy
