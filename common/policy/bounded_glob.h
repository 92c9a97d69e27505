// glob(3) with a bound on the work: the directory entries it may list, in
// all, for one pattern. The policy globs patterns an agent wrote (`ls
// /*/*/*/*`) to see what they name, and must not walk a whole file system
// to do so (docs/security.md, "Judging a line costs little").
#ifndef TERMBRIDGE_COMMON_POLICY_BOUNDED_GLOB_H_
#define TERMBRIDGE_COMMON_POLICY_BOUNDED_GLOB_H_

#include <cstddef>
#include <string>
#include <vector>

namespace termbridge::policy::internal {

// Directory entries one pattern may list before its matching stops.
inline constexpr size_t kMaxGlobEntries = 20000;

struct GlobResult {
  std::vector<std::string> paths;  // the matches found, unsorted
  bool truncated = false;          // listing stopped at kMaxGlobEntries: there may be more
};

// The names `pattern` matches now, as glob(3) with GLOB_NOSORT and `flags`
// (GLOB_NOESCAPE, ...) finds them, listing at most kMaxGlobEntries entries.
GlobResult BoundedGlob(const std::string& pattern, int flags);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_BOUNDED_GLOB_H_
