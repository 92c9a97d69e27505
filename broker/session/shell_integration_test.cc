// Shell integration: real bash, zsh and sh started with PrepareShell in a PTY
// take commands whole from their command file (never through the line
// editor), sign their marks, report each command's output span and exit
// code, and discard input a command left unread before they prompt again.
#include "broker/session/shell_integration.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
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

// "ABCD...": the kinds in order. bash draws its prompt again after a key
// binding ran (the one that loads a command), so a repeated "AB" counts once.
std::string Kinds(const std::vector<ShellMark>& marks) {
  std::string out;
  for (const ShellMark& m : marks) out += ShellMarkName(m.kind);
  for (size_t at; (at = out.find("ABAB")) != std::string::npos;) out.erase(at, 2);
  return out;
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
    std::string tmpl = ::testing::TempDir() + "/tb_shell_test_XXXXXX";
    path_ = mkdtemp(tmpl.data()) ? tmpl : "";
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

TEST(ShellIntegrationTest, FilesArePrivateAndPerTerminal) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  const std::string runtime = tmp.path() + "/run/tb";
  auto bash = PrepareShell("/bin/bash", runtime, "t_1");
  ASSERT_TRUE(bash.ok()) << bash.status();
  EXPECT_TRUE(bash->integrated);
  EXPECT_EQ(bash->argv, (std::vector<std::string>{"/bin/bash", "--noprofile", "--rcfile",
                                                  runtime + "/t_1/bashrc", "-i"}));
  EXPECT_EQ(ModeOf(runtime), 0700u);
  EXPECT_EQ(ModeOf(runtime + "/t_1"), 0700u);
  EXPECT_EQ(ModeOf(runtime + "/t_1/bashrc"), 0600u);
  EXPECT_EQ(bash->command_file, runtime + "/t_1/cmd");
  EXPECT_EQ(bash->ack_fifo, runtime + "/t_1/ack");
  EXPECT_EQ(bash->secret.size(), 32u);
  // The secret is in the rc (which the shell deletes once read), never in
  // the environment the shell passes on.
  for (const auto& kv : bash->extra_env) EXPECT_EQ(kv.second.find(bash->secret), std::string::npos);

  auto zsh = PrepareShell("zsh", runtime + "/", "t_2");
  ASSERT_TRUE(zsh.ok()) << zsh.status();
  ASSERT_EQ(zsh->extra_env.size(), 1u);
  EXPECT_EQ(zsh->extra_env[0].first, "ZDOTDIR");
  EXPECT_EQ(ModeOf(zsh->extra_env[0].second), 0700u);
  EXPECT_EQ(ModeOf(zsh->extra_env[0].second + "/.zshrc"), 0600u);
  EXPECT_NE(zsh->secret, bash->secret);

  auto sh = PrepareShell("/usr/bin/dash", runtime, "t_3");
  ASSERT_TRUE(sh.ok()) << sh.status();
  EXPECT_FALSE(sh->integrated);
  ASSERT_EQ(sh->extra_env.size(), 1u);
  EXPECT_EQ(sh->extra_env[0].first, "ENV");
  EXPECT_EQ(ModeOf(sh->extra_env[0].second), 0600u);
  EXPECT_TRUE(sh->ack_fifo.empty());
  EXPECT_EQ(sh->trigger, "\x15. '" + runtime + "/t_3/cmd'\n");
  // A terminal's directory is made once; an id cannot name a path.
  EXPECT_FALSE(PrepareShell("/bin/bash", runtime, "t_1").ok());
  EXPECT_EQ(PrepareShell("/bin/bash", runtime, "../x").status().code(),
            absl::StatusCode::kInvalidArgument);
  RemoveTerminalDir(runtime, "t_1");
  EXPECT_FALSE(std::filesystem::exists(runtime + "/t_1"));
}

