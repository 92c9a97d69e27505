// Containment and Warden: cgroup v2 groups where the host allows them, a
// subreaper with /proc scans everywhere, and per-terminal records a restarted
// broker reads (see containment.h for the mechanism and its limits).
#include "broker/session/containment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"

namespace termbridge::session {
namespace {

constexpr char kRecordSuffix[] = ".record";
constexpr absl::Duration kKillPoll = absl::Milliseconds(5);

bool ParseStat(pid_t pid, const char* buf, size_t n, ProcStat* out) {
  // "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
  // cmajflt utime stime cutime cstime priority nice threads itrealvalue
  // starttime ...": comm may hold spaces or parentheses.
  const char* close_paren = static_cast<const char*>(memrchr(buf, ')', n));
  if (close_paren == nullptr || close_paren + 2 >= buf + n) return false;
  int ppid, pgrp, session;
  unsigned long long start;
  if (sscanf(close_paren + 2,
             "%c %d %d %d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
             &out->state, &ppid, &pgrp, &session, &start) != 5) {
    return false;
  }
  out->pid = pid;
  out->ppid = ppid;
  out->pgrp = pgrp;
  out->session = session;
  out->start_time = start;
  return true;
}

bool ReadStat(pid_t pid, ProcStat* out) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return ParseStat(pid, buf, static_cast<size_t>(n), out);
}

bool Exited(char state) { return state == 'Z' || state == 'X'; }

// Writes `text` to a cgroup control file. Returns errno (0 on success).
int WriteControl(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : errno;
  close(fd);
  return err;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Pids cgroup.procs lists.
std::vector<pid_t> GroupProcs(const std::string& group) {
  std::vector<pid_t> out;
  for (absl::string_view line :
       absl::StrSplit(ReadSmallFile(group + "/cgroup.procs"), '\n', absl::SkipEmpty())) {
    int pid;
    if (absl::SimpleAtoi(line, &pid) && pid > 0) out.push_back(pid);
  }
  return out;
}

// Where cgroup v2 is mounted ("" when it is not), from /proc/self/mountinfo.
std::string CgroupTwoMount() {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "id parent major:minor root mountpoint options ... - fstype source super"
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::vector<std::string> after = absl::StrSplit(line.substr(dash + 3), ' ');
    if (after.empty() || after[0] != "cgroup2") continue;
    std::vector<std::string> before = absl::StrSplit(line.substr(0, dash), ' ');
    if (before.size() >= 5) return before[4];
  }
  return "";
}

// This process's cgroup v2 path ("/..."), from the "0::" line.
std::string OwnCgroupPath() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "0::")) return line.substr(3);
  }
  return "";
}

// True when `pid`'s initial environment holds `entry` ("NAME=value").
bool EnvironmentHolds(pid_t pid, const std::string& entry) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string env;
  char buf[16384];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0 && env.size() < (1 << 20)) env.append(buf, n);
  close(fd);
  for (absl::string_view var : absl::StrSplit(env, '\0')) {
    if (var == entry) return true;
  }
  return false;
}

// Kills `pids` and waits until none runs (zombies count as gone), up to
// `deadline`. Returns the pids that were running.
std::vector<pid_t> KillAndWait(const std::vector<std::pair<pid_t, uint64_t>>& pids,
                               absl::Duration deadline) {
  std::vector<pid_t> running;
  for (const auto& [pid, start] : pids) {
    ProcStat st;
    if (!ReadStat(pid, &st) || Exited(st.state) || (start != 0 && st.start_time != start)) continue;
    kill(pid, SIGKILL);
    running.push_back(pid);
  }
  const absl::Time until = absl::Now() + deadline;
  for (pid_t pid : running) {
    ProcStat st;
    while (ReadStat(pid, &st) && !Exited(st.state) && absl::Now() < until) {
      absl::SleepFor(kKillPoll);
    }
  }
  return running;
}

struct Record {
  std::string terminal_id;
  pid_t broker_pid = 0;
  uint64_t broker_start = 0;
  std::string cgroup;
  std::vector<std::pair<pid_t, uint64_t>> pids;  // the first process first
};

