// builtin.broker-state and builtin.process-files against a real directory
// tree: a temp dir stands for the broker's state dir, with symlinks into it,
// globs, relative paths under a cwd, ~ paths and option values.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

class BrokerStateTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = testing::TempDir() + "tb_policy_state_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    state_ = root_ + "/state";
    ASSERT_EQ(mkdir(state_.c_str(), 0700), 0);
    std::ofstream(state_ + "/token") << "secret";
    ASSERT_EQ(mkdir((root_ + "/work").c_str(), 0700), 0);
    ASSERT_EQ(symlink(state_.c_str(), (root_ + "/work/link").c_str()), 0);
    ASSERT_EQ(symlink((state_ + "/token").c_str(), (root_ + "/work/tok").c_str()), 0);
    ASSERT_EQ(symlink("link", (root_ + "/work/chain").c_str()), 0);
    const char* home = getenv("HOME");
    old_home_ = home != nullptr ? home : "";
    setenv("HOME", root_.c_str(), 1);
    policy_.SetProtectedPaths({state_});
  }
  void TearDown() override {
    setenv("HOME", old_home_.c_str(), 1);
    std::string cmd = "rm -rf '" + root_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }

  // `line` with every "S" replaced by the state dir and "R" by the temp root.
  std::string Line(std::string line) const {
    std::string out;
    for (char ch : line) {
      if (ch == 'S') {
        out += state_;
      } else if (ch == 'R') {
        out += root_;
      } else {
        out += ch;
      }
    }
    return out;
  }

  void ExpectDenied(const std::string& line, const CheckContext& context = {}) {
    Decision d = policy_.Check(Line(line), context);
    EXPECT_EQ(d.action, Action::kDeny) << line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, "builtin.broker-state") << line << ": " << d.reason;
  }
  void ExpectNotDenied(const std::string& line, const CheckContext& context = {}) {
    Decision d = policy_.Check(Line(line), context);
    EXPECT_NE(d.action, Action::kDeny) << line << ": " << d.reason;
  }

  std::string root_, state_, old_home_;
  Policy policy_ = Policy::Default();
};

TEST_F(BrokerStateTest, ArgvWordsRedirectionsAndOptionValues) {
  for (const char* line : {"cat S/token",
                           "ls S",
                           "ls -la S/",
                           "cat S//token",
                           "cat S/./token",
                           "cat R/work/../state/token",
                           "cat < S/token",
                           "wc -l <S/token",
                           "echo x > S/token",
                           "echo x >> S/new",
                           "cp x S/",
                           "grep --file=S/token x",
                           "grep -fS/token x",
                           "dd if=S/token",
                           "curl file://S/token",
                           "tar -C S -cf - .",
                           "X=S/token make",
                           "/usr/bin/cat 'S/token'",
                           "sh -c 'cat S/token'",
                           "cat x y S/token z",
                           "cd S",
                           "pushd S/",
                           "gcc @S/token"}) {
    ExpectDenied(line);
  }
  for (const char* line : {"ls R", "ls R/work", "cat R/state2/x", "cat R/stat", "echo S-ish"}) {
    ExpectNotDenied(line);
  }
}

TEST_F(BrokerStateTest, MovingOrCopyingAnAncestorCarriesItAlong) {
  for (const char* line :
       {"mv R /tmp/elsewhere", "cp -r R/ x", "tar czf x.tgz ~", "rsync -a R/ x", "ln -s R l"}) {
    ExpectDenied(line);
  }
  ExpectNotDenied("cp R/work/a x");
  ExpectNotDenied("ls R");
}

TEST_F(BrokerStateTest, SymlinksAreResolved) {
  for (const char* line : {"cat R/work/link/token", "cat R/work/tok", "cat R/work/chain/token",
                           "ls R/work/link", "cat R/work/link/../state/token"}) {
    ExpectDenied(line);
  }
}

TEST_F(BrokerStateTest, GlobsThatCouldNameIt) {
  for (const char* line : {"cat R/st*/token", "cat R/*/*", "ls R/*", "cat R/s?ate/t*",
                           "cat R/[s]tate/token", "cat R/**/token", "ls R/work/li*/"}) {
    ExpectDenied(line);
  }
  for (const char* line : {"cat R/work/*.txt", "ls R/w*", "cat R/x*/token"}) {
    ExpectNotDenied(line);
  }
}

