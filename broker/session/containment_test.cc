// Containment against real processes: a terminal's program starts children
// that leave its session (setsid), ignore its hangup (nohup) or lose their
// parent (a double fork), and each test asserts by pid, with the start time
// read while they ran, that none runs after the terminal ends. Both
// mechanisms are run: cgroup v2 where this host allows it, and the
// subreaper with /proc scans alone.
#include "broker/session/containment.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "broker/session/terminal.h"
#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

// A pid and the start time it had while it ran: a later process that got
// the same pid is not it.
struct Canary {
  pid_t pid = 0;
  uint64_t start = 0;
};

bool Running(const Canary& c) {
  for (const ProcStat& p : ListProcesses()) {
    if (p.pid == c.pid) return p.start_time == c.start && p.state != 'Z' && p.state != 'X';
  }
  return false;
}

bool WaitGone(const Canary& c, int timeout_ms = 5000) {
  for (int waited = 0; Running(c); waited += 10) {
    if (waited >= timeout_ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::string NewDir() {
  std::string dir = ::testing::TempDir() + "/tb-contain-XXXXXX";
  return mkdtemp(dir.data()) ? dir : "";
}

// Waits (up to 10 s) for each of `files` to hold a pid, and reads it with
// its start time.
std::vector<Canary> ReadCanaries(const std::vector<std::string>& files) {
  std::vector<Canary> out;
  for (const std::string& file : files) {
    Canary c;
    for (int i = 0; i < 1000 && c.start == 0; ++i) {
      std::ifstream in(file);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      int pid;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid) && pid > 0) {
        c.pid = pid;
        c.start = ProcessStartTime(pid);
      }
      if (c.start == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    out.push_back(c);
  }
  return out;
}

// A shell script that starts three escapees, each writing its pid to a file
// in `dir` before it becomes `sleep 1000`: one in a new session whose parent
// is gone at once, one under nohup, one from a double fork.
std::string EscapeesScript(const std::string& dir) {
  return absl::StrCat("( setsid sh -c 'echo $$ > ", dir, "/setsid.pid; exec sleep 1000' & ) ; ",
                      "nohup sh -c 'echo $$ > ", dir,
                      "/nohup.pid; exec sleep 1000' >/dev/null 2>&1 & ", "( (sh -c 'echo $$ > ",
                      dir, "/fork.pid; exec sleep 1000' &) & ) ; ");
}

std::vector<std::string> CanaryFiles(const std::string& dir) {
  return {dir + "/setsid.pid", dir + "/nohup.pid", dir + "/fork.pid"};
}

int OpenFds() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (dirent* e = readdir(dir)) n += e->d_name[0] != '.';
  closedir(dir);
  return n;
}

class ContainmentTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = NewDir();
    ASSERT_FALSE(dir_.empty());
    WardenOptions options;
    options.state_dir = dir_;
    options.use_cgroups = GetParam();
    options.scan_interval = absl::Milliseconds(100);
    auto warden = Warden::Start(options);
    ASSERT_TRUE(warden.ok()) << warden.status();
    warden_ = std::move(*warden);
    if (GetParam() && !warden_->uses_cgroups()) {
      GTEST_SKIP() << "no cgroups here: " << warden_->mechanism();
    }
  }
  void TearDown() override {
    warden_.reset();
    if (!dir_.empty()) std::system(absl::StrCat("rm -rf '", dir_, "'").c_str());
  }

  absl::StatusOr<std::unique_ptr<Terminal>> Start(const std::string& id,
                                                  const std::string& script) {
    SpawnOptions options;
    options.argv = {"sh", "-c", script};
    options.warden = warden_.get();
    // Terminal ids are unique per broker; these tests run in parallel
    // processes, and the /proc scan finds a terminal's escapees by the id in
    // their environment, so each process gets ids of its own.
    return Terminal::Start(absl::StrCat(id, "_", getpid()), options, 1 << 20);
  }

  std::string dir_;
  std::unique_ptr<Warden> warden_;
};

TEST_P(ContainmentTest, CloseEndsProcessesThatLeftTheSession) {
  auto t = Start("t_close", EscapeesScript(dir_) + "exec sleep 1000");
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<Canary> canaries = ReadCanaries(CanaryFiles(dir_));
  for (const Canary& c : canaries) ASSERT_TRUE(Running(c)) << "canary " << c.pid << " never ran";
  ASSERT_TRUE((*t)->Close().ok());
  for (const Canary& c : canaries)
    EXPECT_TRUE(WaitGone(c, 100)) << "pid " << c.pid << " outlived Close";
}

TEST_P(ContainmentTest, ExitOfTheProgramEndsWhatItLeftRunning) {
  // The program exits once the test has seen every escapee run (a fixed
  // sleep lost that race on a slow machine: the escapees were gone first).
  const std::string go = dir_ + "/go";
  auto t = Start("t_exit", EscapeesScript(dir_) + absl::StrCat("while [ ! -e '", go,
                                                               "' ]; do sleep 0.02; done; exit 0"));
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<Canary> canaries = ReadCanaries(CanaryFiles(dir_));
  for (const Canary& c : canaries) ASSERT_TRUE(Running(c)) << "canary " << c.pid << " never ran";
  std::ofstream(go) << "go\n";
  ASSERT_TRUE((*t)->WaitForExit(absl::Seconds(10)));
  // "Exited" is said only once nothing the terminal started runs.
  for (const Canary& c : canaries) EXPECT_FALSE(Running(c)) << "pid " << c.pid;
}