// A record is lines: "terminal ID", "broker PID START", "cgroup PATH" and
// "pid PID START" (one per member).
Record ParseRecord(const std::string& text) {
  Record r;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    if (kv.first == "terminal") {
      r.terminal_id = std::string(kv.second);
    } else if (kv.first == "cgroup") {
      r.cgroup = std::string(kv.second);
    } else if (kv.first == "broker" || kv.first == "pid") {
      std::pair<absl::string_view, absl::string_view> ps = absl::StrSplit(kv.second, ' ');
      int pid = 0;
      uint64_t start = 0;
      if (!absl::SimpleAtoi(ps.first, &pid) || !absl::SimpleAtoi(ps.second, &start) || pid <= 0) {
        continue;
      }
      if (kv.first == "broker") {
        r.broker_pid = pid;
        r.broker_start = start;
      } else {
        r.pids.emplace_back(pid, start);
      }
    }
  }
  return r;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = absl::StrCat(path, ".tmp");
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", tmp));
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

// Removes a group once its members are gone (the kernel takes a moment
// after the last exit); gives up after `deadline`.
void RemoveGroup(const std::string& group, absl::Duration deadline) {
  const absl::Time until = absl::Now() + deadline;
  while (rmdir(group.c_str()) != 0 && errno == EBUSY && absl::Now() < until) {
    absl::SleepFor(kKillPoll);
  }
}

// Removes the groups `parent` holds of brokers that no longer run
// (termbridge-<pid>-<start> whose pid has another start time, or none) once
// they are empty: a broker killed with its state dir gone leaves them.
// Groups with processes stay: the next broker with that state dir ends them.
void SweepDeadBrokerGroups(const std::string& parent);

}  // namespace

std::vector<ProcStat> ListProcesses() {
  std::vector<ProcStat> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0) continue;
    ProcStat st;
    if (ReadStat(static_cast<pid_t>(pid), &st)) out.push_back(st);
  }
  closedir(dir);
  return out;
}

uint64_t ProcessStartTime(pid_t pid) {
  ProcStat st;
  return ReadStat(pid, &st) ? st.start_time : 0;
}

