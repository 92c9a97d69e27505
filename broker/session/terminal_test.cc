// Terminal: output reaches the ring in order, exit is reported after all
// output is readable, and Close leaves no process behind.
#include "broker/session/terminal.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "broker/session/testing/fake_process.h"
#include "gtest/gtest.h"
#include "tests/support/process_probe.h"

namespace termbridge::session {
namespace {

using ::termbridge::testing::ProcessAlive;

std::string ReadAll(const Terminal& t) {
  std::string out;
  uint64_t cursor = 0;
  for (;;) {
    OutputSlice s = t.Read(cursor, 1 << 20);
    if (s.data.empty()) return out;
    out += s.data;
    cursor = s.next;
  }
}

std::unique_ptr<Terminal> StartSh(const std::string& script, size_t ring = 1 << 20) {
  SpawnOptions opts;
  opts.argv = {"sh", "-c", script};
  auto t = Terminal::Start("t_test", opts, ring);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(TerminalTest, EveryLineOfALargeOutputArrivesInOrder) {
  auto t = StartSh("seq 1 20000");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(20)));
  std::string out = ReadAll(*t);
  std::string expected;
  for (int i = 1; i <= 20000; ++i) expected += std::to_string(i) + "\r\n";
  EXPECT_EQ(out, expected);
  ExitState e = t->exit_state();
  EXPECT_FALSE(e.running);
  EXPECT_EQ(e.exit_code, 0);
  EXPECT_NE(e.exited_at, absl::InfinitePast());
}

// Threads of this process named `name` (as top -H and perf show them).
int ThreadsNamed(const std::string& name) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) ++count;
  }
  return count;
}

TEST(TerminalTest, EachTerminalsReaderThreadCarriesItsOwnName) {
  const int before = ThreadsNamed("tb-pty-reader");
  auto t = StartSh("read line");
  ASSERT_TRUE(t);
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (ThreadsNamed("tb-pty-reader") == before && absl::Now() < deadline) {
    t->WaitForOutput(0, absl::Milliseconds(10));  // the name is set as the thread starts
  }
  EXPECT_EQ(ThreadsNamed("tb-pty-reader"), before + 1);
  t.reset();  // Close, then join: the thread is gone with its terminal
  EXPECT_EQ(ThreadsNamed("tb-pty-reader"), before);
}

TEST(TerminalTest, TheRingHoldsMemoryOnlyForWhatWasPrinted) {
  auto t = StartSh("head -c 3000000 /dev/zero | tr '\\0' x; read x", 8 << 20);
  for (absl::Time deadline = absl::Now() + absl::Seconds(20);
       t->end_offset() < 3000000 && absl::Now() < deadline;) {
    t->WaitForOutput(t->end_offset(), absl::Milliseconds(100));
  }
  EXPECT_GE(t->ring_resident(), 3000000u);
  EXPECT_LT(t->ring_resident(), 5u << 20);  // of an 8 MiB ring
  // Once exited, the ring's pages are gone: what it held is kept, exactly.
  ASSERT_TRUE(t->Close().ok());
  EXPECT_EQ(t->ring_resident(), t->end_offset());
  t->ForgetOutput();
  EXPECT_EQ(t->ring_resident(), 0u);
  auto quiet = StartSh("read x", 8 << 20);
  EXPECT_LE(quiet->ring_resident(), 64u << 10);
}

TEST(TerminalTest, WaitForOutputWakesOnNewBytes) {
  auto t = StartSh("read x; echo got-$x");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->WaitForOutput(0, absl::Milliseconds(100)));
  ASSERT_TRUE(t->WriteInput("abc\n").ok());
  // The echo and the reply are new bytes: the wait ends on them, long before its timeout.
  absl::Time start = absl::Now();
  EXPECT_TRUE(t->WaitForOutput(0, absl::Seconds(30)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(10)));
  EXPECT_NE(ReadAll(*t).find("got-abc"), std::string::npos);
}

