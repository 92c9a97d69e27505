// PtyProcess against real programs on a real pseudo-terminal.
#include "broker/session/pty_process.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/support/process_probe.h"

namespace termbridge::session {
namespace {

using ::termbridge::testing::ProcessAlive;

// Reads from the master until `needle` appears or the child's output ends.
std::string ReadUntil(PtyProcess& p, const std::string& needle, int timeout_ms = 5000) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    struct pollfd fd = {p.master_fd(), POLLIN, 0};
    if (poll(&fd, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = read(p.master_fd(), buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.find(needle) != std::string::npos) break;
  }
  return out;
}

// Reaping has no event to wait on outside Terminal; poll waitpid for up to 5 s.
void WaitReaped(PtyProcess& p) {
  for (int i = 0; i < 500 && !p.TryReap(); ++i) {
    char buf[4096];
    (void)!read(p.master_fd(), buf, sizeof buf);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(PtyProcessTest, RunsOnATerminalAndReportsExitCode) {
  SpawnOptions opts;
  opts.argv = {"sh", "-c", "test -t 0 && test -t 1 && echo tty-ok; exit 3"};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(ReadUntil(**p, "tty-ok").find("tty-ok"), std::string::npos);
  WaitReaped(**p);
  ASSERT_TRUE((*p)->reaped());
  EXPECT_EQ((*p)->exit_code(), 3);
  EXPECT_EQ((*p)->term_signal(), 0);
}

TEST(PtyProcessTest, ExecFailureIsAnErrorNotAnExit127) {
  SpawnOptions opts;
  opts.argv = {"/nonexistent/definitely-not-here"};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
}

TEST(PtyProcessTest, BadCwdIsAnError) {
  SpawnOptions opts;
  opts.argv = {"true"};
  opts.cwd = "/nonexistent-dir-for-test";
  auto p = PtyProcess::Spawn(opts);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("/nonexistent-dir-for-test"), std::string::npos);
}

TEST(PtyProcessTest, ChildGetsCleanSignalStateAndOwnGroup) {
  // Block SIGINT in the parent: the child must still start with an empty mask.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  SpawnOptions opts;
  opts.argv = {
      "sh", "-c",
      "grep -E '^Sig(Blk|Ign)' /proc/self/status; echo pgid=$(cut -d' ' -f5 /proc/self/stat)"};
  auto p = PtyProcess::Spawn(opts);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out = ReadUntil(**p, "pgid=");
  out += ReadUntil(**p, "\n", 1000);
  EXPECT_NE(out.find("SigBlk:\t0000000000000000"), std::string::npos) << out;
  EXPECT_NE(out.find("pgid=" + std::to_string((*p)->pid())), std::string::npos) << out;
}

TEST(PtyProcessTest, EnvironmentIsExactlyWhatWasGiven) {
  SpawnOptions opts;
  opts.argv = {"/usr/bin/env"};
  opts.env = {{"PATH", "/usr/bin:/bin"}, {"ONLY_ME", "yes"}};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out = ReadUntil(**p, "ONLY_ME=yes");
  EXPECT_NE(out.find("ONLY_ME=yes"), std::string::npos);
  EXPECT_EQ(out.find("HOME="), std::string::npos) << out;
}

TEST(PtyProcessTest, SignalGroupKillsTheWholeGroup) {
  SpawnOptions opts;
  opts.argv = {"sh", "-c", "sleep 300 & echo child=$!; wait"};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out = ReadUntil(**p, "\n");
  auto pos = out.find("child=");
  ASSERT_NE(pos, std::string::npos) << out;
  pid_t child = std::stoi(out.substr(pos + 6));
  ASSERT_TRUE(ProcessAlive(child));
  ASSERT_TRUE((*p)->SignalGroup(SIGKILL).ok());
  WaitReaped(**p);
  EXPECT_EQ((*p)->term_signal(), SIGKILL);
  // The background sleep was in the same group: it is gone (or a zombie of init).
  EXPECT_TRUE(::termbridge::testing::WaitProcessGone(child)) << "pid " << child << " survived";
}

TEST(PtyProcessTest, ResizeIsSeenByTheChild) {
  SpawnOptions opts;
  opts.argv = {"sh", "-c", "read x; stty size"};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Resize(91, 33).ok());
  absl::StatusOr<size_t> written = (*p)->WriteSome("go\n");
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(*written, 3u);
  std::string out = ReadUntil(**p, "33 91");
  EXPECT_NE(out.find("33 91"), std::string::npos) << out;
}

TEST(PtyProcessTest, ThePtyIsTheControllingTerminalWithJobControl) {
  SpawnOptions opts;
  // /dev/tty opens only for a process with a controlling terminal; the
  // foreground group is the child's own (its pid).
  opts.argv = {"sh", "-c", "exec 3</dev/tty && echo ctty-ok; ps -o tpgid= -p $$ | tr -d ' '"};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out = ReadUntil(**p, "ctty-ok");
  out += ReadUntil(**p, "\n" + std::to_string((*p)->pid()), 2000);
  EXPECT_NE(out.find("ctty-ok"), std::string::npos) << out;
  EXPECT_NE(out.find(std::to_string((*p)->pid())), std::string::npos) << out;
}

TEST(PtyProcessTest, IgnoredSignalsAndOpenFdsDoNotReachTheChild) {
  // The broker ignores SIGPIPE and holds sockets and files: the child starts
  // with every signal at its default and nothing open above stderr.
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  int leaked = dup(1);
  SpawnOptions opts;
  opts.argv = {"sh", "-c",
               "grep '^SigIgn' /proc/self/status; ls /proc/self/fd | tr '\\n' ' '; echo end"};
  auto p = PtyProcess::Spawn(opts);
  sigaction(SIGPIPE, &old, nullptr);
  close(leaked);
  ASSERT_TRUE(p.ok()) << p.status();
  std::string out = ReadUntil(**p, "end");
  size_t at = out.find("SigIgn:\t");
  ASSERT_NE(at, std::string::npos) << out;
  uint64_t ignored = std::stoull(out.substr(at + 8, 16), nullptr, 16);
  // glibc's posix_spawn leaves its two internal signals (32 and 33, below
  // SIGRTMIN, never seen by programs built on glibc) ignored; nothing else.
  EXPECT_EQ(ignored & ~((uint64_t{1} << 31) | (uint64_t{1} << 32)), 0u) << out;
  // ls itself has its /proc/self/fd directory open as fd 3.
  EXPECT_NE(out.find("0 1 2 3 end"), std::string::npos) << out;
}

TEST(PtyProcessTest, ProgramIsLookedUpInTheChildsPath) {
  std::string dir = ::testing::TempDir() + "/tb_pty_path.XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::string program = std::string(dir) + "/tb-only-here";
  FILE* f = fopen(program.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("#!/bin/sh\necho found-in-child-path\n", f);
  fclose(f);
  std::string plain = std::string(dir) + "/tb-not-executable";
  f = fopen(plain.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  chmod(program.c_str(), 0755);
  chmod(plain.c_str(), 0644);

  SpawnOptions opts;
  opts.argv = {"tb-only-here"};
  opts.env = {{"PATH", std::string(dir) + ":/usr/bin:/bin"}};
  auto p = PtyProcess::Spawn(opts);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(ReadUntil(**p, "found-in-child-path").find("found-in-child-path"), std::string::npos);
  WaitReaped(**p);

  opts.env = {{"PATH", "/usr/bin:/bin"}};  // the broker's PATH does not count
  auto missing = PtyProcess::Spawn(opts);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();

  opts.argv = {"tb-not-executable"};
  opts.env = {{"PATH", dir}};
  auto denied = PtyProcess::Spawn(opts);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied) << denied.status();

  unlink(program.c_str());
  unlink(plain.c_str());
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace termbridge::session