namespace {

void SweepDeadBrokerGroups(const std::string& parent) {
  DIR* dir = opendir(parent.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> dead;
  while (dirent* entry = readdir(dir)) {
    absl::string_view name = entry->d_name;
    if (!absl::ConsumePrefix(&name, "termbridge-")) continue;
    std::pair<absl::string_view, absl::string_view> ps = absl::StrSplit(name, '-');
    int pid;
    uint64_t start;
    if (absl::SimpleAtoi(ps.first, &pid) && absl::SimpleAtoi(ps.second, &start) &&
        ProcessStartTime(pid) != start) {
      dead.push_back(absl::StrCat(parent, "/", entry->d_name));
    }
  }
  closedir(dir);
  for (const std::string& group : dead) {
    if (DIR* sub = opendir(group.c_str())) {
      std::vector<std::string> children;
      while (dirent* entry = readdir(sub)) {
        if (entry->d_type == DT_DIR && entry->d_name[0] != '.') {
          children.push_back(absl::StrCat(group, "/", entry->d_name));
        }
      }
      closedir(sub);
      for (const std::string& child : children) {
        if (GroupProcs(child).empty()) rmdir(child.c_str());
      }
    }
    rmdir(group.c_str());
  }
}

}  // namespace

// ---- Warden ----

Warden::Warden(WardenOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Warden>> Warden::Start(WardenOptions options) {
  auto warden = std::unique_ptr<Warden>(new Warden(std::move(options)));
  const WardenOptions& o = warden->options_;
  if (!o.state_dir.empty()) {
    warden->records_dir_ = o.state_dir + "/terminals";
    if (mkdir(warden->records_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::ErrnoToStatus(errno, absl::StrCat("cannot create ", warden->records_dir_));
    }
  }
  if (o.subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    spdlog::warn("event=subreaper_unavailable error=\"{}\"", strerror(errno));
  }
  if (!o.use_cgroups) {
    warden->cgroup_off_reason_ = "switched off";
  } else if (std::string mount = CgroupTwoMount(); mount.empty()) {
    warden->cgroup_off_reason_ = "no cgroup v2 hierarchy is mounted";
  } else {
    std::string own = OwnCgroupPath();
    while (!own.empty() && own.back() == '/') own.pop_back();
    SweepDeadBrokerGroups(absl::StrCat(mount, own));
    std::string base =
        absl::StrCat(mount, own, "/termbridge-", getpid(), "-", ProcessStartTime(getpid()));
    if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
      warden->cgroup_off_reason_ = absl::StrCat("cannot create ", base, ": ", strerror(errno));
    } else if (access((base + "/cgroup.kill").c_str(), W_OK) != 0) {
      rmdir(base.c_str());
      warden->cgroup_off_reason_ = "no cgroup.kill (a kernel before 5.14)";
    } else {
      warden->cgroup_base_ = base;
    }
  }
  warden->scanner_ = thread::NamedThread("tb-warden", [w = warden.get()] { w->ScanLoop(); });
  spdlog::info("event=containment mechanism=\"{}\"", warden->mechanism());
  return warden;
}

Warden::~Warden() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  scanner_.Join();
  if (!cgroup_base_.empty()) rmdir(cgroup_base_.c_str());
}

std::string Warden::mechanism() const {
  if (!cgroup_base_.empty()) return absl::StrCat("cgroup2 ", cgroup_base_);
  return absl::StrCat("subreaper+proc-scan (no cgroups: ", cgroup_off_reason_, ")");
}

std::string Warden::RecordPath(const std::string& terminal_id) const {
  if (records_dir_.empty() || terminal_id.empty() || terminal_id.find('/') != std::string::npos ||
      terminal_id[0] == '.') {
    return "";
  }
  return absl::StrCat(records_dir_, "/", terminal_id, kRecordSuffix);
}

std::unique_ptr<Containment> Warden::Contain(const std::string& terminal_id) {
  std::string group;
  if (!cgroup_base_.empty() && !terminal_id.empty() && terminal_id.find('/') == std::string::npos &&
      terminal_id[0] != '.') {
    group = absl::StrCat(cgroup_base_, "/", terminal_id);
    if (mkdir(group.c_str(), 0755) != 0) {
      spdlog::warn("event=cgroup_unavailable terminal_id={} error=\"{}\"", terminal_id,
                   strerror(errno));
      group.clear();
    }
  }
  auto containment =
      std::unique_ptr<Containment>(new Containment(this, terminal_id, std::move(group)));
  absl::MutexLock lock(&mu_);
  live_.insert(containment.get());
  return containment;
}

void Warden::Forget(Containment* containment) {
  absl::MutexLock lock(&mu_);
  live_.erase(containment);
}

void Warden::AddLeader(pid_t pid) { leaders_.insert(pid); }

void Warden::RemoveLeader(pid_t pid) {
  absl::MutexLock lock(&spawn_mu_);
  auto it = leaders_.find(pid);
  if (it != leaders_.end()) leaders_.erase(it);
}

int Warden::ReapOrphans() {
  const pid_t self = getpid();
  int reaped = 0;
  for (const ProcStat& p : ListProcesses()) {
    if (p.ppid != self || p.state != 'Z') continue;
    absl::MutexLock lock(&spawn_mu_);
    if (leaders_.count(p.pid) != 0) continue;
    int status;
    if (waitpid(p.pid, &status, WNOHANG) == p.pid) ++reaped;
  }
  return reaped;
}

void Warden::ScanLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.scan_interval);
      if (stopping_) return;
    }
    Scan();
  }
}

void Warden::ScanForTest() { Scan(); }

void Warden::Scan() {
  const std::vector<ProcStat> table = ListProcesses();
  {
    absl::MutexLock lock(&mu_);
    for (Containment* c : live_) {
      // A containment busy ending its members is skipped this time.
      if (!c->mu_.TryLock()) continue;
      if (!c->ended_ && c->Track(table)) c->WriteRecord();
      c->mu_.Unlock();
    }
  }
  ReapOrphans();
}