// Waits up to 10 s until the terminal's output holds `text`.
bool WaitForText(const Terminal& t, const std::string& text) {
  for (absl::Time deadline = absl::Now() + absl::Seconds(10);
       ReadAll(t).find(text) == std::string::npos;) {
    if (absl::Now() >= deadline) return false;
    t.WaitForOutput(t.end_offset(), absl::Milliseconds(100));
  }
  return true;
}

// Input for a program that is not reading yet is accepted at once (the
// caller never blocks), waits in order, and all of it arrives once it reads.
TEST(TerminalTest, InputWaitsInOrderForAProgramThatReadsLate) {
  auto t = StartSh("stty -icanon -echo; echo ready; read go; head -c 300000 | tail -c 10");
  ASSERT_TRUE(t);
  // Raw mode first: in canonical mode the line discipline drops a line's bytes past 4095.
  ASSERT_TRUE(WaitForText(*t, "ready")) << ReadAll(*t);
  absl::Time start = absl::Now();
  ASSERT_TRUE(t->WriteInput("go\n").ok());
  std::string chunk(60000, 'x');
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(t->WriteInput(chunk).ok());
  ASSERT_TRUE(t->WriteInput(std::string(59990, 'x')).ok());
  ASSERT_TRUE(t->WriteInput("END-MARKER").ok());  // bytes 299991..300000: what tail shows
  EXPECT_LT(absl::Now() - start, absl::Seconds(2)) << "a writer waited for the program";
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(20)));
  EXPECT_NE(ReadAll(*t).find("END-MARKER"), std::string::npos) << ReadAll(*t);
}

// A program that never reads: beyond kMaxPendingInput a chunk is refused
// whole, quickly, with DeadlineExceeded.
TEST(TerminalTest, InputBeyondTheBoundIsRefusedWhole) {
  auto t = StartSh("stty -icanon -echo; echo ready; exec sleep 30");
  ASSERT_TRUE(t);
  ASSERT_TRUE(WaitForText(*t, "ready")) << ReadAll(*t);
  std::string chunk(64 << 10, 'x');
  absl::Status refused;
  absl::Time start = absl::Now();
  for (int i = 0; i < 40 && refused.ok(); ++i) refused = t->WriteInput(chunk);
  EXPECT_EQ(refused.code(), absl::StatusCode::kDeadlineExceeded) << refused;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  ASSERT_TRUE(t->Close().ok());
}

TEST(TerminalTest, SubscribersHearAboutOutputAndExit) {
  auto t = StartSh("read x; echo hi");
  ASSERT_TRUE(t);
  absl::Mutex mu;
  int calls = 0;
  bool exited_seen = false;
  int h = t->Subscribe([&] {
    bool exited = !t->exit_state().running;
    absl::MutexLock lock(&mu);
    ++calls;
    exited_seen = exited_seen || exited;
  });
  ASSERT_TRUE(t->WriteInput("\n").ok());
  {
    absl::MutexLock lock(&mu);
    // The last notification already sees the exit, with every byte in the ring
    // (output and exit within the same millisecond may share one notification).
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&exited_seen), absl::Seconds(10)));
    EXPECT_GE(calls, 1);
  }
  EXPECT_NE(t->Read(0, 1 << 20).data.find("hi"), std::string::npos);
  t->Unsubscribe(h);
}

TEST(TerminalTest, OutputIsAnnouncedWhileTheProgramStillRuns) {
  // Announcements are batched, but a quiet PTY flushes them within
  // milliseconds: "early" is announced long before the program ends.
  auto t = StartSh("read x; echo early; sleep 5");
  ASSERT_TRUE(t);
  absl::Mutex mu;
  bool early_seen = false;
  bool running_then = false;
  int h = t->Subscribe([&] {
    bool running = t->exit_state().running;
    bool has = t->Read(0, 1 << 20).data.find("early") != std::string::npos;
    absl::MutexLock lock(&mu);
    if (has && !early_seen) {
      early_seen = true;
      running_then = running;
    }
  });
  ASSERT_TRUE(t->WriteInput("\n").ok());
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&early_seen), absl::Seconds(4)));
    EXPECT_TRUE(running_then);
  }
  t->Unsubscribe(h);
}

