// What allowed commands read (issue 21): the per-program reads, the read
// scope (workspace or read_paths) with relative paths, "..", ~, symlinks
// and globs, the sensitive paths that always ask, process listings, the
// explanation a decision carries, and "always" rules with exact read_paths.
// A fake home under a temp dir holds planted secrets.
#include "common/policy/reads.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/policy/policy.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

namespace fs = std::filesystem;

SimpleCommand Only(std::string_view line) {
  ParsedLine p = ParseLine(line);
  EXPECT_EQ(p.commands.size(), 1u) << line;
  return p.commands.empty() ? SimpleCommand{} : p.commands[0];
}

// "word" or "word (walk)" for each read of `line`.
std::vector<std::string> Reads(std::string_view line) {
  std::vector<std::string> out;
  for (const internal::FileRead& r : internal::ReadsOf(Only(line)).reads) {
    out.push_back(r.walk ? r.word + " (walk)" : r.word);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(ReadsOf, EachDefaultProgram) {
  EXPECT_EQ(Reads("cat a b"), (V{"a", "b"}));
  EXPECT_EQ(Reads("head -n 5 x"), (V{"x"}));
  EXPECT_EQ(Reads("tail -n5 -f log"), (V{"log"}));
  EXPECT_EQ(Reads("wc -l a"), (V{"a"}));
  EXPECT_EQ(Reads("grep pat a b"), (V{"a", "b"}));
  EXPECT_EQ(Reads("grep -e pat a"), (V{"a"}));
  EXPECT_EQ(Reads("grep --regexp=pat a"), (V{"a"}));
  EXPECT_EQ(Reads("grep -f pats a"), (V{"a", "pats"}));
  EXPECT_EQ(Reads("grep -r pat"), (V{". (walk)"}));
  EXPECT_EQ(Reads("grep -rn pat src"), (V{"src (walk)"}));
  EXPECT_EQ(Reads("grep --recursive pat src"), (V{"src (walk)"}));
  EXPECT_EQ(Reads("grep -d recurse pat src"), (V{"src (walk)"}));
  EXPECT_EQ(Reads("egrep -R x ~"), (V{"~ (walk)"}));
  EXPECT_EQ(Reads("grep --exclude-from=ex -r x d"), (V{"d (walk)", "ex"}));
  EXPECT_EQ(Reads("grep pat"), V{});  // stdin
  EXPECT_EQ(Reads("stat -c %s f"), (V{"f"}));
  EXPECT_EQ(Reads("file -m magic1:magic2 f"), (V{"f", "magic1", "magic2"}));
  EXPECT_EQ(Reads("du -sh"), (V{". (walk)"}));
  EXPECT_EQ(Reads("du -d 1 src"), (V{"src (walk)"}));
  EXPECT_EQ(Reads("diff a b"), (V{"a", "b"}));
  EXPECT_EQ(Reads("diff -r a b"), (V{"a (walk)", "b (walk)"}));
  EXPECT_EQ(Reads("diff --from-file=x a"), (V{"a", "x"}));
  EXPECT_EQ(Reads("sha256sum a"), (V{"a"}));
  EXPECT_FALSE(internal::ReadsOf(Only("sha256sum -c list")).unknown.empty());
  EXPECT_FALSE(internal::ReadsOf(Only("md5sum --check list")).unknown.empty());
  EXPECT_FALSE(internal::ReadsOf(Only("wc --files0-from=names")).unknown.empty());
  EXPECT_FALSE(internal::ReadsOf(Only("du --files0-from names")).unknown.empty());
  EXPECT_EQ(Reads("cut -d: -f1 f"), (V{"f"}));
  EXPECT_EQ(Reads("ls"), (V{"."}));
  EXPECT_EQ(Reads("ls -la d"), (V{"d"}));
  EXPECT_EQ(Reads("ls -R d"), (V{"d (walk)"}));
  EXPECT_EQ(Reads("ls -I x"), (V{"."}));
  EXPECT_EQ(Reads("tree"), (V{". (walk)"}));
  EXPECT_EQ(Reads("tree -L 2 src"), (V{"src (walk)"}));
  EXPECT_EQ(Reads("tree --fromfile list"), (V{"list"}));
  EXPECT_EQ(Reads("realpath --relative-to=/base x"), (V{"x", "/base"}));
  EXPECT_EQ(Reads("readlink -f l"), (V{"l"}));
  EXPECT_EQ(Reads("date -f dates"), (V{"dates"}));
  EXPECT_EQ(Reads("date -r file +%s"), (V{"file"}));
  EXPECT_EQ(Reads("date +%s"), V{});
  EXPECT_EQ(Reads("git status"), (V{"."}));
  EXPECT_EQ(Reads("git show HEAD:src/a.c"), (V{".", "src/a.c"}));
  EXPECT_EQ(Reads("git log -- a b"), (V{".", "a", "b"}));
  EXPECT_EQ(Reads("git -C /elsewhere log x"), (V{"/elsewhere", "/elsewhere/x"}));
  EXPECT_EQ(Reads("git --git-dir=/g status"), (V{"/g (walk)", "."}));
  for (const char* line :
       {"echo a", "pwd", "whoami", "id", "uname -a", "true", "seq 1 9", "nproc", "basename /a/b",
        "dirname /a/b", "uptime", "hostname", "ps -o pid", "tee out"}) {
    EXPECT_EQ(Reads(line), V{}) << line;
  }
  // Redirections, and any program this file does not know: every operand.
  EXPECT_EQ(Reads("wc < in"), (V{"in"}));
  EXPECT_EQ(Reads("myprog -v --opt=x a b"), (V{"a", "b"}));
}

TEST(ReadsOf, EnumeratedOptionValuesFailClosed) {
  // grep -d ACTION: only read and skip, exactly, do not walk.
  for (const char* line : {"grep -d rec x .", "grep -drec x .", "grep --directories=rec x .",
                           "grep --directories r x .", "grep -d READ x .", "grep -d '' x ."}) {
    EXPECT_EQ(Reads(line), (V{". (walk)"})) << line;
  }
  for (const char* line : {"grep -d read x .", "grep -d skip x .", "grep --directories=skip x .",
                           "grep -D skip x .", "grep --devices=read x ."}) {
    EXPECT_EQ(Reads(line), (V{"."})) << line;
  }
}

// A long option written shorter than its name is never taken as the option
// it starts: grep's --binary is a flag of its own, not --binary-files
// taking the pattern as its value (`grep --binary . ~/.netrc` read the file
// unseen), and du's --time takes no word either. The reads are unknown.
TEST(ReadsOf, AbbreviatedLongOptionsMakeReadsUnknown) {
  for (const char* line : {"grep --binary . secrets", "grep --binary x -r /home", "du --time /home",
                           "grep --dir=recurse x .", "ls --recur /", "tree --from list"}) {
    EXPECT_FALSE(internal::ReadsOf(Only(line)).unknown.empty()) << line;
  }
  for (const char* line : {"grep --binary-files=text x f", "du --time-style=iso .",
                           "grep --directories=recurse x ."}) {
    EXPECT_TRUE(internal::ReadsOf(Only(line)).unknown.empty()) << line;
  }
  EXPECT_EQ(Policy::Default().Check("grep --binary . /etc/hostname").action, Action::kAsk);
}

TEST(ReadsOf, GitDiffNoIndexAndRepositoryPaths) {
  internal::CommandReads r = internal::ReadsOf(Only("git diff --no-index a b"));
  ASSERT_EQ(r.reads.size(), 3u);
  EXPECT_TRUE(r.reads[0].repository);
  EXPECT_TRUE(r.reads[1].walk_if_directory);
  EXPECT_TRUE(r.reads[2].walk_if_directory);
  // Outside a repository git diff a b is diff --no-index a b.
  EXPECT_TRUE(internal::ReadsOf(Only("git diff a b")).reads[1].walk_if_directory);
  // A word with a colon may be a file to git diff (outside the repository
  // it compares files): it is read as one too.
  EXPECT_EQ(Reads("git diff /outside/pci-0000:00 README.md"),
            (V{".", "/outside/pci-0000:00", "00", "README.md"}));
  EXPECT_FALSE(internal::ReadsOf(Only("git log a b")).reads[1].walk_if_directory);
  // REV:path is from the top level; ./ and ../ from where git runs.
  r = internal::ReadsOf(Only("git -C d show HEAD:src/a.c HEAD:./b :c :0:e -- :/f ':(top)g'"));
  std::vector<std::string> words;
  for (const internal::FileRead& f : r.reads) {
    words.push_back((f.from_top ? "top:" : "") + f.word);
  }
  EXPECT_EQ(words, (V{"d", "top:src/a.c", "d/./b", "top:c", "top:e", "top:f", "top:g"}));
}

class ReadScopeTest : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/tb-reads-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = std::filesystem::canonical(tmpl.c_str()).string();  // as the policy resolves paths
    home_ = root_ + "/home";
    proj_ = home_ + "/proj";
    const char* old = getenv("HOME");
    old_home_ = old != nullptr ? old : "";
    setenv("HOME", home_.c_str(), 1);
    fs::create_directories(proj_ + "/src");
    fs::create_directories(home_ + "/.ssh");
    fs::create_directories(home_ + "/.aws");
    fs::create_directories(home_ + "/data");
    Write(proj_ + "/README.md");
    Write(proj_ + "/src/a.c");
    Write(home_ + "/.ssh/id_ed25519");
    Write(home_ + "/.aws/credentials");
    Write(home_ + "/notes.txt");
    Write(home_ + "/data/x.csv");
    fs::create_symlink(home_ + "/.aws/credentials", proj_ + "/creds");
    fs::create_symlink(home_ + "/notes.txt", proj_ + "/notes");
    context_ = CheckContext{proj_, {proj_}};
  }
  void TearDown() override {
    setenv("HOME", old_home_.c_str(), 1);
    fs::remove_all(root_);
  }
  static void Write(const std::string& path) { std::ofstream(path) << "x\n"; }

  Decision Check(const std::string& line) const { return policy_.Check(line, context_); }
  void ExpectAllowed(const std::string& line) const {
    Decision d = Check(line);
    EXPECT_EQ(ActionName(d.action), "allow") << line << ": " << d.reason;
  }
  // Asks because of a read outside the scope (the default action decided).
  void ExpectOutside(const std::string& line) const {
    Decision d = Check(line);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, "") << line << ": " << d.reason;
    EXPECT_NE(d.reason.find("outside the read scope"), std::string::npos)
        << line << ": " << d.reason;
    EXPECT_FALSE(d.read_blocker.empty()) << line;
  }
  void ExpectSensitive(const std::string& line) const {
    Decision d = Check(line);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, kSensitiveReadRule) << line << ": " << d.reason;
    EXPECT_FALSE(d.read_blocker.empty()) << line;
  }

  std::string root_, home_, proj_, old_home_;
  CheckContext context_;
  Policy policy_ = Policy::Default();
};