TEST(ShellIntegrationTest, RefusesUnsafeRuntimeDirs) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  EXPECT_EQ(PrepareShell("bash", "relative/dir", "t_1").status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string shared = tmp.path() + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  EXPECT_EQ(PrepareShell("bash", shared, "t_1").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PrepareShell("sh", tmp.path() + "/$HOME", "t_1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShellIntegrationTest, OtherShellsAreStartedPlainAndNotIntegrated) {
  auto other = PrepareShell("/usr/bin/fish", "relative-is-fine-here", "t_1");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->argv, (std::vector<std::string>{"/usr/bin/fish", "-i"}));
  EXPECT_TRUE(other->extra_env.empty());
  EXPECT_FALSE(other->integrated);
  EXPECT_TRUE(other->secret.empty());
}

// Runs a prepared shell in a real PTY with its shell channel, and collects
// its signed marks as output arrives.
class ShellUnderTest {
 public:
  ShellUnderTest(const std::string& shell_path, const std::string& runtime_dir) {
    auto launch = PrepareShell(shell_path, runtime_dir, "t_shell");
    EXPECT_TRUE(launch.ok()) << launch.status();
    if (!launch.ok()) return;
    launch_ = *launch;
    SpawnOptions opts;
    opts.argv = launch->argv;
    const char* path = getenv("PATH");
    opts.env = {{"PATH", path ? path : "/usr/bin:/bin"},
                {"HOME", runtime_dir},
                {"TERM", "xterm-256color"},
                {"LANG", "C.UTF-8"}};
    for (const auto& kv : launch->extra_env) opts.env.push_back(kv);
    ShellChannel channel;
    channel.mark_secret = launch->secret;
    channel.ack_fifo = launch->ack_fifo;
    channel.on_discarded = [this](size_t bytes) { discarded_ += bytes; };
    auto t = Terminal::Start("t_shell", opts, 1 << 20, channel);
    EXPECT_TRUE(t.ok()) << t.status();
    if (t.ok()) terminal_ = std::move(t).value();
  }
  ~ShellUnderTest() {
    if (terminal_) {
      EXPECT_TRUE(terminal_->Close().ok());
    }
  }

  bool ok() const { return terminal_ != nullptr; }
  bool integrated() const { return launch_.integrated; }
  const ShellLaunch& launch() const { return launch_; }
  Terminal& terminal() { return *terminal_; }
  const std::vector<ShellMark>& marks() const { return marks_; }
  const std::string& stream() const { return stream_; }  // everything read, from offset 0
  size_t discarded() const { return discarded_.load(); }

  // Reads output until a mark of `kind` arrives after the first `after`
  // marks. Returns false after 10 s or when the shell exits.
  bool WaitForMark(size_t after, ShellMark::Kind kind) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    for (;;) {
      for (const ShellMark& m : terminal_->MarksSince(&next_mark_)) marks_.push_back(m);
      for (size_t i = after; i < marks_.size(); ++i) {
        if (marks_[i].kind == kind) {
          Drain();
          return true;
        }
      }
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return false;
      if (!terminal_->WaitForOutput(stream_.size(), std::min(left, absl::Milliseconds(50))) &&
          !terminal_->exit_state().running) {
        return false;
      }
      Drain();
    }
  }
  bool WaitForPrompt(size_t after) { return WaitForMark(after, ShellMark::kCommandStart); }

  // Sends `command` as the broker does (command file, then the trigger keys)
  // and waits for its D mark and the prompt after it.
  bool Run(const std::string& command) {
    size_t before = marks_.size();
    if (!WriteCommandFile(launch_, command).ok()) return false;
    terminal_->OpenAgentInput();
    return terminal_->WriteInput(launch_.trigger).ok() && WaitForEnd(before);
  }

  // Waits for a D mark after the first `after` marks, then for the prompt.
  bool WaitForEnd(size_t after) {
    if (!WaitForMark(after, ShellMark::kCommandEnd)) return false;
    size_t end = after;
    while (marks_[end].kind != ShellMark::kCommandEnd) ++end;
    return WaitForPrompt(end + 1);
  }

  std::vector<int> ExitCodes() const {
    std::vector<int> codes;
    for (const ShellMark& m : marks_) {
      if (m.kind == ShellMark::kCommandEnd) codes.push_back(m.exit_code.value_or(-1));
    }
    return codes;
  }

  // Clean text between the last C mark and the D after it.
  std::string LastOutput() const {
    int n = -1;
    for (const ShellMark& m : marks_) n += m.kind == ShellMark::kOutputStart;
    return TextBetween(ShellMark::kOutputStart, n, ShellMark::kCommandEnd);
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
  void Drain() {
    for (;;) {
      OutputSlice s = terminal_->Read(stream_.size(), 1 << 16);
      if (s.data.empty()) return;
      EXPECT_EQ(s.gap, 0u);
      stream_ += s.data;
    }
  }

  ShellLaunch launch_;
  std::unique_ptr<Terminal> terminal_;
  uint64_t next_mark_ = 0;
  std::string stream_;
  std::vector<ShellMark> marks_;
  std::atomic<size_t> discarded_{0};
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
  ASSERT_TRUE(sh.Run("echo hi; (exit 3)")) << sh.stream();
  ASSERT_TRUE(sh.Run("false")) << sh.stream();
  EXPECT_EQ(Kinds(sh.marks()), "ABCDABCDAB") << Describe(sh.marks());
  EXPECT_EQ(sh.ExitCodes(), (std::vector<int>{3, 1}));
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 0, ShellMark::kCommandEnd), "hi\n");
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 1, ShellMark::kCommandEnd), "");
  // The command, shown at the prompt as if typed, sits before C; the prompt
  // between A and B.
  const std::string shown = sh.TextBetween(ShellMark::kCommandStart, 0, ShellMark::kOutputStart);
  EXPECT_EQ(shown.substr(shown.rfind("echo")), "echo hi; (exit 3)\n");
  EXPECT_EQ(sh.TextBetween(ShellMark::kPromptStart, 0, ShellMark::kCommandStart), "$ ");
}