TEST_F(BrokerStateTest, RelativePathsUnderTheCwdAndTheLinesCd) {
  CheckContext in_root{root_};
  ExpectDenied("cat state/token", in_root);
  ExpectDenied("cat ./state/../state/token", in_root);
  ExpectDenied("cat work/link/token", in_root);
  ExpectDenied("cat *e/token", in_root);
  // A shell inside the state dir names it with every word.
  ExpectDenied("ls", CheckContext{state_});
  ExpectNotDenied("cat state/token");  // unknown cwd: nothing to resolve against
  ExpectNotDenied("cat work/x", in_root);
  ExpectDenied("cd R && cat state/token");
  ExpectDenied("cd R/work; cd ..; cat state/token");
  ExpectDenied("cat ~+/state/token", in_root);
}

TEST_F(BrokerStateTest, HomePaths) {
  for (const char* line : {"cat ~/state/token", "cat $HOME/state/token",
                           "cat \"${HOME}/state/token\"", "ls ~/st*", "cd; cat state/token"}) {
    ExpectDenied(line);
  }
  ExpectNotDenied("ls ~");
}

TEST_F(BrokerStateTest, ProcSelfRootAndCwdSeeThrough) {
  ExpectDenied("cat /proc/self/root/S/token");
  ExpectDenied("cat /proc/self/cwd/state/token", CheckContext{root_});
}

TEST_F(BrokerStateTest, UnprotectedPolicyAllowsTheSameLines) {
  Policy plain = Policy::Default();
  // The workspace is the state dir: root_ is the home, never a workspace.
  CheckContext in_state{root_, {state_}};
  EXPECT_EQ(plain.Check(Line("cat S/token"), in_state).action, Action::kAllow);
}

TEST_F(BrokerStateTest, PolicyFileAppliesThemToEveryPolicyItLoads) {
  std::string path = root_ + "/work/policy.toml";
  PolicyFile file(path);
  file.SetProtectedPaths({state_});
  ASSERT_TRUE(file.Load().ok());
  EXPECT_EQ(file.Current()->Check(Line("cat S/token")).rule_id, "builtin.broker-state");
  std::ofstream(path) << "version = 1\ndefault = \"deny\"\n";
  std::shared_ptr<const Policy> reloaded = file.Current();
  EXPECT_EQ(reloaded->default_action(), Action::kDeny);
  EXPECT_EQ(reloaded->Check(Line("cat S/token")).rule_id, "builtin.broker-state");
  EXPECT_EQ(reloaded->protected_paths(), std::vector<std::string>{state_});

  PolicyFile defaults("");
  ASSERT_TRUE(defaults.Load().ok());
  EXPECT_EQ(defaults.Current()->Check(Line("cat S/token"), CheckContext{root_, {state_}}).action,
            Action::kAllow);
  defaults.SetProtectedPaths({state_});  // after the first load too
  EXPECT_EQ(defaults.Current()->Check(Line("cat S/token")).rule_id, "builtin.broker-state");
}

TEST(ProcessFiles, OtherProcessesEntriesAreDenied) {
  Policy p = Policy::Default();
  for (const char* line :
       {"cat /proc/1/environ", "ls /proc/1/cwd/", "cat /proc/123/root/etc/shadow",
        "ls -l /proc/42/fd", "cat /proc/*/environ", "cat /proc/1/task/1/environ", "xxd /proc/1/mem",
        "cat /proc/[0-9]*/e*", "cat /proc/1/../1/environ", "cat < /proc/1/environ",
        "grep -r x /proc/1/map_files"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.rule_id, "builtin.process-files") << line << ": " << d.reason;
  }
  Decision in_proc = p.Check("cat 1/environ", CheckContext{"/proc"});
  EXPECT_EQ(in_proc.rule_id, "builtin.process-files") << in_proc.reason;
  for (const char* line : {"cat /proc/cpuinfo", "cat /proc/1/status", "ls /proc", "ls /proc/*",
                           "cat /proc/self/status", "cat /proc/meminfo"}) {
    Decision d = p.Check(line);
    EXPECT_NE(d.action, Action::kDeny) << line << ": " << d.reason;
  }
}

}  // namespace
}  // namespace termbridge::policy
