// PolicyFile against real files in a temporary directory: the first load, a
// missing file (the default policy), a bad file (rejected with file and line,
// the previous policy kept), reloading a changed file, and appending
// "always" rules atomically.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

namespace fs = std::filesystem;

class PolicyFileTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tb-policy-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "policy.toml").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Replaces the file the way an editor does (write a copy, rename it over).
  // Each test changes the file's size with every write, so the stat-based
  // reload sees the change even within one mtime tick.
  void Write(const std::string& text) {
    std::string tmp = path_ + ".editor";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << text;
    }
    fs::rename(tmp, path_);
  }

  std::string Read() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::vector<std::string> DirEntries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

  std::string dir_;
  std::string path_;
};

constexpr char kAllowMake[] = R"(version = 1
[[rule]]
id = "make"
action = "allow"
prefix = ["make"]
)";

constexpr char kAllowNpm[] = R"(version = 1
[[rule]]
id = "npm"
action = "allow"
prefix = ["npm"]
)";

TEST_F(PolicyFileTest, LoadsTheFile) {
  Write(kAllowMake);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  EXPECT_EQ(file.generation(), 1u);
  EXPECT_EQ(file.last_error(), "");
  std::shared_ptr<const Policy> p = file.Current();
  EXPECT_EQ(p->Check("make all").action, Action::kAllow);
  EXPECT_EQ(p->Check("make all").rule_id, "make");
  EXPECT_EQ(p->Check("rm -rf /").action, Action::kDeny);
  // Current() does not reload an unchanged file.
  EXPECT_EQ(file.Current(), p);
  EXPECT_EQ(file.generation(), 1u);
}

TEST_F(PolicyFileTest, RulesWithoutIdsAreNamedByFileAndLine) {
  Write("version = 1\n\n[[rule]]\naction = \"deny\"\nprefix = [\"curl\"]\n");
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  Decision d = file.Current()->Check("curl example.com");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.rule_id, "policy.toml:3");
}

TEST_F(PolicyFileTest, MissingFileIsTheDefaultPolicy) {
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  EXPECT_EQ(file.generation(), 1u);
  std::shared_ptr<const Policy> p = file.Current();
  EXPECT_EQ(p->Check("ls").action, Action::kAllow);
  EXPECT_EQ(p->Check("make").action, Action::kAsk);
  EXPECT_EQ(p->Check("reboot").action, Action::kDeny);

  // The file appearing later is picked up, and its removal goes back to
  // the defaults.
  Write(kAllowMake);
  EXPECT_EQ(file.Current()->Check("make").action, Action::kAllow);
  EXPECT_EQ(file.generation(), 2u);
  fs::remove(path_);
  EXPECT_EQ(file.Current()->Check("make").action, Action::kAsk);
  EXPECT_EQ(file.generation(), 3u);
}

TEST_F(PolicyFileTest, EmptyPathIsTheDefaultPolicyWithNothingToAppend) {
  PolicyFile file("");
  ASSERT_TRUE(file.Load().ok());
  EXPECT_EQ(file.Current()->Check("ls").action, Action::kAllow);
  absl::Status st = file.AppendRules(*Policy::Default().RulesToAllow("make"));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PolicyFileTest, BadFileIsRejectedWithFileAndLine) {
  Write("version = 1\n\n[[rule]]\naction = \"allow\"\nprefix = [\"make\"]\ncolour = \"red\"\n");
  PolicyFile file(path_);
  absl::Status st = file.Load();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  std::string want = path_ + ":6: unknown key \"colour\"";
  EXPECT_EQ(std::string(st.message()).rfind(want, 0), 0u) << st;
  EXPECT_EQ(file.last_error(), std::string(st.message()));
  // Nothing loaded yet: the safe default applies, not the file's allow.
  EXPECT_EQ(file.Current()->Check("make").action, Action::kAsk);
  EXPECT_EQ(file.Current()->Check("rm -rf /").action, Action::kDeny);
}

