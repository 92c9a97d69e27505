// NamedThread and ThreadGroup as /proc shows them: the names a person sees in
// top -H, the thread count back to where it was once the owner is done, the
// bound, and that nothing runs after a refusal.
#include "common/thread/named_thread.h"

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace termbridge::thread {
namespace {

pid_t Tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The name /proc shows for thread `tid` of this process.
std::string CommOf(pid_t tid) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// The number of threads of this process, as /proc/self/task lists them.
int TaskCount() {
  DIR* dir = opendir("/proc/self/task");
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

// Counts, at thread exit, the threads that ran `Touch`: a thread whose
// thread_local objects are destroyed has run to its very end.
std::atomic<int> exited{0};
struct ExitCounter {
  ~ExitCounter() { exited.fetch_add(1); }
};
void Touch() { thread_local ExitCounter counter; }

TEST(NamedThreadTest, NameIsVisibleInProc) {
  absl::Notification started, release;
  std::atomic<pid_t> tid{0};
  NamedThread thread("tb-test-named", [&] {
    tid = Tid();
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();
  EXPECT_EQ(CommOf(tid), "tb-test-named");
  release.Notify();
}

TEST(NamedThreadTest, LongNameIsCutToWhatLinuxKeeps) {
  std::string seen;
  {
    NamedThread thread("tb-a-name-far-longer-than-fifteen", [&] { seen = CommOf(Tid()); });
  }
  EXPECT_EQ(seen, "tb-a-name-far-l");
  EXPECT_EQ(seen.size(), kMaxNameBytes);
}

TEST(NamedThreadTest, DestructorJoins) {
  const int baseline = TaskCount();
  exited = 0;
  absl::Notification started;
  {
    NamedThread thread("tb-test-join", [&] {
      Touch();
      started.Notify();
      // Work that is still going when the destructor starts: without a
      // join the count below would be read before the thread ends.
      absl::SleepFor(absl::Milliseconds(50));
    });
    started.WaitForNotification();
    EXPECT_EQ(TaskCount(), baseline + 1);
  }
  EXPECT_EQ(exited.load(), 1);  // the thread ran to its end before the destructor returned
  EXPECT_EQ(TaskCount(), baseline);
}

TEST(NamedThreadTest, MoveAssignmentJoinsTheThreadItHeld) {
  exited = 0;
  NamedThread thread("tb-test-first", [] {
    Touch();
    absl::SleepFor(absl::Milliseconds(20));
  });
  thread = NamedThread("tb-test-second", [] {});
  EXPECT_EQ(exited.load(), 1);
  thread.Join();
  EXPECT_FALSE(thread.joinable());
  thread.Join();  // a second Join is a no-op
}

// What a group's bodies use is declared before the group in these tests: the
// group's destructor joins its threads, so they must die after it.

TEST(ThreadGroupTest, ThreadsCarryTheGroupName) {
  absl::Notification release;
  std::atomic<int> started{0};
  std::vector<std::atomic<pid_t>> tids(3);
  ThreadGroup group("tb-test-group", 4);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(group
                    .Start([&, i] {
                      tids[i] = Tid();
                      started.fetch_add(1);
                      release.WaitForNotification();
                    })
                    .ok());
  }
  while (started.load() < 3) absl::SleepFor(absl::Milliseconds(1));
  for (auto& tid : tids) EXPECT_EQ(CommOf(tid), "tb-test-group");
  EXPECT_EQ(group.running(), 3u);
  release.Notify();
}

TEST(ThreadGroupTest, PastTheBoundStartRefusesAndRunsNothing) {
  absl::Notification release;
  ThreadGroup group("tb-test-bound", 2);
  ASSERT_TRUE(group.Start([&] { release.WaitForNotification(); }).ok());
  ASSERT_TRUE(group.Start([&] { release.WaitForNotification(); }).ok());
  bool ran = false;
  absl::Status refused = group.Start([&] { ran = true; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "tb-test-bound: 2 threads running, the most allowed");
  release.Notify();
  group.JoinAll();
  EXPECT_FALSE(ran);
}

TEST(ThreadGroupTest, RoomComesBackWhenABodyReturns) {
  absl::Notification done;
  ThreadGroup group("tb-test-room", 1);
  ASSERT_TRUE(group.Start([&] { done.Notify(); }).ok());
  done.WaitForNotification();
  // The body has returned; its thread leaves running_ a moment later.
  absl::Status started = group.Start([] {});
  while (!started.ok()) {
    ASSERT_EQ(started.code(), absl::StatusCode::kResourceExhausted);
    absl::SleepFor(absl::Milliseconds(1));
    started = group.Start([] {});
  }
}

TEST(ThreadGroupTest, StartJoinsTheThreadsThatFinished) {
  exited = 0;
  absl::Notification go, release;
  ThreadGroup group("tb-test-reap", 8);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(group
                    .Start([&] {
                      go.WaitForNotification();
                      Touch();
                    })
                    .ok());
  }
  go.Notify();
  while (group.running() > 0) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(group.held(), 5u);  // finished, not joined yet
  ASSERT_TRUE(group.Start([&] { release.WaitForNotification(); }).ok());
  EXPECT_EQ(group.held(), 1u);  // the five were joined: they ran to their end
  EXPECT_EQ(exited.load(), 5);
  release.Notify();
}

TEST(ThreadGroupTest, DestructorJoinsEveryThread) {
  const int baseline = TaskCount();
  exited = 0;
  absl::Notification release;
  {
    ThreadGroup group("tb-test-all", 16);
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(group
                      .Start([&] {
                        Touch();
                        release.WaitForNotification();
                      })
                      .ok());
    }
    EXPECT_EQ(TaskCount(), baseline + 10);
    release.Notify();
  }
  EXPECT_EQ(exited.load(), 10);
  EXPECT_EQ(TaskCount(), baseline);
}

TEST(ThreadGroupTest, JoinAllRefusesLaterStarts) {
  absl::Notification inside, release;
  absl::Status nested;
  ThreadGroup group("tb-test-closed", 4);
  ASSERT_TRUE(group
                  .Start([&] {
                    inside.Notify();
                    release.WaitForNotification();
                    nested = group.Start([] {});  // while JoinAll waits for this body
                  })
                  .ok());
  inside.WaitForNotification();
  NamedThread closer("tb-test-closer", [&] { group.JoinAll(); });
  // Starts succeed (or meet the bound) until JoinAll has begun.
  while (group.Start([] {}).code() != absl::StatusCode::kFailedPrecondition) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  release.Notify();
  closer.Join();
  EXPECT_EQ(nested.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(group.Start([] {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(group.held(), 0u);
}

}  // namespace
}  // namespace termbridge::thread