TEST_F(ReadScopeTest, InsideTheWorkspaceStaysAllowed) {
  for (const char* line : {"cat README.md",
                           "cat ./src/../README.md",
                           "head -n 3 src/a.c",
                           "grep -rn TODO .",
                           "grep -r TODO",
                           "grep x src/*.c",
                           "cat src/*",
                           "ls",
                           "ls -R src",
                           "ls -la src",
                           "du -sh",
                           "tree",
                           "diff README.md src/a.c",
                           "diff -r src src",
                           "wc -l < README.md",
                           "stat src",
                           "git status",
                           "git log --oneline",
                           "git diff HEAD~1 -- src",
                           "git show HEAD:src/a.c",
                           "realpath src",
                           "cut -d: -f1 README.md",
                           "echo hi",
                           "ps"}) {
    ExpectAllowed(line);
  }
  ExpectAllowed("cat " + proj_ + "/README.md");
}

TEST_F(ReadScopeTest, ReadsOutsideTheWorkspaceAsk) {
  for (const char* line :
       {"cat ../notes.txt", "cat ~/notes.txt", "ls ..", "ls ~", "du ~/data", "tree ../data",
        "grep x ../notes.txt", "grep -r x ~/data", "diff README.md ~/notes.txt",
        "wc < ../notes.txt", "cat /etc/hostname", "git diff --no-index ../notes.txt README.md",
        "git log -- ../data", "cat ../*.txt", "file -m ~/notes.txt x"}) {
    ExpectOutside(line);
  }
  Decision d = Check("cat ~/notes.txt");
  EXPECT_NE(d.reason.find(home_ + "/notes.txt, outside the read scope " + proj_), std::string::npos)
      << d.reason;
  EXPECT_EQ(d.read_blocker, home_ + "/notes.txt");
  Decision walk = Check("du ~/data");
  EXPECT_NE(walk.reason.find("walks " + home_ + "/data"), std::string::npos) << walk.reason;
}