TEST_P(ContainmentTest, ProcessesForkedAfterAScanAreStillEnded) {
  // A slow loop of forks: whatever exists at the end is found by the end.
  auto t = Start("t_loop", absl::StrCat("( setsid sh -c 'echo $$ > ", dir_,
                                        "/loop.pid; while :; do sleep 1000 & sleep 0.05; done' & );"
                                        " exec sleep 1000"));
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<Canary> canaries = ReadCanaries({dir_ + "/loop.pid"});
  ASSERT_TRUE(Running(canaries[0]));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  warden_->ScanForTest();
  std::vector<Canary> all;
  for (const ProcStat& p : ListProcesses()) {
    if (p.session == canaries[0].pid) all.push_back({p.pid, p.start_time});
  }
  EXPECT_GE(all.size(), 3u);
  ASSERT_TRUE((*t)->Close().ok());
  for (const Canary& c : all) EXPECT_TRUE(WaitGone(c, 100)) << "pid " << c.pid;
  for (const ProcStat& p : ListProcesses()) {
    EXPECT_FALSE(p.session == canaries[0].pid && p.state != 'Z') << "pid " << p.pid << " runs";
  }
}

TEST_P(ContainmentTest, AClosedTerminalHoldsNoDescriptorsAndOnlyItsOutput) {
  const int fds_before = OpenFds();
  auto t = Start("t_fds", "head -c 1000000 /dev/zero | tr '\\0' x; exec sleep 1000");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->WaitForOutput(999999, absl::Seconds(10)));
  for (int i = 0; i < 500 && (*t)->end_offset() < 1000000; ++i) {
    (*t)->WaitForOutput((*t)->end_offset(), absl::Milliseconds(20));
  }
  EXPECT_GT(OpenFds(), fds_before);
  ASSERT_TRUE((*t)->Close().ok());
  // The warden's scan opens /proc for a moment: a count can catch it.
  int fds_after = OpenFds();
  for (int i = 0; i < 20 && fds_after != fds_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    fds_after = OpenFds();
  }
  EXPECT_EQ(fds_after, fds_before) << "a closed terminal keeps descriptors";
  // The 1 MiB ring is gone; the output it held stays readable.
  const uint64_t end = (*t)->end_offset();
  EXPECT_GE(end, 1000000u);
  EXPECT_EQ((*t)->ring_resident(), end);
  OutputSlice all = (*t)->Read(0, 2 << 20);
  EXPECT_EQ(all.gap, 0u);
  EXPECT_EQ(all.data.size(), end);
  EXPECT_EQ(all.next, end);
  OutputSlice last = (*t)->Tail(10);
  EXPECT_EQ(last.data, std::string(10, 'x'));
  EXPECT_EQ(last.next, end);
  // Dropped output reads as a gap.
  (*t)->ForgetOutput();
  EXPECT_EQ((*t)->ring_resident(), 0u);
  OutputSlice gone = (*t)->Read(0, 100);
  EXPECT_EQ(gone.gap, end);
  EXPECT_TRUE(gone.data.empty());
}

TEST_P(ContainmentTest, NoZombiesAreLeft) {
  auto t = Start("t_zombie", EscapeesScript(dir_) + "exec sleep 1000");
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<Canary> canaries = ReadCanaries(CanaryFiles(dir_));
  ASSERT_TRUE((*t)->Close().ok());
  t->reset();
  // The subreaper inherited the orphans: it reaps them, none is left a zombie.
  for (const ProcStat& p : ListProcesses()) {
    EXPECT_FALSE(p.ppid == getpid() && p.state == 'Z') << "zombie child " << p.pid;
  }
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ContainmentTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Cgroup" : "SubreaperScan";
                         });

// Starts `sh -c script` detached from this process (its own session, its
// parent gone), as a crashed broker's terminal would leave it, with the
// environment `env` ("NAME=value" or "").
void StartDetached(const std::string& script, const std::string& env) {
  std::string command = absl::StrCat("( ", env.empty() ? "" : absl::StrCat("env ", env, " "),
                                     "setsid sh -c '", script, "' </dev/null >/dev/null 2>&1 & )");
  ASSERT_EQ(std::system(command.c_str()), 0);
}

