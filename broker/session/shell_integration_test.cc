// Shell integration: the OSC 133 parser finds every mark whatever the chunk
// boundaries and ignores everything else, and real bash, zsh and sh started
// with PrepareShell in a PTY report each command's output span and exit code.
#include "broker/session/shell_integration.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/session/clean_text.h"
#include "broker/session/terminal.h"
#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

// "A@4 D;3@20": kind, exit code when present, offset of the ESC.
std::string Describe(const std::vector<ShellMark>& marks) {
  std::string out;
  for (const ShellMark& m : marks) {
    if (!out.empty()) out += ' ';
    out += ShellMarkName(m.kind);
    if (m.exit_code) out += ";" + std::to_string(*m.exit_code);
    out += "@" + std::to_string(m.offset) + "-" + std::to_string(m.end_offset);
  }
  return out;
}

std::string Kinds(const std::vector<ShellMark>& marks) {
  std::string out;
  for (const ShellMark& m : marks) out += ShellMarkName(m.kind);
  return out;
}

std::vector<ShellMark> ParseWhole(std::string_view stream, uint64_t base = 0) {
  Osc133Parser parser;
  parser.Feed(base, stream);
  return parser.TakeMarks();
}

// A prompt, a command with output and exit 3, a title OSC, and a D without a
// code, mixing BEL and ESC \ terminators.
const std::string kStream =
    "junk\x1b[1m\x1b]133;A\x07$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C\x07hi\r\n"
    "\x1b]133;D;3\x07\x1b]0;my title\x07\x1b]133;D\x1b\\tail";

TEST(Osc133ParserTest, FindsMarksWithOffsetsAndBothTerminators) {
  std::vector<ShellMark> marks = ParseWhole(kStream, 1000);
  auto at = [](const std::string& needle, size_t from = 0) {
    return 1000 + kStream.find(needle, from);
  };
  std::string expected = "A@" + std::to_string(at("\x1b]133;A")) + "-" + std::to_string(at("$ ")) +
                         " B@" + std::to_string(at("\x1b]133;B")) + "-" + std::to_string(at("ls")) +
                         " C@" + std::to_string(at("\x1b]133;C")) + "-" + std::to_string(at("hi")) +
                         " D;3@" + std::to_string(at("\x1b]133;D;3")) + "-" +
                         std::to_string(at("\x1b]0;")) + " D@" +
                         std::to_string(at("\x1b]133;D\x1b")) + "-" + std::to_string(at("tail"));
  EXPECT_EQ(Describe(marks), expected);
}

TEST(Osc133ParserTest, SplittingAtEveryBytePositionGivesTheSameMarks) {
  const std::string whole = Describe(ParseWhole(kStream, 7));
  for (size_t split = 0; split <= kStream.size(); ++split) {
    Osc133Parser parser;
    parser.Feed(7, std::string_view(kStream).substr(0, split));
    std::vector<ShellMark> marks = parser.TakeMarks();
    parser.Feed(7 + split, std::string_view(kStream).substr(split));
    std::vector<ShellMark> rest = parser.TakeMarks();
    marks.insert(marks.end(), rest.begin(), rest.end());
    EXPECT_EQ(Describe(marks), whole) << "split at " << split;
  }
  Osc133Parser bytewise;
  for (size_t i = 0; i < kStream.size(); ++i) bytewise.Feed(7 + i, kStream.substr(i, 1));
  EXPECT_EQ(Describe(bytewise.TakeMarks()), whole);
}

TEST(Osc133ParserTest, ExitCodeIsOptionalAndMustBeANumber) {
  std::vector<ShellMark> marks = ParseWhole(
      "\x1b]133;D;0\x07\x1b]133;D;130\x1b\\\x1b]133;D\x07\x1b]133;D;\x07"
      "\x1b]133;D;abc\x07\x1b]133;D;2;aid=7\x07");
  ASSERT_EQ(marks.size(), 6u);
  for (const ShellMark& m : marks) EXPECT_EQ(m.kind, ShellMark::kCommandEnd);
  EXPECT_EQ(marks[0].exit_code, 0);
  EXPECT_EQ(marks[1].exit_code, 130);
  EXPECT_EQ(marks[2].exit_code, std::nullopt);
  EXPECT_EQ(marks[3].exit_code, std::nullopt);
  EXPECT_EQ(marks[4].exit_code, std::nullopt);
  EXPECT_EQ(marks[5].exit_code, 2);
}