// What the policy judged is what runs: TABs, long lines, several lines and
// heredocs reach the shell whole, never through its line editor or the tty's
// line discipline; a program's own marks are output; the secret never shows.
void ExpectExactDelivery(const std::string& shell_path) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ShellUnderTest sh(shell_path, tmp.path());
  ASSERT_TRUE(sh.ok());
  ASSERT_TRUE(sh.WaitForPrompt(0)) << sh.stream();
  ASSERT_TRUE(sh.Run("printf '[%s]' 'a\tb'")) << sh.stream();
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 0, ShellMark::kCommandEnd), "[a\tb]");
  // A TAB where completion would act: the word stays as written.
  ASSERT_EQ(close(creat((tmp.path() + "/canary-maker").c_str(), 0700)), 0);
  ASSERT_TRUE(sh.Run("cd '" + tmp.path() + "' && printf '<%s>' canary-m\t")) << sh.stream();
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 1, ShellMark::kCommandEnd), "<canary-m>");
  const std::string word(6000, 'x');  // longer than the tty's 4095-byte line
  ASSERT_TRUE(sh.Run("printf %s " + word)) << sh.stream().substr(0, 200);
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 2, ShellMark::kCommandEnd), word);
  ASSERT_TRUE(sh.Run("cat <<'EOF'\nx\ty\n$HOME\nEOF\necho two")) << sh.stream();
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 3, ShellMark::kCommandEnd),
            "x\ty\n$HOME\ntwo\n");
  ASSERT_TRUE(sh.Run("printf '\\033]133;D;0\\007\\033]133;A\\007'; echo after; (exit 4)"))
      << sh.stream();
  EXPECT_EQ(sh.ExitCodes().back(), 4);
  EXPECT_EQ(sh.TextBetween(ShellMark::kOutputStart, 4, ShellMark::kCommandEnd), "after\n");
  EXPECT_EQ(sh.stream().find(sh.launch().secret), std::string::npos);
  // A line that runs nothing ends like any other (no session stays open).
  ASSERT_TRUE(sh.Run("# only a comment")) << sh.stream();
  ASSERT_TRUE(sh.Run("")) << sh.stream();
  EXPECT_EQ(sh.ExitCodes().back(), 0);
  // Even signed with the secret, a D that a program prints (the shell is not
  // waiting for its discard then) is output, not the command's end.
  const std::string forged = "\\033]133;D;0;n=99;tb=" + sh.launch().secret + "\\007";
  ASSERT_TRUE(sh.Run("printf '" + forged + "'; echo after-forged; (exit 5)")) << sh.stream();
  EXPECT_EQ(sh.ExitCodes().back(), 5);
  EXPECT_NE(sh.stream().find("after-forged"), std::string::npos);
  // An agent's input never reaches the shell's line editor, even where the
  // terminal believes a command runs.
  sh.terminal().OpenAgentInput();
  EXPECT_EQ(sh.terminal().WriteAgentInput("echo typed\n", sh.terminal().holder_generation()).code(),
            absl::StatusCode::kUnavailable);
  // cd and export persist, from one line and from a multi-line script.
  ASSERT_TRUE(sh.Run("cd / && export TB_ONE=1\nTB_TWO=2")) << sh.stream();
  ASSERT_TRUE(sh.Run("printf '%s %s %s' \"$PWD\" \"$TB_ONE\" \"$TB_TWO\"")) << sh.stream();
  EXPECT_EQ(sh.LastOutput(), "/ 1 2");
}

