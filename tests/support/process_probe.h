// Test support: asks /proc whether processes are still alive, the way tmux's
// regress tests check that killing a session leaves nothing behind. A zombie
// counts as dead: it has exited and only waits for its parent to reap it.
#ifndef TERMBRIDGE_TESTS_SUPPORT_PROCESS_PROBE_H_
#define TERMBRIDGE_TESTS_SUPPORT_PROCESS_PROBE_H_

#include <sys/types.h>

#include <vector>

namespace termbridge::testing {

bool ProcessAlive(pid_t pid);
// Live (non-zombie) members of process group `pgid`.
std::vector<pid_t> LiveGroupMembers(pid_t pgid);
// Polls every 10 ms, up to `timeout_ms`, until `pid` is dead. There is no
// event for the death of a process that is not our child, so this polls.
bool WaitProcessGone(pid_t pid, int timeout_ms = 5000);
bool WaitGroupGone(pid_t pgid, int timeout_ms = 5000);

}  // namespace termbridge::testing

#endif  // TERMBRIDGE_TESTS_SUPPORT_PROCESS_PROBE_H_