TEST(WardenLeftoversTest, ARestartedBrokerEndsWhatItsPredecessorLeft) {
  std::string dir = NewDir();
  ASSERT_FALSE(dir.empty());
  ASSERT_EQ(mkdir((dir + "/terminals").c_str(), 0700), 0);
  // Two processes a record names (one with a stale start time: a reused pid
  // is not killed), one only its environment names, one of nobody.
  StartDetached(absl::StrCat("echo $$ > ", dir, "/a.pid; exec sleep 1000"), "");
  StartDetached(absl::StrCat("echo $$ > ", dir, "/b.pid; exec sleep 1000"), "");
  StartDetached(absl::StrCat("echo $$ > ", dir, "/c.pid; exec sleep 1000"),
                "TERMBRIDGE_TERMINAL_ID=t_old");
  StartDetached(absl::StrCat("echo $$ > ", dir, "/d.pid; exec sleep 1000"),
                "TERMBRIDGE_TERMINAL_ID=t_other");
  std::vector<Canary> c =
      ReadCanaries({dir + "/a.pid", dir + "/b.pid", dir + "/c.pid", dir + "/d.pid"});
  for (const Canary& one : c) ASSERT_TRUE(Running(one));
  {
    std::ofstream record(dir + "/terminals/t_old.record");
    // A broker pid that does not run (pid_max is below 2^22).
    record << "terminal t_old\nbroker 4194304 1\n"
           << "pid " << c[0].pid << " " << c[0].start << "\n"
           << "pid " << c[1].pid << " " << c[1].start + 1 << "\n";
  }
  WardenOptions options;
  options.state_dir = dir;
  options.use_cgroups = false;
  auto warden = Warden::Start(options);
  ASSERT_TRUE(warden.ok());

  // Configured to report only: nothing is killed, the record stays.
  std::vector<Leftover> reported = (*warden)->EndLeftovers(/*end=*/false);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].terminal_id, "t_old");
  EXPECT_FALSE(reported[0].ended);
  EXPECT_EQ(reported[0].pids.size(), 2u);  // a and c
  for (const Canary& one : c) EXPECT_TRUE(Running(one));

  std::vector<Leftover> ended = (*warden)->EndLeftovers(/*end=*/true);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_TRUE(ended[0].ended);
  EXPECT_TRUE(WaitGone(c[0])) << "the recorded process still runs";
  EXPECT_TRUE(WaitGone(c[2])) << "the process its environment names still runs";
  EXPECT_TRUE(Running(c[1])) << "a pid whose start time differs was killed";
  EXPECT_TRUE(Running(c[3])) << "another terminal's process was killed";
  EXPECT_NE(access((dir + "/terminals/t_old.record").c_str(), F_OK), 0);
  kill(c[1].pid, SIGKILL);
  kill(c[3].pid, SIGKILL);
  warden->reset();
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
}

TEST(WardenLeftoversTest, ARecordOfARunningBrokerIsLeftAlone) {
  std::string dir = NewDir();
  ASSERT_EQ(mkdir((dir + "/terminals").c_str(), 0700), 0);
  StartDetached(absl::StrCat("echo $$ > ", dir, "/a.pid; exec sleep 1000"), "");
  std::vector<Canary> c = ReadCanaries({dir + "/a.pid"});
  {
    std::ofstream record(dir + "/terminals/t_live.record");
    // This test process plays the other broker, still running.
    record << "terminal t_live\nbroker " << getppid() << " " << ProcessStartTime(getppid())
           << "\npid " << c[0].pid << " " << c[0].start << "\n";
  }
  WardenOptions options;
  options.state_dir = dir;
  options.use_cgroups = false;
  auto warden = Warden::Start(options);
  ASSERT_TRUE(warden.ok());
  EXPECT_TRUE((*warden)->EndLeftovers(true).empty());
  EXPECT_TRUE(Running(c[0]));
  kill(c[0].pid, SIGKILL);
  warden->reset();
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
}

TEST(WardenLeftoversTest, ACrashedTerminalsGroupIsEndedByTheNextWarden) {
  std::string dir = NewDir();
  WardenOptions options;
  options.state_dir = dir;
  options.scan_interval = absl::Hours(1);  // no scan rewrites the record below
  auto first = Warden::Start(options);
  ASSERT_TRUE(first.ok());
  if (!(*first)->uses_cgroups()) GTEST_SKIP() << (*first)->mechanism();
  // The first warden's terminal is "crashed": its containment is never
  // ended (released without EndAll, as a SIGKILL would leave it).
  std::unique_ptr<Containment> contained = (*first)->Contain("t_crash");
  pid_t child = fork();
  if (child == 0) {
    setsid();
    execlp("sleep", "sleep", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(contained->Adopt(child).ok());
  Canary c{child, ProcessStartTime(child)};
  const std::string group = contained->cgroup();
  ASSERT_FALSE(group.empty());
  // Rewrite the record as if another broker (a dead one) wrote it.
  const std::string record = dir + "/terminals/t_crash.record";
  {
    std::ofstream out(record);
    out << "terminal t_crash\nbroker 4194304 1\ncgroup " << group << "\n";
  }
  contained.release();  // NOLINT: the crash: nobody ends it
  std::vector<Leftover> ended = (*first)->EndLeftovers(true);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].pids, std::vector<pid_t>{child});
  EXPECT_TRUE(WaitGone(c));
  EXPECT_NE(access(group.c_str(), F_OK), 0) << "the group was not removed";
  first->reset();
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
}

}  // namespace
}  // namespace termbridge::session