TEST(TerminalTest, InterruptStopsTheForegroundProgram) {
  auto t = StartSh("echo ready; exec sleep 300");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->WaitForOutput(0, absl::Seconds(10)));
  ASSERT_TRUE(t->Interrupt(SIGINT).ok());
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(10)));
  ExitState e = t->exit_state();
  EXPECT_EQ(e.term_signal, SIGINT) << e.exit_code;
}

TEST(TerminalTest, CloseLeavesNoProcessBehind) {
  // A shell that ignores SIGHUP and SIGTERM, with a background child: only
  // the SIGKILL step can end it, and the child must go too.
  auto t = StartSh("trap '' HUP TERM; sleep 300 & echo child=$!; wait; wait");
  ASSERT_TRUE(t);
  std::string out;
  uint64_t cursor = 0;
  while (out.find('\n') == std::string::npos) {
    ASSERT_TRUE(t->WaitForOutput(cursor, absl::Seconds(10)));
    OutputSlice s = t->Read(cursor, 4096);
    out += s.data;
    cursor = s.next;
  }
  pid_t child = std::stoi(out.substr(out.find("child=") + 6));
  pid_t shell = t->pid();
  ASSERT_TRUE(ProcessAlive(child));
  ASSERT_TRUE(t->Close(absl::Milliseconds(200)).ok());
  EXPECT_EQ(t->exit_state().term_signal, SIGKILL);
  EXPECT_FALSE(ProcessAlive(shell));
  EXPECT_TRUE(::termbridge::testing::WaitProcessGone(child))
      << "background pid " << child << " survived Close";
  EXPECT_TRUE(t->Close().ok());  // idempotent
}

TEST(TerminalTest, InputAfterExitIsRefused) {
  auto t = StartSh("exit 0");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(10)));
  EXPECT_EQ(t->WriteInput("x").code(), absl::StatusCode::kFailedPrecondition);
}

// Under a tight address-space limit (ulimit -v) a 1 GiB ring cannot be
// reserved: Start says so and starts no process. 0 when that holds.
int StartUnderAddressSpaceLimit() {
  // What the process maps now, plus 256 MiB: less than the ring.
  unsigned long pages = 0;
  FILE* statm = fopen("/proc/self/statm", "r");
  if (statm == nullptr || fscanf(statm, "%lu", &pages) != 1) return 2;
  fclose(statm);
  rlim_t cap = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{256} << 20);
  struct rlimit limit = {cap, cap};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 3;
  SpawnOptions opts;
  opts.argv = {"sh", "-c", "touch should-not-exist"};
  auto t = Terminal::Start("t", opts, size_t{1} << 30);
  if (t.status().code() != absl::StatusCode::kResourceExhausted) return 4;
  return access("should-not-exist", F_OK) == 0 ? 5 : 0;
}

TEST(TerminalTest, ARingThatCannotBeReservedIsAnErrorNotACrash) {
  EXPECT_EXIT(_exit(StartUnderAddressSpaceLimit()), ::testing::ExitedWithCode(0), "");
}

