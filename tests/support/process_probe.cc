// /proc-based liveness checks for tests.
#include "tests/support/process_probe.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace termbridge::testing {
namespace {

struct ProcStat {
  char state = '?';
  pid_t pgrp = 0;
};

bool ReadStat(pid_t pid, ProcStat* out) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char buf[1024] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  std::string stat(buf, n);
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  // After "comm)": state ppid pgrp ...
  out->state = stat[paren + 2];
  int ppid = 0, pgrp = 0;
  if (sscanf(stat.c_str() + paren + 3, "%d %d", &ppid, &pgrp) != 2) return false;
  out->pgrp = pgrp;
  return true;
}

bool Dead(const ProcStat& s) { return s.state == 'Z' || s.state == 'X'; }

}  // namespace

bool ProcessAlive(pid_t pid) {
  ProcStat s;
  return ReadStat(pid, &s) && !Dead(s);
}

std::vector<pid_t> LiveGroupMembers(pid_t pgid) {
  std::vector<pid_t> members;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return members;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    ProcStat s;
    if (ReadStat(static_cast<pid_t>(pid), &s) && s.pgrp == pgid && !Dead(s)) {
      members.push_back(static_cast<pid_t>(pid));
    }
  }
  closedir(dir);
  return members;
}

bool WaitProcessGone(pid_t pid, int timeout_ms) {
  for (int waited = 0; ProcessAlive(pid); waited += 10) {
    if (waited >= timeout_ms) return false;
    usleep(10 * 1000);
  }
  return true;
}

bool WaitGroupGone(pid_t pgid, int timeout_ms) {
  for (int waited = 0; !LiveGroupMembers(pgid).empty(); waited += 10) {
    if (waited >= timeout_ms) return false;
    usleep(10 * 1000);
  }
  return true;
}

}  // namespace termbridge::testing