TEST(Osc133ParserTest, IgnoresOtherOscsAndOtherEscapes) {
  std::vector<ShellMark> marks = ParseWhole(
      "\x1b]0;133;A\x07"                          // a title that mentions 133
      "\x1b]2;title\x1b\\"                        // another title, ST-terminated
      "\x1b]1337;SetMark\x07"                     // iTerm's OSC 1337
      "\x1b]1330;A\x07\x1b]133;Z\x07"             // near misses
      "\x1b]133;AB\x07\x1b]133\x07"               // kind must be one letter
      "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"  // hyperlink
      "\x1b[0m\x1b(B\x9d"
      "133;A\x07"              // CSI, charset, 8-bit OSC (not in UTF-8)
      "\x1b]133;A;cl=m\x07");  // a real mark with an option
  EXPECT_EQ(Kinds(marks), "A");
}

TEST(Osc133ParserTest, ToleratesGarbageAndAbortedSequences) {
  const std::string stream =
      "\x1b\x1b\x1b]133;A\x07"        // the last ESC before ']' starts the mark
      "\x1b]133;B\x18"                // CAN aborts
      "\x1b]7;file://h/unterminated"  // never terminated: the next ESC ] replaces it
      "\x1b]133;C\x07"
      "\x1b]133;D;1\x1bX\x07"  // ESC X aborts; the BEL is then plain text
      "\x07\x1b\\\x1b]133;D;5\x07";
  std::vector<ShellMark> marks = ParseWhole(stream);
  EXPECT_EQ(Kinds(marks), "ACD");
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0].offset, 2u);
  EXPECT_EQ(marks[1].offset, stream.find("\x1b]133;C"));
  EXPECT_EQ(marks[2].exit_code, 5);
}

TEST(Osc133ParserTest, DropsOversizedOscsAndKeepsGoing) {
  std::string stream = "\x1b]133;D;" + std::string(Osc133Parser::kMaxOscBytes, '7') + "\x07";
  stream += "\x1b]0;" + std::string(1 << 20, 't');  // a huge unterminated title
  stream += "\x1b]133;A\x07";
  Osc133Parser parser;
  for (size_t i = 0; i < stream.size(); i += 1000) {
    parser.Feed(i, std::string_view(stream).substr(i, 1000));
  }
  std::vector<ShellMark> marks = parser.TakeMarks();
  EXPECT_EQ(Kinds(marks), "A");
  // Exactly at the limit is still parsed.
  std::string fits = "133;D;" + std::string(Osc133Parser::kMaxOscBytes - 6, '0');
  EXPECT_EQ(Kinds(ParseWhole("\x1b]" + fits + "\x07")), "D");
}

TEST(Osc133ParserTest, OverlapIsSkippedAndAGapResets) {
  Osc133Parser parser;
  parser.Feed(0, "ab\x1b]133;A\x07");
  parser.Feed(0, "ab\x1b]133;A\x07\x1b]133;B\x07");  // first 10 bytes already seen
  EXPECT_EQ(Kinds(parser.TakeMarks()), "AB");
  parser.Feed(parser.next_offset(), "\x1b]133;");
  parser.Feed(parser.next_offset() + 50, "C\x07");  // the rest of that OSC was lost
  EXPECT_TRUE(parser.TakeMarks().empty());
  parser.Feed(parser.next_offset(), "\x1b]133;C\x07");
  EXPECT_EQ(Kinds(parser.TakeMarks()), "C");
}

TEST(ShellIntegrationTest, DetectShellByBasename) {
  EXPECT_EQ(DetectShell("/bin/bash"), ShellKind::kBash);
  EXPECT_EQ(DetectShell("bash"), ShellKind::kBash);
  EXPECT_EQ(DetectShell("/usr/bin/zsh"), ShellKind::kZsh);
  EXPECT_EQ(DetectShell("/bin/sh"), ShellKind::kSh);
  EXPECT_EQ(DetectShell("/usr/bin/dash"), ShellKind::kSh);
  EXPECT_EQ(DetectShell("/bin/ash"), ShellKind::kSh);
  EXPECT_EQ(DetectShell("/usr/bin/fish"), ShellKind::kOther);
  EXPECT_EQ(DetectShell("/opt/bash/bin/bashful"), ShellKind::kOther);
}

// A private temporary directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/tb_shell_test_XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