// Large reads while the program keeps writing and the ring keeps wrapping
// under them: every byte a read returns is the byte at its offset, and every
// byte it skips is counted in a gap. (Byte o of the output is the digit
// o % 10, so a byte from the wrong offset shows.)
TEST(TerminalTest, LargeReadsWhileTheRingWrapsReturnTheRightBytesOrAGap) {
  constexpr uint64_t kTotal = 24 << 20;
  constexpr size_t kRing = 96 << 10;  // far smaller than a read (1 MiB)
  auto t = StartSh("yes 0123456789 | tr -d '\\n' | head -c " + std::to_string(kTotal), kRing);
  ASSERT_TRUE(t);
  uint64_t cursor = 0, received = 0, skipped = 0;
  int gaps = 0;
  for (;;) {
    ExitState state = t->exit_state();
    OutputSlice s = t->Read(cursor, 1 << 20);
    ASSERT_EQ(s.gap, s.start - cursor);
    ASSERT_EQ(s.next, s.start + s.data.size());
    for (size_t i = 0; i < s.data.size(); ++i) {
      ASSERT_EQ(s.data[i], static_cast<char>('0' + (s.start + i) % 10)) << "offset " << s.start + i;
    }
    received += s.data.size();
    skipped += s.gap;
    gaps += s.gap > 0;
    cursor = s.next;
    if (s.data.empty() && s.gap == 0 && !state.running) break;
    // Fall behind by more than the ring before the next read, so that reads
    // start at the ring's oldest byte while the program overwrites it.
    while (t->end_offset() < cursor + kRing + 4096 && t->exit_state().running) {
      t->WaitForOutput(t->end_offset(), absl::Seconds(5));
    }
  }
  EXPECT_EQ(received + skipped, kTotal);
  EXPECT_EQ(cursor, kTotal);
  EXPECT_GT(received, 0u);
  EXPECT_GT(gaps, 0);
  RecordProperty("gaps", gaps);
}

TEST(TerminalTest, ResizeRefusesSidesOutsideOneToMaxSideWithoutWrapping) {
  auto t = StartSh("read line");
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->Resize(100, 30).ok());
  for (auto [cols, rows] : std::vector<std::pair<uint32_t, uint32_t>>{
           {0, 24}, {80, 0}, {Terminal::kMaxSide + 1, 24}, {65536 + 80, 24}}) {
    EXPECT_TRUE(absl::IsInvalidArgument(t->Resize(cols, rows))) << cols << "x" << rows;
  }
  EXPECT_EQ(t->Size(), (std::pair<unsigned short, unsigned short>{100, 30}));
  EXPECT_TRUE(t->Resize(Terminal::kMaxSide, 1).ok());
}

TEST(TerminalTest, SmallRingReportsGap) {
  auto t = StartSh("seq 1 5000", 1024);
  ASSERT_TRUE(t);
  ASSERT_TRUE(t->WaitForExit(absl::Seconds(10)));
  OutputSlice s = t->Read(0, 100);
  EXPECT_GT(s.gap, 0u);
  EXPECT_EQ(s.start, t->end_offset() - 1024);
}

// An archive in memory (a recording without the files): every byte appended,
// read back as RingBuffer::Read reads. With `hold_first` its first Append
// waits, after saying it has begun, until the test lets it go on.
class MemoryArchive : public OutputArchive {
 public:
  explicit MemoryArchive(bool hold_first = false) : hold_first_(hold_first) {}
  void Append(std::string_view bytes) override {
    if (hold_first_ && !held_.HasBeenNotified()) {
      first_size_ = bytes.size();
      held_.Notify();
      release_.WaitForNotification();
    }
    absl::MutexLock lock(&mu_);
    bytes_.append(bytes);
  }
  void Resized(unsigned, unsigned) override {}
  void Finish(int, int) override {}
  OutputSlice Read(uint64_t cursor, size_t max_bytes) const override {
    absl::MutexLock lock(&mu_);
    OutputSlice out = PlanRead(cursor, 0, bytes_.size(), max_bytes);
    out.data = bytes_.substr(out.start, out.next - out.start);
    return out;
  }
  // The size of the held first Append once it has begun (0: none began).
  size_t WaitHeld(absl::Duration timeout) {
    return held_.WaitForNotificationWithTimeout(timeout) ? first_size_ : 0;
  }
  void Release() { release_.Notify(); }

 private:
  const bool hold_first_;
  absl::Notification held_, release_;
  size_t first_size_ = 0;  // written before held_ is notified
  mutable absl::Mutex mu_;
  std::string bytes_;
};