TEST_F(ReadScopeTest, SymlinksOutOfTheWorkspaceCount) {
  Decision d = Check("cat notes");
  EXPECT_EQ(ActionName(d.action), "ask") << d.reason;
  EXPECT_NE(d.reason.find("a symlink to " + home_ + "/notes.txt"), std::string::npos) << d.reason;
  ExpectSensitive("cat creds");  // a link to ~/.aws/credentials
  ExpectSensitive("tail creds");
}

TEST_F(ReadScopeTest, SecretsAskWhateverRuleAllowedTheProgram) {
  for (const char* line : {"cat ~/.ssh/id_ed25519",
                           "tail ~/.aws/credentials",
                           "grep -r PRIVATE ~",
                           "grep -R PRIVATE ..",
                           "cat /etc/shadow",
                           "cat ~/.ssh/*",
                           "ls ~/.ssh",
                           "du ~",
                           "tree ~",
                           "cat < ~/.ssh/id_ed25519",
                           "git show HEAD:.env",
                           "cat id_rsa",
                           "cat key.pem",
                           "cat .env",
                           "cat config/.env.local",
                           "head /root/.bashrc",
                           "ls -R /",
                           "ls -R ..",
                           "tree ..",
                           "cat *"}) {
    ExpectSensitive(line);
  }
  Decision d = Check("cat ~/.ssh/id_ed25519");
  EXPECT_NE(d.reason.find(home_ + "/.ssh/id_ed25519, a sensitive path: ~/.ssh/**"),
            std::string::npos)
      << d.reason;
  // A walk of the workspace enters its .env only once there is one.
  ExpectAllowed("grep -r x .");
  Write(proj_ + "/src/.env");
  ExpectSensitive("grep -r x .");
  ExpectSensitive("du");
  ExpectSensitive("tree src");
  ExpectSensitive("cat src/.e*");
  Decision walk = Check("grep -r x .");
  EXPECT_EQ(walk.read_blocker, proj_ + "/src/.env");
  // An operator rule that allows more still asks; so does the default action.
  absl::StatusOr<Policy> wide = Policy::FromToml(R"(default = "allow"
[[rule]]
id = "cat-anything"
action = "allow"
prefix = ["cat"]
read_paths = ["/**"]
)",
                                                 "p.toml");
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_EQ(wide->Check("cat /etc/hostname", context_).action, Action::kAllow);
  EXPECT_EQ(wide->Check("cat ~/.ssh/id_ed25519", context_).rule_id, kSensitiveReadRule);
  EXPECT_EQ(wide->Check("nl ~/.ssh/id_ed25519", context_).rule_id, kSensitiveReadRule);
  EXPECT_EQ(policy_.Check("nl ~/.ssh/id_ed25519", context_).rule_id, kSensitiveReadRule);
}

