#include "broker/server/process_tuning.h"

#include <malloc.h>

#include "absl/synchronization/mutex.h"

namespace termbridge::broker {
namespace {

// Allocations below this come from the heap, not a private mmap; larger than
// the biggest Attach frame and gRPC's read slices.
constexpr int kMmapThresholdBytes = 32 << 20;
// Free memory at the top of a heap beyond this goes back to the kernel: a
// few frames' worth stays for reuse. (Retaining more bought no throughput and
// made every fork of a new shell slower when shells were forked; they are
// spawned without copying page tables now, see PtyProcess::Spawn.)
constexpr int kTrimThresholdBytes = 8 << 20;
// Each arena keeps up to kTrimThresholdBytes and more in free chunks, and
// glibc makes up to 8 per core, one per thread that allocates first: under a
// soak with 8 agents the broker grew for 80 s before it levelled off (about
// +50 MB), while two arenas stayed flat under 85 MB at the same throughput
// (tests/bench/README.md "Soak").
constexpr int kArenaMax = 2;

}  // namespace

bool KeepFreedMemoryForReuse() {
  bool ok = mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) == 1 && ok;
  ok = mallopt(M_ARENA_MAX, kArenaMax) == 1 && ok;
  return ok;
}

void SkipMutexDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace termbridge::broker