// A terminal that records into `archive`, playing a fake program (no
// process): `script` runs before the terminal reads its first byte.
std::unique_ptr<Terminal> StartRecorded(std::shared_ptr<OutputArchive> archive, size_t ring,
                                        testing::FakeSpawner* spawner,
                                        std::function<void(testing::FakeProgram&)> script) {
  spawner->OnStart(std::move(script));
  SpawnOptions opts;
  opts.argv = {"fake"};
  auto t = Terminal::Start("t_recorded", opts, ring, {}, std::move(archive), spawner->spawner());
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(t).value() : nullptr;
}

// A zero-byte read asks only where a cursor is: a cursor the ring has
// dropped but the archive holds has no gap (docs/operating.md,
// "Recordings"). The broker reads zero bytes at a session's end while its
// command has not started; a loaded machine let a command print past the
// ring before then, and execute reported a gap of bytes the recording held.
TEST(TerminalTest, AZeroByteReadOlderThanTheRingHasNoGapWhileTheArchiveHoldsIt) {
  constexpr size_t kRing = 4096;
  auto archive = std::make_shared<MemoryArchive>();
  testing::FakeSpawner spawner;
  std::string printed;
  for (int i = 0; printed.size() < 5 * kRing; ++i) printed += std::to_string(i % 10);
  auto t = StartRecorded(archive, kRing, &spawner, nullptr);
  ASSERT_TRUE(t);
  std::shared_ptr<testing::FakeProgram> program = spawner.WaitForProgram(1, absl::Seconds(10));
  ASSERT_NE(program, nullptr);
  ASSERT_TRUE(program->Print(printed).ok());
  while (t->end_offset() < printed.size()) {
    ASSERT_TRUE(t->WaitForOutput(t->end_offset(), absl::Seconds(10)));
  }
  for (bool running : {true, false}) {
    SCOPED_TRACE(running ? "running" : "exited");
    for (uint64_t cursor : {uint64_t{0}, uint64_t{100}, uint64_t{kRing}}) {
      OutputSlice where = t->Read(cursor, 0);
      EXPECT_EQ(where.gap, 0u) << "cursor " << cursor;
      EXPECT_EQ(where.start, cursor);
      EXPECT_EQ(where.next, cursor);
      OutputSlice bytes = t->Read(cursor, 100);
      EXPECT_EQ(bytes.gap, 0u);
      EXPECT_EQ(bytes.data, printed.substr(cursor, 100));
    }
    if (running) {
      program->Exit(0);
      ASSERT_TRUE(t->WaitForExit(absl::Seconds(10)));
    }
  }
}

// The reader thread puts each chunk in the ring, then in the archive. A
// chunk larger than the ring drops its own first bytes from the ring: a
// read in between must not find them in neither.
TEST(TerminalTest, AChunkLargerThanTheRingIsNeverMissingFromBoth) {
  constexpr size_t kRing = 1024;
  auto archive = std::make_shared<MemoryArchive>(/*hold_first=*/true);
  testing::FakeSpawner spawner;
  const std::string printed(3 * kRing, 'x');
  // Printed before the terminal reads: its first read takes it whole.
  auto t = StartRecorded(archive, kRing, &spawner, [&](testing::FakeProgram& program) {
    EXPECT_TRUE(program.Print(printed).ok());
  });
  ASSERT_TRUE(t);
  const size_t first = archive->WaitHeld(absl::Seconds(10));
  EXPECT_GT(first, kRing) << "the first read was smaller than the ring: nothing to check";
  // The archive's first append has begun and not ended.
  OutputSlice read = t->Read(0, 100);
  OutputSlice where = t->Read(0, 0);
  archive->Release();
  EXPECT_EQ(read.gap, 0u);
  EXPECT_EQ(read.start, 0u);
  EXPECT_EQ(where.gap, 0u);
  while (t->end_offset() < printed.size()) {
    ASSERT_TRUE(t->WaitForOutput(t->end_offset(), absl::Seconds(10)));
  }
  OutputSlice all = t->Read(0, 1 << 20);
  EXPECT_EQ(all.gap, 0u);
  EXPECT_EQ(all.data, printed.substr(0, all.data.size()));
  EXPECT_GT(all.data.size(), 0u);
}

}  // namespace
}  // namespace termbridge::session
