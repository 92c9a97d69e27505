// Containment makes every process started in a terminal end with it, also
// those that left its session or process group (setsid, nohup, a double
// fork, disown), and lets a broker restarted after a crash end what its
// predecessor's terminals left running (docs/security.md, "A closed terminal
// leaves nothing behind").
//
// Mechanism. One Warden per broker:
//  - cgroup v2 where the host lets the broker create groups (a writable v2
//    hierarchy: /sys/fs/cgroup, the hybrid /sys/fs/cgroup/unified, or a
//    subtree delegated to a user-mode broker): each terminal gets a group
//    <broker's group>/termbridge-<broker pid>/<terminal id>; the terminal's
//    first process is moved into it right after it starts, every process it
//    forks is born inside, and ending the terminal writes cgroup.kill (one
//    atomic SIGKILL to every member, however it detached itself).
//  - Everywhere, and alone where cgroups cannot be had: the broker is a
//    child subreaper (PR_SET_CHILD_SUBREAPER), so orphans of a terminal
//    reparent to the broker instead of init, and a scan of /proc once a
//    second records each terminal's members (descendants of its first
//    process, processes of its session, and the ones recorded before, by pid
//    and start time). Ending the terminal kills the members of a fresh scan,
//    the recorded ones whose start time still matches, and (without a
//    cgroup) every process whose environment carries the terminal's
//    TERMBRIDGE_TERMINAL_ID, until none is left.
//  - A record per terminal in <state dir>/terminals/<id>.json (its group,
//    its recorded pids with their start times, /proc/<pid>/stat field 22)
//    lets the next broker end them after a SIGKILL (EndLeftovers).
// What it cannot catch is written down in docs/security.md: a process
// started for the terminal by a daemon (at, cron, systemd-run, a container
// runtime) never was its member; without a cgroup, a process that left the
// session, cleared its environment and had its parent die between two scans
// is not known; a root process can move itself out of the group.
#ifndef TERMBRIDGE_BROKER_SESSION_CONTAINMENT_H_
#define TERMBRIDGE_BROKER_SESSION_CONTAINMENT_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/thread/named_thread.h"

namespace termbridge::session {

// The environment variable naming the terminal a process was started in.
inline constexpr char kTerminalIdVariable[] = "TERMBRIDGE_TERMINAL_ID";

// One line of /proc/<pid>/stat.
struct ProcStat {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  char state = '?';
  uint64_t start_time = 0;  // field 22: clock ticks after boot
};
// Every process /proc lists now.
std::vector<ProcStat> ListProcesses();
// Start time (field 22) of `pid`; 0 when it does not exist.
uint64_t ProcessStartTime(pid_t pid);

struct WardenOptions {
  // Records go to <state_dir>/terminals (empty: no records).
  std::string state_dir;
  // Try cgroup v2 (false: the subreaper and /proc scans alone).
  bool use_cgroups = true;
  // Make this process a child subreaper (process-wide and lasting).
  bool subreaper = true;
  // How often members are recorded and orphans reaped.
  absl::Duration scan_interval = absl::Seconds(1);
};

class Containment;

// What EndLeftovers found of one terminal of a broker before this one.
struct Leftover {
  std::string terminal_id;
  pid_t broker_pid = 0;
  std::vector<pid_t> pids;  // found running
  bool ended = false;       // killed (and gone), or only reported
};

class Warden {
 public:
  // Becomes a subreaper, picks the mechanism and starts the scan thread
  // ("tb-warden"). Fails only when the records directory cannot be made.
  static absl::StatusOr<std::unique_ptr<Warden>> Start(WardenOptions options);
  // Joins the scan thread. Containments must be gone before.
  ~Warden();
  Warden(const Warden&) = delete;
  Warden& operator=(const Warden&) = delete;

  // "cgroup2 <path>" or "subreaper+proc-scan" (the reason cgroups are off follows).
  std::string mechanism() const;
  bool uses_cgroups() const { return !cgroup_base_.empty(); }

  // A containment for terminal `terminal_id` (a new cgroup when in use).
  std::unique_ptr<Containment> Contain(const std::string& terminal_id);

  // Reads the records a previous broker with this state dir left, and for
  // each finds its processes still running; with `end`, kills them (SIGKILL)
  // and removes its group and record, else only reports them (the record
  // stays). Records of a broker still running are left alone.
  std::vector<Leftover> EndLeftovers(bool end);

  // Spawning a terminal's first process holds this lock, and registers the
  // pid before releasing it: the scan never reaps a terminal's first process
  // (its Terminal waits for it), only orphans.
  absl::Mutex& spawn_mu() ABSL_LOCK_RETURNED(spawn_mu_) { return spawn_mu_; }
  void AddLeader(pid_t pid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(spawn_mu_);
  // After the leader was reaped by its owner.
  void RemoveLeader(pid_t pid);
  // Reaps every exited child of this process that is no terminal's first
  // process (orphans the subreaper inherited). Returns how many.
  int ReapOrphans();

  // One scan now (tests; the thread does it every scan_interval).
  void ScanForTest();

 private:
  friend class Containment;
  explicit Warden(WardenOptions options);
  void ScanLoop();
  void Scan();
  void Forget(Containment* containment);
  std::string RecordPath(const std::string& terminal_id) const;

  const WardenOptions options_;
  std::string records_dir_;  // "" when none
  std::string cgroup_base_;  // this broker's parent group; "" without cgroups
  std::string cgroup_off_reason_;
  absl::Mutex spawn_mu_;
  std::multiset<pid_t> leaders_ ABSL_GUARDED_BY(spawn_mu_);  // a pid reused at once is twice here
  absl::Mutex mu_;
  std::set<Containment*> live_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  thread::NamedThread scanner_;  // "tb-warden", joined by ~Warden
};

// The processes of one terminal. Thread-safe.
class Containment {
 public:
  // Ends every member (EndAll) and removes the group and the record.
  ~Containment();
  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;

  // Takes the terminal's first process (and so all it will start) in.
  absl::Status Adopt(pid_t leader);
  // SIGKILL to every member until none runs (at most `deadline`), orphans
  // reaped; then the group and record are removed. Returns how many
  // processes it signalled. Idempotent; later calls find nothing.
  int EndAll(absl::Duration deadline = absl::Seconds(3));
  // Members found now (the first process included while it runs).
  std::vector<pid_t> Members();
  // The same, from a /proc table the caller has just read (ListProcesses).
  std::vector<pid_t> Members(const std::vector<ProcStat>& table);
  const std::string& cgroup() const { return cgroup_; }

 private:
  friend class Warden;
  Containment(Warden* warden, std::string terminal_id, std::string cgroup);
  // Updates tracked_ from a /proc table; true when it changed.
  bool Track(const std::vector<ProcStat>& table) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteRecord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<pid_t> LiveMembers(const std::vector<ProcStat>& table, bool by_environment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Warden* const warden_;
  const std::string terminal_id_;
  const std::string cgroup_;  // "" without cgroups
  absl::Mutex mu_;
  pid_t leader_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t leader_start_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<pid_t, uint64_t> tracked_ ABSL_GUARDED_BY(mu_);  // pid -> start time
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_CONTAINMENT_H_