// Each of these crashed the loader (toml++ recursing on 100,000 nested
// tables) or would fill memory; now each is a clear error naming the file.
TEST_F(PolicyFileTest, DeepOrHugeFileIsRejectedBeforeParsing) {
  std::string dotted = "version = 1\na";
  for (int i = 0; i < 100000; ++i) dotted += ".b";
  dotted += " = 1\n";
  std::string header = "version = 1\n[a";
  for (int i = 0; i < 100000; ++i) header += ".b";
  header += "]\n";
  std::string arrays = "version = 1\nx = " + std::string(100000, '[') + std::string(100000, ']');
  for (const std::string& text : {dotted, header, arrays}) {
    Write(text);
    PolicyFile file(path_);
    absl::Status st = file.Load();
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(st.message())
                  .rfind(path_ + ": tables, keys and arrays nest deeper than 128", 0),
              0u)
        << st;
    EXPECT_EQ(file.Current()->Check("rm -rf /").action, Action::kDeny);
  }
  Write("version = 1\n# " + std::string(5 << 20, 'x') + "\n");
  PolicyFile huge(path_);
  absl::Status st = huge.Load();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("larger than 4194304 bytes"), std::string::npos) << st;
}

TEST_F(PolicyFileTest, BadEditKeepsThePreviousPolicy) {
  Write(kAllowMake);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  std::shared_ptr<const Policy> before = file.Current();

  Write("version = 1\n[[rule]]\naction = \"allow\"\nregex = \"(\"\n# and more\n");
  std::shared_ptr<const Policy> after = file.Current();
  EXPECT_EQ(after, before);
  EXPECT_EQ(after->Check("make").action, Action::kAllow);
  EXPECT_EQ(file.generation(), 1u);
  EXPECT_EQ(file.last_error().rfind(path_ + ":4: bad regex", 0), 0u) << file.last_error();

  // Fixing the file loads it and clears the error.
  Write(kAllowNpm);
  std::shared_ptr<const Policy> fixed = file.Current();
  EXPECT_EQ(fixed->Check("npm ci").action, Action::kAllow);
  EXPECT_EQ(fixed->Check("make").action, Action::kAsk);
  EXPECT_EQ(file.generation(), 2u);
  EXPECT_EQ(file.last_error(), "");
}

TEST_F(PolicyFileTest, CurrentSaysWhyTheDefaultIsInForce) {
  std::string why;
  PolicyFile none("");
  EXPECT_EQ(none.Current(&why)->Check("make").action, Action::kAsk);
  EXPECT_EQ(why, "no policy file is set");

  PolicyFile file(path_);
  EXPECT_TRUE(file.Load().ok());
  file.Current(&why);
  EXPECT_EQ(why, path_ + " does not exist");

  Write("version = 1\n[[rule]]\naction = \"allow\"\nregex = \"(\"\n");
  EXPECT_EQ(file.Current(&why)->Check("make").action, Action::kAsk);  // the default
  EXPECT_EQ(why.rfind(path_ + ":4: bad regex", 0), 0u) << why;

  Write(kAllowMake);
  EXPECT_EQ(file.Current(&why)->Check("make").action, Action::kAllow);
  EXPECT_EQ(why, "");
  // A bad edit keeps the file's last valid version: still from the file.
  Write("version = 1\n[[rule]]\naction = \"allow\"\nregex = \"(\"\n# more\n");
  EXPECT_EQ(file.Current(&why)->Check("make").action, Action::kAllow);
  EXPECT_EQ(why, "");
  EXPECT_NE(file.last_error(), "");

  fs::remove(path_);
  EXPECT_EQ(file.Current(&why)->Check("make").action, Action::kAsk);
  EXPECT_EQ(why, path_ + " does not exist");

  // Invalid from the first load: the default, with the file's error.
  Write("version = 1\ncolour = \"red\"\n");
  PolicyFile bad(path_);
  EXPECT_FALSE(bad.Load().ok());
  bad.Current(&why);
  EXPECT_EQ(why, bad.last_error());
  EXPECT_NE(why.find("colour"), std::string::npos) << why;
}