TEST_F(ReadScopeTest, OperatorSensitivePathsAndReadPaths) {
  absl::StatusOr<Policy> p =
      Policy::FromToml(R"(sensitive_paths = ["**/secrets.txt", "~/data/private/**"]
[[rule]]
id = "data"
action = "allow"
prefix = ["cat"]
read_paths = ["~/data/**", "."]
)",
                       "p.toml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->sensitive_paths(), (V{"**/secrets.txt", "~/data/private/**"}));
  EXPECT_EQ(p->Check("cat secrets.txt", context_).rule_id, kSensitiveReadRule);
  EXPECT_EQ(p->Check("cat ~/data/private/k", context_).rule_id, kSensitiveReadRule);
  Decision data = p->Check("cat ~/data/x.csv", context_);
  EXPECT_EQ(data.rule_id, "data") << data.reason;
  EXPECT_EQ(data.read_scope, (V{home_ + "/data/**", proj_}));
  EXPECT_EQ(p->Check("cat README.md", context_).action, Action::kAllow);
  EXPECT_EQ(p->Check("cat ~/notes.txt", context_).action, Action::kAsk);
  // A default action of allow names no scope: reads anywhere, but a
  // sensitive path still asks.
  absl::StatusOr<Policy> open = Policy::FromToml("default = \"allow\"\n", "o.toml");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->Check("nl README.md", context_).action, Action::kAllow);
  Decision out = open->Check("nl ../notes.txt", context_);
  EXPECT_EQ(out.action, Action::kAllow) << out.reason;
  // Devices that hold nobody's data are readable from any scope.
  EXPECT_EQ(Policy::Default().Check("tail -f /dev/null", context_).action, Action::kAllow);
  EXPECT_EQ(Policy::Default().Check("head -c 9 /dev/zero", context_).action, Action::kAllow);
  EXPECT_EQ(Policy::Default().Check("cat /dev/sda", context_).action, Action::kAsk);
  Decision key = open->Check("nl ~/.ssh/id_ed25519", context_);
  EXPECT_EQ(key.rule_id, kSensitiveReadRule) << key.reason;
  // read_paths is for allow rules and holds no "".
  EXPECT_FALSE(Policy::FromToml("[[rule]]\naction = \"deny\"\nprefix = [\"x\"]\n"
                                "read_paths = [\"a\"]\n",
                                "p")
                   .ok());
  EXPECT_FALSE(Policy::FromToml("[[rule]]\naction = \"allow\"\nprefix = [\"x\"]\n"
                                "read_paths = [\"\"]\n",
                                "p")
                   .ok());
  // The JSON snapshot keeps both.
  absl::StatusOr<Policy> back = Policy::FromJson(p->ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->sensitive_paths(), p->sensitive_paths());
  EXPECT_EQ(back->ToJson(), p->ToJson());
  EXPECT_EQ(back->Check("cat secrets.txt", context_).rule_id, kSensitiveReadRule);
}

TEST_F(ReadScopeTest, ReadRootsAndUnknownCwd) {
  // The workspace is the read roots, wherever the shell is inside them.
  CheckContext in_src{proj_ + "/src", {proj_}};
  EXPECT_EQ(policy_.Check("cat ../README.md", in_src).action, Action::kAllow);
  EXPECT_EQ(policy_.Check("cat ../../notes.txt", in_src).action, Action::kAsk);
  // No roots: the cwd.
  CheckContext cwd_only{proj_ + "/src"};
  EXPECT_EQ(policy_.Check("cat ../README.md", cwd_only).action, Action::kAsk);
  // Unknown cwd: relative paths below it only.
  EXPECT_EQ(policy_.Check("cat README.md").action, Action::kAllow);
  EXPECT_EQ(policy_.Check("cat ../x").action, Action::kAsk);
  EXPECT_EQ(policy_.Check("cat /etc/hostname").action, Action::kAsk);
  EXPECT_EQ(policy_.Check("cat README.md").reads, (V{"(unknown cwd)/README.md"}));
  EXPECT_EQ(policy_.CheckHeadless({"cat", "/etc/hostname"}).action, Action::kDeny);
}

TEST_F(ReadScopeTest, WorkspaceCannotBeHomeOrSystemRoot) {
  fs::create_directories(home_ + "/.config/app");
  Write(home_ + "/.profile");
  struct Case {
    std::string root;
    std::string line;
    std::string why;
  };
  for (const Case& c : std::vector<Case>{
           {home_, "cat .profile", "is the home directory"},
           {home_, "cat notes.txt", "is the home directory"},
           {root_, "cat home/notes.txt", "is an ancestor of the home directory"},
           {"/", "cat etc/passwd", "is the root directory"},
           {"/", "cat /etc/passwd", "is the root directory"},
           {"/etc", "cat passwd", "is a system directory (/etc)"},
           {"/usr/share", "cat dict/words", "is a system directory (/usr)"},
           {"/tmp", "cat x", "is "},
           {"/home", "ls", "is a system directory (/home)"},
           {"/var", "ls", "is a system directory (/var)"},
           {"/var/log", "ls", "is a system directory (/var/log)"},
           {"/var/lib/dpkg", "ls", "is a system directory (/var/lib)"},
           {"/var/tmp", "ls", "is a system directory (/var/tmp)"},
           {"/proc/1", "ls", "is a system directory (/proc)"},
           {"/private/etc", "ls", "is a system directory (/etc)"},
           {home_ + "/.config", "ls app", "is a dot-directory of the home"},
           {home_ + "/.config/app", "ls", "is a dot-directory of the home"},
       }) {
    // As the read roots, and as the cwd a terminal opened in (no roots).
    for (const CheckContext& ctx : {CheckContext{c.root, {c.root}}, CheckContext{c.root}}) {
      Decision d = policy_.Check(c.line, ctx);
      EXPECT_EQ(ActionName(d.action), "ask") << c.root << ": " << c.line << ": " << d.reason;
      EXPECT_NE(d.reason.find("the workspace "), std::string::npos) << d.reason;
      EXPECT_NE(d.reason.find(c.why), std::string::npos) << d.reason;
      EXPECT_NE(d.reason.find(": reads ask"), std::string::npos) << d.reason;
      EXPECT_TRUE(d.read_scope.empty()) << c.root;
    }
  }
  // Opened in the home, its history is a secret besides.
  Write(home_ + "/.bash_history");
  EXPECT_EQ(policy_.Check("cat .bash_history", CheckContext{home_}).action, Action::kAsk);
  // A symlink to the home is the home.
  fs::create_symlink(home_, root_ + "/h");
  EXPECT_EQ(policy_.Check("cat notes.txt", CheckContext{root_ + "/h", {root_ + "/h"}}).action,
            Action::kAsk);
  // A broad root is dropped, the others stay; commands that read nothing run.
  CheckContext mixed{proj_, {home_, proj_}};
  EXPECT_EQ(policy_.Check("cat README.md", mixed).action, Action::kAllow);
  EXPECT_EQ(policy_.Check("cat ../notes.txt", mixed).action, Action::kAsk);
  EXPECT_EQ(policy_.Check("echo hi", CheckContext{home_}).action, Action::kAllow);
  // Subdirectories of /tmp and of the home are workspaces; so are those of
  // /opt, /srv, /mnt and /var/www.
  EXPECT_EQ(policy_.Check("cat README.md", CheckContext{proj_}).action, Action::kAllow);
  for (const char* root : {"/opt/tb-proj", "/srv/tb-app", "/mnt/tb-disk/w", "/var/www/tb-site",
                           "/var/folders/xy/T/tb-w"}) {
    EXPECT_EQ(policy_.Check("cat x", CheckContext{root}).action, Action::kAllow) << root;
  }
  // Operator read_paths are the operator's choice.
  absl::StatusOr<Policy> p = Policy::FromToml(R"([[rule]]
id = "home"
action = "allow"
prefix = ["cat"]
read_paths = ["~/**"]
)",
                                              "p.toml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Check("cat notes.txt", CheckContext{home_}).action, Action::kAllow);
}

TEST_F(ReadScopeTest, UnresolvableReadWordsAsk) {
  // The decision for the one command of `line` whose text is `command`.
  auto decision = [this](const std::string& line, const std::string& command) {
    Decision d = Check(line);
    for (const CommandDecision& cd : d.commands) {
      if (cd.command == command) return cd;
    }
    ADD_FAILURE() << line << ": no " << command;
    return CommandDecision{};
  };
  for (const char* line :
       {"cat ~-/x", "cat ~nosuchuser-tb/x", "cat ~nosuchuser-tb", "grep -r x ~-", "cd - && cat x",
        "cd ~nosuchuser-tb; cat x", "popd; cat x", "cd 'a$b/../..'; cat x"}) {
    std::string l = line;
    CommandDecision d = decision(l, l.find("cat x") != std::string::npos ? "cat x" : l);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_NE(d.reason.find("no read scope can check"), std::string::npos)
        << line << ": " << d.reason;
  }
  // A quoted $ or ` is part of the name, judged like any other.
  Write(proj_ + "/k$");
  ExpectAllowed("cat 'k$'");
  ExpectAllowed("cat 'a`b'");
  ExpectOutside("cat '../k$'");
  ExpectOutside("cat '/etc/$x'");
  ExpectOutside("cat '../$HOME'");
  // More cd targets than the bound: relative reads are not known.
  CommandDecision many = decision("cd a; cd b; cd c; cd d; cd e; cat x", "cat x");
  EXPECT_NE(many.reason.find("no read scope can check"), std::string::npos) << many.reason;
  EXPECT_EQ(ActionName(decision("cd src; cat a.c", "cat a.c").action), "allow");
  // Absolute reads after a cd that cannot be followed are still judged.
  EXPECT_EQ(
      ActionName(
          decision("cd - && cat " + proj_ + "/README.md", "cat " + proj_ + "/README.md").action),
      "allow");
  ExpectAllowed("cat ~+/README.md");
}

TEST_F(ReadScopeTest, GlobsWithTooManyMatchesAsk) {
  fs::create_directories(proj_ + "/many");
  for (int i = 0; i < 1100; ++i) Write(proj_ + "/many/f" + std::to_string(i));
  Decision d = Check("cat many/*");
  EXPECT_EQ(ActionName(d.action), "ask") << d.reason;
  EXPECT_NE(d.reason.find("matches more than 1024 names"), std::string::npos) << d.reason;
  ExpectAllowed("cat many/f1*");
}

TEST_F(ReadScopeTest, GitReadsItsRepository) {
  fs::create_directories(proj_ + "/.git");
  // From a subdirectory, git reads the whole work tree.
  CheckContext in_src{proj_ + "/src", {proj_}};
  EXPECT_EQ(policy_.Check("git status", in_src).action, Action::kAllow);
  EXPECT_EQ(policy_.Check("git status", context_).reads, (V{proj_ + " (walk)"}));
  // A workspace inside the repository does not cover it.
  CheckContext src_only{proj_ + "/src", {proj_ + "/src"}};
  Decision d = policy_.Check("git log", src_only);
  EXPECT_EQ(ActionName(d.action), "ask") << d.reason;
  EXPECT_NE(d.reason.find("walks " + proj_), std::string::npos) << d.reason;
  EXPECT_EQ(
      ActionName(
          policy_.Check("git -C .. log", CheckContext{proj_ + "/src", {proj_ + "/src"}}).action),
      "ask");
  // REV:path is from the top level, ./ from the cwd.
  Decision show = policy_.Check("git show HEAD:src/a.c", in_src);
  EXPECT_EQ(show.reads, (V{proj_ + " (walk)", proj_ + "/src/a.c"})) << show.reason;
  show = policy_.Check("git show HEAD:./a.c", in_src);
  EXPECT_EQ(show.reads, (V{proj_ + " (walk)", proj_ + "/src/a.c"})) << show.reason;
  EXPECT_EQ(policy_.Check("git show HEAD:config/id_rsa", in_src).rule_id, kSensitiveReadRule);
  EXPECT_EQ(policy_.Check("git log -- :/deploy/prod.pem", in_src).rule_id, kSensitiveReadRule);
  // A .env anywhere in the work tree is seen, from anywhere in it.
  Write(proj_ + "/.env");
  EXPECT_EQ(policy_.Check("git status", in_src).rule_id, kSensitiveReadRule);
  fs::remove(proj_ + "/.env");
  // A repository whose top is the home: outside the workspace.
  fs::remove_all(proj_ + "/.git");
  fs::create_directories(home_ + "/.git");
  Decision home = Check("git status");
  EXPECT_EQ(ActionName(home.action), "ask") << home.reason;
  EXPECT_EQ(home.reads, (V{home_ + " (walk)"}));
}

// A git directory git accepts: HEAD, objects/ and refs/.
void MakeGitDir(const std::string& dir) {
  fs::create_directories(dir + "/objects/info");
  fs::create_directories(dir + "/objects/pack");
  fs::create_directories(dir + "/refs/heads");
  std::ofstream(dir + "/HEAD") << "ref: refs/heads/main\n";
}

TEST_F(ReadScopeTest, GitReadsTheRepositoryWhereverItIs) {
  const std::string priv = root_ + "/private/.git";  // outside the workspace
  MakeGitDir(priv);
  auto reset = [this] { fs::remove_all(proj_ + "/.git"); };
  auto expect_outside = [this](const std::string& line, const std::string& what) {
    Decision d = Check(line);
    EXPECT_EQ(ActionName(d.action), "ask") << what << ": " << line << ": " << d.reason;
    EXPECT_NE(d.reason.find("outside the read scope"), std::string::npos)
        << what << ": " << line << ": " << d.reason;
  };
  const std::vector<std::string> lines = {"git log -p", "git show HEAD:README.md", "git status",
                                          "git diff"};
  // A .git file naming a git dir elsewhere, absolute or relative to the
  // file's directory.
  for (const std::string& gitdir : {priv, std::string("../../private/.git")}) {
    std::ofstream(proj_ + "/.git") << "gitdir: " << gitdir << "\n";
    for (const std::string& line : lines) expect_outside(line, "gitdir: " + gitdir);
    reset();
  }
  // A .git symlink to one.
  fs::create_symlink(priv, proj_ + "/.git");
  for (const std::string& line : lines) expect_outside(line, ".git symlink");
  reset();
  // A linked worktree's git dir inside the workspace whose commondir is not.
  MakeGitDir(proj_ + "/wt");
  std::ofstream(proj_ + "/wt/commondir") << priv << "\n";
  std::ofstream(proj_ + "/.git") << "gitdir: wt\n";
  expect_outside("git log -p", "commondir");
  fs::remove_all(proj_ + "/wt");
  reset();
  // Objects borrowed through alternates, or through a symlink in .git.
  MakeGitDir(proj_ + "/.git");
  ExpectAllowed("git log -p");
  std::ofstream(proj_ + "/.git/objects/info/alternates") << priv << "/objects\n";
  expect_outside("git log -p", "alternates");
  // The outside entry after 64 KiB of comments: a file too large to read
  // whole asks too (it was read cut at 64 KiB, its last line unchecked).
  {
    std::ofstream alternates(proj_ + "/.git/objects/info/alternates");
    for (int i = 0; i < 2048; ++i) alternates << "# " << std::string(60, 'x') << "\n";
    alternates << priv << "/objects\n";
  }
  Decision big = Check("git log -p");
  EXPECT_EQ(ActionName(big.action), "ask") << big.reason;
  EXPECT_NE(big.reason.find("alternates: larger than"), std::string::npos) << big.reason;
  fs::remove(proj_ + "/.git/objects/info/alternates");
  fs::remove_all(proj_ + "/.git/objects/pack");
  fs::create_symlink(priv + "/objects/pack", proj_ + "/.git/objects/pack");
  Decision linked = Check("git log -p");
  EXPECT_EQ(ActionName(linked.action), "ask") << linked.reason;
  EXPECT_NE(linked.reason.find("a symlink to " + priv), std::string::npos) << linked.reason;
  reset();
  // A submodule: its work tree's .git file, or a repository under the
  // superproject's modules/ (its alternates), names a repository elsewhere;
  // git status and diff --submodule=diff open it.
  MakeGitDir(proj_ + "/.git");
  fs::create_directories(proj_ + "/sub");
  std::ofstream(proj_ + "/sub/.git") << "gitdir: " << priv << "\n";
  for (const char* line : {"git status", "git diff --cached --submodule=diff"}) {
    expect_outside(line, "a submodule's .git file");
  }
  fs::remove_all(proj_ + "/sub");
  MakeGitDir(proj_ + "/.git/modules/sub");
  ExpectAllowed("git status");
  std::ofstream(proj_ + "/.git/modules/sub/objects/info/alternates") << priv << "/objects\n";
  expect_outside("git status", "a module's alternates");
  reset();
  // --git-dir naming a .git file that leads elsewhere (an operator rule
  // allows any git here; the default ones do not take --git-dir).
  absl::StatusOr<Policy> any_git = Policy::FromToml(
      "[[rule]]\nid = \"git\"\naction = \"allow\"\nprefix = [\"git\"]\n", "g.toml");
  ASSERT_TRUE(any_git.ok()) << any_git.status();
  MakeGitDir(proj_ + "/mine.git");
  EXPECT_EQ(any_git->Check("git --git-dir=mine.git log -p", context_).action, Action::kAllow);
  std::ofstream(proj_ + "/other.git") << "gitdir: " << priv << "\n";
  Decision git_dir = any_git->Check("git --git-dir=other.git log -p", context_);
  EXPECT_EQ(ActionName(git_dir.action), "ask") << git_dir.reason;
  EXPECT_NE(git_dir.reason.find("walks " + priv), std::string::npos) << git_dir.reason;
  fs::remove(proj_ + "/other.git");
  fs::remove_all(proj_ + "/mine.git");
  // A .git that is no repository to git: git looks further up, here to a
  // repository whose top is the home.
  MakeGitDir(home_ + "/.git");
  fs::create_directories(proj_ + "/.git");
  Decision up = Check("git log -p");
  EXPECT_EQ(ActionName(up.action), "ask") << up.reason;
  EXPECT_NE(up.reason.find("reads " + home_), std::string::npos) << up.reason;
  fs::remove_all(home_ + "/.git");
  ExpectAllowed("git log -p");
  reset();
  // Inside the workspace, all of it: allowed.
  MakeGitDir(proj_ + "/wt");
  MakeGitDir(proj_ + "/main.git");
  std::ofstream(proj_ + "/wt/commondir") << "../main.git\n";
  std::ofstream(proj_ + "/.git") << "gitdir: wt\n";
  ExpectAllowed("git log -p");
  ExpectAllowed("git show HEAD:README.md");
}

TEST_F(ReadScopeTest, ProcMagicLinksAreNeverHarmless) {
  // "Reads anywhere, secrets still ask": the secret behind /proc/self/root
  // is the secret.
  absl::StatusOr<Policy> open = Policy::FromToml("default = \"allow\"\n", "o.toml");
  ASSERT_TRUE(open.ok());
  const std::string creds = home_ + "/.aws/credentials";
  fs::create_symlink("/proc/self/cwd/../.aws/credentials", proj_ + "/through-cwd");
  for (const std::string& line : V{
           "cat /proc/self/root" + creds,
           "cat /proc/thread-self/root" + creds,
           "cat /proc/self/task/1/root" + creds,
           "cat /proc/self/root/proc/self/root" + creds,
           "cat /proc/self/root/../../.." + creds,
           "cat /proc/self/fd/../root" + creds,
           "cat /proc/self/cwd/../.aws/credentials",
           "cat /proc/self/cwd/../notes.txt",
           "cat /proc/self/fd/3",
           "cat /dev/fd/3",
           "cat /proc/self/exe",
           "cat /proc/self/map_files/1000-2000",
           "cat /proc/self/task/1/cwd/x",
           "cat through-cwd",
           "grep -R x /proc/self",
       }) {
    Decision d = open->Check(line, context_);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, kSensitiveReadRule) << line << ": " << d.reason;
  }
  Decision cd = open->Check("cd /proc/self/cwd/.. && cat .aws/credentials", context_);
  EXPECT_EQ(ActionName(cd.action), "ask") << cd.reason;
  // Another process's root or cwd is never allowed either.
  EXPECT_NE(ActionName(open->Check("cat /proc/1/root" + creds, context_).action), "allow");
  EXPECT_NE(ActionName(open->Check("cat /proc/1/cwd/x", context_).action), "allow");
  // Under an allow rule's scope too, the workspace reached through one
  // included.
  ExpectSensitive("cat /proc/self/cwd/README.md");
  ExpectSensitive("cat /dev/fd/3");
  // stdin is stdin.
  ExpectAllowed("cat /dev/stdin");
  EXPECT_EQ(ActionName(open->Check("cat /dev/stdin", context_).action), "allow");
}

TEST_F(ReadScopeTest, SecretNamesMatchInAnyCase) {
  // A case-insensitive file system (macOS, /mnt/c) opens these as the secrets.
  for (const char* name : {".ENV", "ID_RSA", "Server.PEM", ".Env.Local", "Credentials.JSON"}) {
    Write(proj_ + "/" + name);
    ExpectSensitive(std::string("cat ") + name);
    ExpectSensitive("grep -r x .");
    fs::remove(proj_ + "/" + name);
  }
  ExpectSensitive("cat ~/.AWS/credentials");
  ExpectSensitive("cat ~/.SSH/id_ed25519");
  ExpectSensitive("cat /ETC/SHADOW");
  ExpectAllowed("cat README.md");
}

TEST_F(ReadScopeTest, HomeSecretsAreSecretInAnyHome) {
  // Another user's home (the broker runs as root), a backup, /mnt/c/Users/x.
  const std::string alice = root_ + "/alice";
  for (const char* file :
       {".aws/credentials", ".kube/config", ".ssh/config", ".gnupg/pubring.kbx",
        ".config/gh/hosts.yml", ".config/gcloud/credentials.db", ".azure/accessTokens.json",
        ".password-store/x.gpg", ".docker/config.json", ".config/git/credentials"}) {
    fs::create_directories(fs::path(alice + "/" + file).parent_path());
    Write(alice + "/" + file);
  }
  Write(alice + "/notes.txt");
  CheckContext in_alice{alice, {alice}};
  for (const char* line :
       {"cat .aws/credentials", "cat .kube/config", "cat .ssh/config", "ls .ssh",
        "cat .gnupg/pubring.kbx", "cat .config/gh/hosts.yml", "cat .config/gcloud/credentials.db",
        "cat .azure/accessTokens.json", "cat .password-store/x.gpg", "cat .config/git/credentials",
        "grep -r x .", "du", "cat backup/home/bob/.aws/config"}) {
    Decision d = policy_.Check(line, in_alice);
    EXPECT_EQ(d.rule_id, kSensitiveReadRule) << line << ": " << d.reason;
  }
  EXPECT_EQ(policy_.Check("cat notes.txt", in_alice).action, Action::kAllow);
  // The home's own still name the ~ entry.
  Decision own = Check("cat ~/.aws/credentials");
  EXPECT_NE(own.reason.find("a sensitive path: ~/.aws/**"), std::string::npos) << own.reason;
}

TEST_F(ReadScopeTest, GitDiffNoIndexWalksDirectories) {
  ExpectAllowed("git diff --no-index src src");
  Write(proj_ + "/src/.env");
  ExpectSensitive("git diff --no-index src src");
  ExpectSensitive("git diff --no-index -- src src");
  ExpectSensitive("git diff src src");
}

TEST_F(ReadScopeTest, WalksThatFollowLinksCheckWhereTheyLead) {
  fs::create_directories(proj_ + "/w/sub");
  fs::create_directories(proj_ + "/v");
  fs::create_directories(proj_ + "/in");
  fs::create_symlink(home_ + "/notes.txt", proj_ + "/w/sub/out");
  fs::create_symlink("../../../data", proj_ + "/w/up");  // ~/data, a directory
  fs::create_symlink("/etc/passwd", proj_ + "/v/pw");
  fs::create_symlink("../README.md", proj_ + "/in/readme");
  for (const char* line : {"grep -R x w", "grep -R x v", "tree -l w", "du -L -a w", "du -L v",
                           "ls -RL w", "ls -R --dereference v", "grep --dereference-recursive x v",
                           "grep -d rec -R x v", "diff -r w w", "diff w/sub w/sub", "diff v in"}) {
    Decision d = Check(line);
    EXPECT_EQ(ActionName(d.action), "ask") << line << ": " << d.reason;
    EXPECT_NE(d.reason.find("a symlink to "), std::string::npos) << line << ": " << d.reason;
  }
  // Walks that do not follow links, and links that stay inside, run.
  for (const char* line : {"grep -r x w", "tree w", "du -a v", "ls -R w", "ls -L v", "grep -R x in",
                           "tree -l in", "ls -RL in"}) {
    ExpectAllowed(line);
  }
}

TEST_F(ReadScopeTest, MoreSecretNamesAsk) {
  for (const char* name : {".envrc",           "prod.env",         "cert.p12",
                           "cert.pfx",         "keys.jks",         "release.keystore",
                           "credentials.json", "prod.tfvars",      "terraform.tfstate",
                           ".vault-token",     ".npmrc",           ".pypirc",
                           ".netrc",           ".git-credentials", ".docker/config.json",
                           ".bash_history",    ".zsh_history",     ".python_history",
                           ".psql_history",    ".pgpass",          ".my.cnf",
                           "secrets.yaml",     "secrets.json"}) {
    std::string path = proj_ + "/cfg/" + name;
    fs::create_directories(fs::path(path).parent_path());
    Write(path);
    ExpectSensitive(std::string("cat cfg/") + name);
    ExpectSensitive("grep -r x cfg");
    fs::remove_all(proj_ + "/cfg");
  }
  // Code about secrets is not a secret.
  Write(proj_ + "/secrets.go");
  ExpectAllowed("cat secrets.go");
}

TEST_F(ReadScopeTest, PrintedGlobsListTheirDirectory) {
  EXPECT_EQ(Reads("echo ~/*"), (V{"~"}));
  EXPECT_EQ(Reads("printf '%s\\n' /etc/*.conf src/*/x *"), (V{"/etc", "src", "."}));
  EXPECT_EQ(Reads("basename /*"), (V{"/"}));
  for (const char* line :
       {"echo ~/*", "echo ../*", "echo /etc/*", "basename ~/data/*", "dirname ../*/x"}) {
    ExpectOutside(line);
  }
  ExpectSensitive("echo ~/.ssh/*");
  for (const char* line : {"echo *", "echo src/*.c", "echo hi", "basename src/*"}) {
    ExpectAllowed(line);
  }
}

TEST_F(ReadScopeTest, ExplanationFields) {
  Decision d = Check("grep -r x ~/data | head -n 1");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_EQ(d.reads, (V{home_ + "/data (walk)"}));
  EXPECT_EQ(d.read_scope, (V{proj_}));
  EXPECT_EQ(d.read_blocker, home_ + "/data");
  nlohmann::json j = d.ToJson();
  EXPECT_EQ(j["reads"], nlohmann::json(V{home_ + "/data (walk)"}));
  EXPECT_EQ(j["read_scope"], nlohmann::json(V{proj_}));
  EXPECT_EQ(j["read_blocker"], home_ + "/data");
  EXPECT_EQ(j["commands"][0]["reads"], nlohmann::json(V{home_ + "/data (walk)"}));
  EXPECT_TRUE(j["commands"][1].contains("read_blocker"));
  Decision ok = Check("cat README.md");
  EXPECT_EQ(ok.reads, (V{proj_ + "/README.md"}));
  EXPECT_EQ(ok.read_blocker, "");
}

TEST_F(ReadScopeTest, AlwaysWritesExactReadPaths) {
  absl::StatusOr<std::vector<Rule>> rules = policy_.RulesToAllow("cat ../notes.txt", context_);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].read_paths, (V{home_ + "/notes.txt"}));
  EXPECT_NE(RuleToToml((*rules)[0]).find("read_paths = ["), std::string::npos);
  // The rule allows exactly that, once it is in the file.
  absl::StatusOr<Policy> with = Policy::FromToml(RuleToToml((*rules)[0]), "p.toml");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->Check("cat ../notes.txt", context_).action, Action::kAllow);
  EXPECT_EQ(with->Check("cat ../notes.txt", CheckContext{proj_ + "/src", {proj_ + "/src"}}).action,
            Action::kAsk);
  // A walk as dir/**, a symlink's target too, a glob character escaped.
  rules = policy_.RulesToAllow("grep -r x ~/data", context_);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ((*rules)[0].read_paths, (V{home_ + "/data/**"}));
  rules = policy_.RulesToAllow("cat notes", context_);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ((*rules)[0].read_paths, (V{proj_ + "/notes", home_ + "/notes.txt"}));
  Write(home_ + "/a*b");
  rules = policy_.RulesToAllow("cat '../a*b'", context_);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ((*rules)[0].read_paths.back(), home_ + "/a\\*b");
  // Inside the workspace: no read_paths needed.
  rules = policy_.RulesToAllow("nl README.md", context_);
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_TRUE((*rules)[0].read_paths.empty());
  // Secrets and unknown reads are never "always".
  absl::StatusOr<std::vector<Rule>> secret =
      policy_.RulesToAllow("cat ~/.ssh/id_ed25519", context_);
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(secret.status().message().find("sensitive"), std::string::npos);
  EXPECT_FALSE(policy_.RulesToAllow("sha256sum -c SUMS", context_).ok());
  EXPECT_FALSE(policy_.RulesToAllow("ps aux", context_).ok());
}

TEST(ProcessListing, OthersProcessesAsk) {
  Policy p = Policy::Default();
  for (const char* line :
       {"ps aux", "ps -ef", "ps -e", "ps ax", "ps -A", "ps -f -e", "ps x", "ps -a", "ps --deselect",
        "ps -U nobody", "ps -u nobody", "ps -unobody", "ps --user nobody", "ps -p 1", "ps 1",
        "ps -C sshd", "ps -N", "ps -o args -e", "ps --pid=1"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.action, Action::kAsk) << line << ": " << d.reason;
    EXPECT_EQ(d.rule_id, kProcessListingRule) << line << ": " << d.reason;
  }
  EXPECT_EQ(p.Check("ps eww").rule_id, "default.ps-environment");
  for (const char* line : {"ps", "ps -o pid,comm", "ps -f", "ps u", "ps -o pid,args --forest",
                           "ps --format pid,args"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.action, Action::kAllow) << line << ": " << d.reason;
  }
}

}  // namespace
}  // namespace termbridge::policy