mode_t ModeOf(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

std::string FindInPath(const std::string& name) {
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

TEST(ShellIntegrationTest, RcFilesArePrivate) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string runtime = tmp.path() + "/run/tb";
  auto bash = PrepareShell("/bin/bash", runtime);
  ASSERT_TRUE(bash.ok()) << bash.status();
  EXPECT_TRUE(bash->integrated);
  EXPECT_EQ(bash->argv, (std::vector<std::string>{"/bin/bash", "--noprofile", "--rcfile",
                                                  runtime + "/bashrc", "-i"}));
  EXPECT_EQ(ModeOf(runtime), 0700u);
  EXPECT_EQ(ModeOf(runtime + "/bashrc"), 0600u);

  auto zsh = PrepareShell("zsh", runtime + "/");
  ASSERT_TRUE(zsh.ok()) << zsh.status();
  ASSERT_EQ(zsh->extra_env.size(), 1u);
  EXPECT_EQ(zsh->extra_env[0].first, "ZDOTDIR");
  EXPECT_EQ(ModeOf(zsh->extra_env[0].second), 0700u);
  EXPECT_EQ(ModeOf(zsh->extra_env[0].second + "/.zshrc"), 0600u);

  auto sh = PrepareShell("/usr/bin/dash", runtime);
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_FALSE(sh->integrated);
  ASSERT_EQ(sh->extra_env.size(), 1u);
  EXPECT_EQ(sh->extra_env[0].first, "ENV");
  EXPECT_EQ(ModeOf(sh->extra_env[0].second), 0600u);
  // Preparing again replaces the files and leaves no temporaries behind.
  ASSERT_TRUE(PrepareShell("/bin/bash", runtime).ok());
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(runtime)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 3u);  // bashrc, shrc, zsh/
}

TEST(ShellIntegrationTest, RefusesUnsafeRuntimeDirs) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  EXPECT_EQ(PrepareShell("bash", "relative/dir").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string shared = tmp.path() + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  EXPECT_EQ(PrepareShell("bash", shared).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PrepareShell("sh", tmp.path() + "/$HOME").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShellIntegrationTest, OtherShellsAreStartedPlainAndNotIntegrated) {
  auto other = PrepareShell("/usr/bin/fish", "relative-is-fine-here");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->argv, (std::vector<std::string>{"/usr/bin/fish", "-i"}));
  EXPECT_TRUE(other->extra_env.empty());
  EXPECT_FALSE(other->integrated);
}

// Runs a prepared shell in a real PTY and collects its marks as output arrives.
class ShellUnderTest {
 public:
  ShellUnderTest(const std::string& shell_path, const std::string& runtime_dir) {
    auto launch = PrepareShell(shell_path, runtime_dir);
    EXPECT_TRUE(launch.ok()) << launch.status();
    if (!launch.ok()) return;
    integrated_ = launch->integrated;
    SpawnOptions opts;
    opts.argv = launch->argv;
    const char* path = getenv("PATH");
    opts.env = {{"PATH", path ? path : "/usr/bin:/bin"},
                {"HOME", runtime_dir},
                {"TERM", "xterm-256color"},
                {"LANG", "C.UTF-8"}};
    for (const auto& kv : launch->extra_env) opts.env.push_back(kv);
    auto t = Terminal::Start("t_shell", opts, 1 << 20);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) terminal_ = std::move(t).value();
  }
  ~ShellUnderTest() {
    if (terminal_) {
      EXPECT_TRUE(terminal_->Close().ok());
    }
  }

  bool ok() const { return terminal_ != nullptr; }
  bool integrated() const { return integrated_; }
  Terminal& terminal() { return *terminal_; }
  const std::vector<ShellMark>& marks() const { return marks_; }
  const std::string& stream() const { return stream_; }  // everything read, from offset 0

  // Reads output until a B mark arrives after the first `after` marks (a prompt
  // that is ready for input). Returns false after 10 s or when the shell exits.
  bool WaitForPrompt(size_t after) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (;;) {
      for (size_t i = after; i < marks_.size(); ++i) {
        if (marks_[i].kind == ShellMark::kCommandStart) return true;
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      if (!terminal_->WaitForOutput(stream_.size(), left)) return false;
      OutputSlice s = terminal_->Read(stream_.size(), 1 << 16);
      if (s.data.empty()) return false;  // exited and drained
      EXPECT_EQ(s.gap, 0u);
      parser_.Feed(s.start, s.data);
      stream_ += s.data;
      std::vector<ShellMark> fresh = parser_.TakeMarks();
      marks_.insert(marks_.end(), fresh.begin(), fresh.end());
    }
  }

  // Types `line` at the current prompt and waits for the next one.
  bool Run(const std::string& line) {
    size_t before = marks_.size();
    return terminal_->WriteInput(line).ok() && WaitForPrompt(before);
  }

  std::vector<int> ExitCodes() const {
    std::vector<int> codes;
    for (const ShellMark& m : marks_) {
      if (m.kind == ShellMark::kCommandEnd) codes.push_back(m.exit_code.value_or(-1));
    }
    return codes;
  }

  // Clean text between the end of the n-th mark of kind `from` and the start
  // of the first `to` mark after it.
  std::string TextBetween(ShellMark::Kind from, int n, ShellMark::Kind to) const {
    for (size_t i = 0; i < marks_.size(); ++i) {
      if (marks_[i].kind != from || n-- > 0) continue;
      for (size_t j = i + 1; j < marks_.size(); ++j) {
        if (marks_[j].kind != to) continue;
        const uint64_t begin = marks_[i].end_offset;
        return CleanTerminalText(stream_.substr(begin, marks_[j].offset - begin));
      }
    }
    return "<no such span>";
  }

 private:
  std::unique_ptr<Terminal> terminal_;
  bool integrated_ = false;
  Osc133Parser parser_;
  std::string stream_;
  std::vector<ShellMark> marks_;
};