std::vector<Leftover> Warden::EndLeftovers(bool end) {
  std::vector<Leftover> found;
  if (records_dir_.empty()) return found;
  DIR* dir = opendir(records_dir_.c_str());
  if (dir == nullptr) return found;
  std::vector<std::string> files;
  while (dirent* entry = readdir(dir)) {
    if (absl::EndsWith(entry->d_name, kRecordSuffix)) files.push_back(entry->d_name);
  }
  closedir(dir);
  const uint64_t own_start = ProcessStartTime(getpid());
  for (const std::string& name : files) {
    const std::string path = absl::StrCat(records_dir_, "/", name);
    Record record = ParseRecord(ReadSmallFile(path));
    if (record.broker_pid == getpid() && record.broker_start == own_start) continue;
    if (record.broker_pid > 0 && record.broker_start != 0 &&
        ProcessStartTime(record.broker_pid) == record.broker_start) {
      spdlog::warn(
          "event=leftover_skipped terminal_id={} reason=\"its broker (pid {}) still runs\"",
          record.terminal_id, record.broker_pid);
      continue;
    }
    // Its members: those recorded (same start time), its group's, and any
    // process whose environment names the terminal.
    std::vector<std::pair<pid_t, uint64_t>> members = record.pids;
    const bool group = !record.cgroup.empty() && access(record.cgroup.c_str(), F_OK) == 0;
    if (group) {
      for (pid_t pid : GroupProcs(record.cgroup)) members.emplace_back(pid, 0);
    }
    const std::string marker = absl::StrCat(kTerminalIdVariable, "=", record.terminal_id);
    if (!record.terminal_id.empty()) {
      for (const ProcStat& p : ListProcesses()) {
        if (!Exited(p.state) && p.pid != getpid() && EnvironmentHolds(p.pid, marker)) {
          members.emplace_back(p.pid, p.start_time);
        }
      }
    }
    Leftover leftover;
    leftover.terminal_id = record.terminal_id;
    leftover.broker_pid = record.broker_pid;
    for (const auto& [pid, start] : members) {
      ProcStat st;
      if (ReadStat(pid, &st) && !Exited(st.state) && (start == 0 || st.start_time == start) &&
          std::find(leftover.pids.begin(), leftover.pids.end(), pid) == leftover.pids.end()) {
        leftover.pids.push_back(pid);
      }
    }
    if (end) {
      if (group) WriteControl(record.cgroup + "/cgroup.kill", "1");
      KillAndWait(members, absl::Seconds(3));
      if (group) {
        RemoveGroup(record.cgroup, absl::Seconds(1));
        // The parent is the old broker's: it goes with its last terminal.
        rmdir(record.cgroup.substr(0, record.cgroup.rfind('/')).c_str());
      }
      unlink(path.c_str());
      leftover.ended = true;
    }
    if (!leftover.pids.empty()) found.push_back(std::move(leftover));
  }
  ReapOrphans();
  return found;
}

// ---- Containment ----

Containment::Containment(Warden* warden, std::string terminal_id, std::string cgroup)
    : warden_(warden), terminal_id_(std::move(terminal_id)), cgroup_(std::move(cgroup)) {}

Containment::~Containment() {
  EndAll();
  warden_->Forget(this);
}

absl::Status Containment::Adopt(pid_t leader) {
  absl::MutexLock lock(&mu_);
  leader_ = leader;
  leader_start_ = ProcessStartTime(leader);
  tracked_[leader] = leader_start_;
  absl::Status status;
  if (!cgroup_.empty()) {
    // The process runs already (posix_spawn returns after its exec): what it
    // forked before this write is caught by the scans, not the group.
    if (int err = WriteControl(cgroup_ + "/cgroup.procs", std::to_string(leader)); err != 0) {
      status =
          absl::ErrnoToStatus(err, absl::StrCat("cannot move pid ", leader, " into ", cgroup_));
      spdlog::warn("event=cgroup_adopt_failed terminal_id={} error=\"{}\"", terminal_id_,
                   std::string(status.message()));
    }
  }
  WriteRecord();
  return status;
}

std::vector<pid_t> Containment::LiveMembers(const std::vector<ProcStat>& table,
                                            bool by_environment) {
  std::map<pid_t, const ProcStat*> by_pid;
  std::multimap<pid_t, pid_t> children;
  for (const ProcStat& p : table) {
    by_pid[p.pid] = &p;
    children.emplace(p.ppid, p.pid);
  }
  const pid_t self = getpid();
  std::set<pid_t> members;
  std::vector<pid_t> todo;
  // Recorded members still alive as the same process.
  for (const auto& [pid, start] : tracked_) {
    auto it = by_pid.find(pid);
    if (it != by_pid.end() && it->second->start_time == start) todo.push_back(pid);
  }
  // The first process's session: safe while no other process holds its pid
  // (the kernel keeps a pid that names a live session from being reused).
  auto leader = by_pid.find(leader_);
  const bool session_ours =
      leader_ > 0 && (leader == by_pid.end() || leader->second->start_time == leader_start_);
  for (const ProcStat& p : table) {
    if (session_ours && p.session == leader_) todo.push_back(p.pid);
  }
  if (by_environment) {
    const std::string marker = absl::StrCat(kTerminalIdVariable, "=", terminal_id_);
    for (const ProcStat& p : table) {
      if (!Exited(p.state) && p.pid != self && p.ppid != 2 && p.pid != 2 &&
          EnvironmentHolds(p.pid, marker)) {
        todo.push_back(p.pid);
      }
    }
  }
  // And every descendant of those.
  while (!todo.empty()) {
    pid_t pid = todo.back();
    todo.pop_back();
    if (pid == self || pid <= 1 || !members.insert(pid).second) continue;
    auto range = children.equal_range(pid);
    for (auto it = range.first; it != range.second; ++it) todo.push_back(it->second);
  }
  std::vector<pid_t> out;
  for (pid_t pid : members) {
    auto it = by_pid.find(pid);
    if (it != by_pid.end() && !Exited(it->second->state)) out.push_back(pid);
  }
  return out;
}