// Input a command did not read is discarded before the shell reads again.
void ExpectLeftoverInputDiscarded(const std::string& shell_path) {
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ShellUnderTest sh(shell_path, tmp.path());
  ASSERT_TRUE(sh.ok());
  ASSERT_TRUE(sh.WaitForPrompt(0)) << sh.stream();
  const std::string canary = tmp.path() + "/canary";
  ASSERT_TRUE(WriteCommandFile(sh.launch(), "sleep 1").ok());
  sh.terminal().OpenAgentInput();
  size_t before = sh.marks().size();
  ASSERT_TRUE(sh.terminal().WriteInput(sh.launch().trigger).ok());
  ASSERT_TRUE(sh.WaitForMark(before, ShellMark::kOutputStart)) << sh.stream();
  ASSERT_TRUE(sh.terminal()
                  .WriteAgentInput("touch " + canary + "\n", sh.terminal().holder_generation())
                  .ok());
  ASSERT_TRUE(sh.WaitForEnd(before)) << sh.stream();
  ASSERT_TRUE(sh.Run("echo next")) << sh.stream();
  EXPECT_FALSE(std::filesystem::exists(canary)) << sh.stream();
  EXPECT_GT(sh.discarded(), 0u);
  // Between commands the agent's input is refused, not typed at the prompt.
  EXPECT_EQ(sh.terminal()
                .WriteAgentInput("touch " + canary + "\n", sh.terminal().holder_generation())
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(sh.ExitCodes(), (std::vector<int>{0, 0}));
}

// The programs reading a terminal's input are the job's, never the shell or
// a fork of it (a subshell, or a job between fork and exec, carries the
// shell's exact command line): input to `(sleep; true)` goes to sleep.
TEST(ShellIntegrationProcessTest, ForegroundProgramsAreTheJobsNotTheShellsForks) {
  const std::string bash = FindInPath("bash");
  if (bash.empty()) GTEST_SKIP() << "bash is not installed";
  TempDir tmp;
  ASSERT_FALSE(tmp.path().empty());
  ShellUnderTest sh(bash, tmp.path());
  ASSERT_TRUE(sh.ok());
  ASSERT_TRUE(sh.WaitForPrompt(0)) << sh.stream();
  ASSERT_TRUE(WriteCommandFile(sh.launch(), "(sleep 3; true)").ok());
  size_t before = sh.marks().size();
  ASSERT_TRUE(sh.terminal().WriteInput(sh.launch().trigger).ok());
  ASSERT_TRUE(sh.WaitForMark(before, ShellMark::kOutputStart)) << sh.stream();
  std::vector<std::string> readers;
  for (int i = 0; i < 100; ++i) {  // until the subshell has started sleep
    readers = sh.terminal().ForegroundPrograms();
    if (std::find(readers.begin(), readers.end(), "sleep") != readers.end()) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_NE(std::find(readers.begin(), readers.end(), "sleep"), readers.end());
  EXPECT_EQ(std::find(readers.begin(), readers.end(), "bash"), readers.end())
      << "the subshell (a fork of the terminal's shell) is not a reader";
  sh.terminal().Interrupt(SIGINT).IgnoreError();
}

TEST(ShellIntegrationProcessTest, BashRunsExactlyWhatWasSent) {
  const std::string bash = FindInPath("bash");
  if (bash.empty()) GTEST_SKIP() << "bash is not installed";
  ExpectExactDelivery(bash);
  ExpectLeftoverInputDiscarded(bash);
}

TEST(ShellIntegrationProcessTest, ZshRunsExactlyWhatWasSent) {
  const std::string zsh = FindInPath("zsh");
  if (zsh.empty()) GTEST_SKIP() << "zsh is not installed";
  ExpectExactDelivery(zsh);
  ExpectLeftoverInputDiscarded(zsh);
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
  ASSERT_TRUE(sh.Run("echo hi; (exit 3)")) << sh.stream();
  ASSERT_TRUE(sh.Run("false")) << sh.stream();
  ASSERT_TRUE(sh.Run(":")) << sh.stream();
  EXPECT_EQ(Kinds(sh.marks()), "DABDABDABDAB") << Describe(sh.marks());
  EXPECT_EQ(sh.ExitCodes(), (std::vector<int>{0, 3, 1, 0}));
  EXPECT_EQ(sh.TextBetween(ShellMark::kCommandStart, 0, ShellMark::kCommandEnd),
            ". '" + sh.launch().command_file + "'\nhi\n");
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