TEST_F(PolicyFileTest, ChangedFileIsReloaded) {
  Write(kAllowMake);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  std::shared_ptr<const Policy> first = file.Current();
  Write(kAllowNpm);
  std::shared_ptr<const Policy> second = file.Current();
  EXPECT_NE(second, first);
  EXPECT_EQ(file.generation(), 2u);
  EXPECT_EQ(second->Check("npm ci").action, Action::kAllow);
  EXPECT_EQ(second->Check("make").action, Action::kAsk);
  // A snapshot taken before the reload keeps deciding as it did.
  EXPECT_EQ(first->Check("make").action, Action::kAllow);

  // An in-place edit of the same inode is noticed too (the size changed).
  {
    std::ofstream out(path_, std::ios::app);
    out << "\n[[rule]]\nid = \"cargo\"\naction = \"allow\"\nprefix = [\"cargo\"]\n";
  }
  EXPECT_EQ(file.Current()->Check("cargo build").action, Action::kAllow);
  EXPECT_EQ(file.generation(), 3u);
}

TEST_F(PolicyFileTest, AppendRulesWritesAParsableFileThatAllowsTheLine) {
  Write(kAllowMake);
  chmod(path_.c_str(), 0600);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  const std::string line = "npm run build > build.log";
  ASSERT_EQ(file.Current()->Check(line).action, Action::kAsk);

  absl::StatusOr<std::vector<Rule>> rules = file.Current()->RulesToAllow(line);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_TRUE(file.AppendRules(*rules).ok());

  EXPECT_EQ(file.generation(), 2u);
  Decision d = file.Current()->Check(line);
  EXPECT_EQ(d.action, Action::kAllow);
  EXPECT_EQ(d.rule_id, (*rules)[0].id);
  EXPECT_EQ(file.Current()->Check("make").action, Action::kAllow);  // old rules kept
  EXPECT_EQ(file.Current()->Check("npm run build --prod > build.log").action, Action::kAsk);

  // The file on disk is the old text plus the new rule, and loads on its own.
  std::string text = Read();
  EXPECT_EQ(text.rfind(kAllowMake, 0), 0u) << text;
  EXPECT_NE(text.find("id = \"" + (*rules)[0].id + "\""), std::string::npos) << text;
  absl::StatusOr<Policy> reparsed = Policy::FromToml(text, path_);
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(reparsed->Check(line).action, Action::kAllow);

  // Written atomically: no temporary file is left, the mode is kept.
  EXPECT_EQ(DirEntries(), std::vector<std::string>{"policy.toml"});
  struct stat sb;
  ASSERT_EQ(stat(path_.c_str(), &sb), 0);
  EXPECT_EQ(sb.st_mode & 0777, 0600u);
}

TEST_F(PolicyFileTest, AppendRulesCreatesAMissingFile) {
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  absl::StatusOr<std::vector<Rule>> rules = file.Current()->RulesToAllow("cargo test");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_TRUE(file.AppendRules(*rules).ok());
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_EQ(file.Current()->Check("cargo test").action, Action::kAllow);
  // The new file keeps the default rules and built-ins.
  EXPECT_EQ(file.Current()->Check("ls").action, Action::kAllow);
  EXPECT_EQ(file.Current()->Check("reboot").action, Action::kDeny);
}

TEST_F(PolicyFileTest, AppendRulesThatWouldBreakTheFileLeavesItAlone) {
  Write(kAllowMake);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  Rule dup;
  dup.id = "make";  // already in the file
  dup.action = Action::kAllow;
  dup.kind = MatchKind::kExact;
  dup.argv = {"make", "install"};
  absl::Status st = file.AppendRules({dup});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(st.message()).find("duplicate rule id"), std::string::npos) << st;
  EXPECT_EQ(Read(), kAllowMake);
  EXPECT_EQ(file.generation(), 1u);
  EXPECT_EQ(DirEntries(), std::vector<std::string>{"policy.toml"});
}

TEST_F(PolicyFileTest, AppendRulesWritesThroughASymlink) {
  std::string real = (fs::path(dir_) / "real.toml").string();
  {
    std::ofstream out(real);
    out << kAllowMake;
  }
  fs::create_symlink("real.toml", path_);
  PolicyFile file(path_);
  ASSERT_TRUE(file.Load().ok());
  ASSERT_TRUE(file.AppendRules(*file.Current()->RulesToAllow("npm ci")).ok());
  EXPECT_TRUE(fs::is_symlink(path_));
  EXPECT_EQ(file.Current()->Check("npm ci").action, Action::kAllow);
  std::ifstream in(real);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_NE(s.str().find("\"npm\", \"ci\""), std::string::npos) << s.str();
}

}  // namespace
}  // namespace termbridge::policy