bool Containment::Track(const std::vector<ProcStat>& table) {
  std::map<pid_t, uint64_t> now;
  std::map<pid_t, uint64_t> starts;
  for (const ProcStat& p : table) starts[p.pid] = p.start_time;
  for (pid_t pid : LiveMembers(table, /*by_environment=*/false)) now[pid] = starts[pid];
  if (now == tracked_) return false;
  tracked_ = std::move(now);
  return true;
}

void Containment::WriteRecord() {
  const std::string path = warden_->RecordPath(terminal_id_);
  if (path.empty()) return;
  std::string text = absl::StrCat("terminal ", terminal_id_, "\nbroker ", getpid(), " ",
                                  ProcessStartTime(getpid()), "\n");
  if (!cgroup_.empty()) absl::StrAppend(&text, "cgroup ", cgroup_, "\n");
  if (leader_ > 0) absl::StrAppend(&text, "pid ", leader_, " ", leader_start_, "\n");
  for (const auto& [pid, start] : tracked_) {
    if (pid != leader_) absl::StrAppend(&text, "pid ", pid, " ", start, "\n");
  }
  if (absl::Status written = WriteFileAtomically(path, text); !written.ok()) {
    spdlog::warn("event=containment_record_failed terminal_id={} error=\"{}\"", terminal_id_,
                 std::string(written.message()));
  }
}

std::vector<pid_t> Containment::Members() { return Members(ListProcesses()); }

std::vector<pid_t> Containment::Members(const std::vector<ProcStat>& table) {
  absl::MutexLock lock(&mu_);
  std::vector<pid_t> out = LiveMembers(table, cgroup_.empty());
  if (!cgroup_.empty()) {
    for (pid_t pid : GroupProcs(cgroup_)) {
      if (std::find(out.begin(), out.end(), pid) == out.end()) out.push_back(pid);
    }
  }
  return out;
}

int Containment::EndAll(absl::Duration deadline) {
  absl::MutexLock lock(&mu_);
  if (ended_) return 0;
  // Each process signalled, with its start time: a process leaves
  // cgroup.procs before it is a zombie, so "ended" waits until /proc no
  // longer shows any of them running (a later process with a reused pid has
  // another start time and is not waited for).
  std::map<pid_t, uint64_t> signalled;
  if (!cgroup_.empty()) WriteControl(cgroup_ + "/cgroup.kill", "1");
  const absl::Time until = absl::Now() + deadline;
  for (;;) {
    const std::vector<ProcStat> table = ListProcesses();
    std::vector<pid_t> members = LiveMembers(table, cgroup_.empty());
    if (!cgroup_.empty()) {
      for (pid_t pid : GroupProcs(cgroup_)) members.push_back(pid);
    }
    for (pid_t pid : members) {
      if (kill(pid, SIGKILL) == 0 && !signalled.count(pid)) {
        signalled[pid] = ProcessStartTime(pid);
      }
    }
    // Killed but still exiting: wait for them without signalling again.
    for (const ProcStat& p : table) {
      auto it = signalled.find(p.pid);
      if (it != signalled.end() && it->second == p.start_time && !Exited(p.state) &&
          std::find(members.begin(), members.end(), p.pid) == members.end()) {
        members.push_back(p.pid);
      }
    }
    warden_->ReapOrphans();
    if (members.empty()) break;
    if (absl::Now() >= until) {
      spdlog::warn("event=containment_incomplete terminal_id={} running={}", terminal_id_,
                   members.size());
      break;
    }
    absl::SleepFor(kKillPoll);
  }
  if (!cgroup_.empty()) RemoveGroup(cgroup_, absl::Seconds(1));
  if (const std::string path = warden_->RecordPath(terminal_id_); !path.empty()) {
    unlink(path.c_str());
  }
  tracked_.clear();
  ended_ = true;
  if (signalled.size() > (leader_ > 0 && signalled.count(leader_) ? 1u : 0u)) {
    spdlog::info("event=terminal_processes_ended terminal_id={} count={}", terminal_id_,
                 signalled.size());
  }
  return static_cast<int>(signalled.size());
}

}  // namespace termbridge::session
