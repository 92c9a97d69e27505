// BoundedGlob: glibc's glob(3) over its GLOB_ALTDIRFUNC hooks, whose
// readdir reports the end of every directory once the pattern has listed
// kMaxGlobEntries entries. The count lives in a thread_local because the
// hooks take no context; each call sets and clears its own.
#include "common/policy/bounded_glob.h"

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>

namespace termbridge::policy::internal {
namespace {

struct Budget {
  size_t listed = 0;
  bool truncated = false;
};
thread_local Budget* current = nullptr;

void* OpenDir(const char* path) { return opendir(path); }
void CloseDir(void* dir) { closedir(static_cast<DIR*>(dir)); }
struct dirent* ReadDir(void* dir) {
  if (current != nullptr && current->listed >= kMaxGlobEntries) {
    current->truncated = true;
    return nullptr;
  }
  struct dirent* e = readdir(static_cast<DIR*>(dir));
  if (e != nullptr && current != nullptr) ++current->listed;
  return e;
}
int Lstat(const char* path, struct stat* st) { return lstat(path, st); }
int Stat(const char* path, struct stat* st) { return stat(path, st); }

}  // namespace

GlobResult BoundedGlob(const std::string& pattern, int flags) {
  Budget budget;
  current = &budget;
  glob_t g = {};
  g.gl_opendir = OpenDir;
  g.gl_readdir = ReadDir;
  g.gl_closedir = CloseDir;
  g.gl_lstat = Lstat;
  g.gl_stat = Stat;
  GlobResult out;
  if (glob(pattern.c_str(), flags | GLOB_NOSORT | GLOB_ALTDIRFUNC, nullptr, &g) == 0) {
    out.paths.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  }
  globfree(&g);
  current = nullptr;
  out.truncated = budget.truncated;
  return out;
}

}  // namespace termbridge::policy::internal