// The scenario from the brief: a command with output and exit 3, then one that
// fails with 1, then an empty line (which runs nothing).
void ExpectIntegratedShell(const std::string& shell_path) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ShellUnderTest sh(shell_path, tmp.path());
  ASSERT_TRUE(sh.ok());
  EXPECT_TRUE(sh.integrated());
  ASSERT_TRUE(sh.WaitForPrompt(0)) << sh.stream();
  ASSERT_TRUE(sh.Run("echo hi; (exit 3)\n")) << sh.stream();
  ASSERT_TRUE(sh.Run("false\n")) << sh.stream();
  ASSERT_TRUE(sh.Run("\n")) << sh.stream();
  EXPECT_EQ(Kinds(sh.marks()), "ABCDABCDABAB") << Describe(sh.marks());
  EXPECT_EQ(sh.ExitCodes(), (std::vector<int>{3, 1}));
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 0, ShellMark::kCommandEnd), "hi\n");
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 1, ShellMark::kCommandEnd), "");
  // The typed command sits between B and C; the prompt between A and B.
  EXPECT_EQ(sh.TextBetween(ShellMark::kCommandStart, 0, ShellMark::kOutputStart),
            "echo hi; (exit 3)\n");
  EXPECT_EQ(sh.TextBetween(ShellMark::kPromptStart, 0, ShellMark::kCommandStart), "$ ");
}

TEST(ShellIntegrationProcessTest, Bash) {
  const std::string bash = FindInPath("bash");
  if (bash.empty()) GTEST_SKIP() << "bash is not installed";
  ExpectIntegratedShell(bash);
}

TEST(ShellIntegrationProcessTest, Zsh) {
  const std::string zsh = FindInPath("zsh");
  if (zsh.empty()) GTEST_SKIP() << "zsh is not installed";
  ExpectIntegratedShell(zsh);
}

// A sh that is bash (as on Fedora) reads ENV and gets the full bash hooks.
TEST(ShellIntegrationProcessTest, ShThatIsBash) {
  const std::string bash = FindInPath("bash");
  if (bash.empty()) GTEST_SKIP() << "bash is not installed";
  TempDir bin;
  ASSERT_FALSE(bin.path().empty());
  const std::string sh = bin.path() + "/sh";
  ASSERT_EQ(symlink(bash.c_str(), sh.c_str()), 0);
  ExpectIntegratedShell(sh);
}

// A plain POSIX sh (dash) has no pre-exec hook: no C, and D;$? at every
// prompt, including the first and after an empty line. The command still ends
// at the first D after the B it was typed at, with the right exit code.
void ExpectPlainSh(const std::string& shell_path) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ShellUnderTest sh(shell_path, tmp.path());
  ASSERT_TRUE(sh.ok());
  EXPECT_FALSE(sh.integrated());
  ASSERT_TRUE(sh.WaitForPrompt(0)) << sh.stream();
  ASSERT_TRUE(sh.Run("echo hi; (exit 3)\n")) << sh.stream();
  ASSERT_TRUE(sh.Run("false\n")) << sh.stream();
  ASSERT_TRUE(sh.Run("\n")) << sh.stream();
  EXPECT_EQ(Kinds(sh.marks()), "DABDABDABDAB") << Describe(sh.marks());
  EXPECT_EQ(sh.ExitCodes(), (std::vector<int>{0, 3, 1, 1}));
  EXPECT_EQ(sh.TextBetween(ShellMark::kCommandStart, 0, ShellMark::kCommandEnd),
            "echo hi; (exit 3)\nhi\n");
}

TEST(ShellIntegrationProcessTest, Dash) {
  const std::string dash = FindInPath("dash");
  if (dash.empty()) GTEST_SKIP() << "dash is not installed";
  ExpectPlainSh(dash);
}

// Whatever this machine's sh is: dash on Debian, bash on Fedora.
TEST(ShellIntegrationProcessTest, Sh) {
  const std::string sh = FindInPath("sh");
  if (sh.empty()) GTEST_SKIP() << "sh is not installed";
  // What sh is decides what to expect; asked of the file system, not of the
  // code under test (PrepareShell), so a wrong detection cannot pass.
  std::error_code ec;
  std::string target = std::filesystem::canonical(sh, ec).filename().string();
  ASSERT_FALSE(ec) << sh;
  if (target == "bash" || target == "zsh") {
    ExpectIntegratedShell(sh);
  } else {
    ExpectPlainSh(sh);
  }
}

}  // namespace
}  // namespace termbridge::session
