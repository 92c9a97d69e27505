#include "broker/server/process_tuning.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace termbridge::broker {
namespace {

long MinorFaults() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

// AddressSanitizer brings its own allocator, which takes no mallopt settings:
// these cases are about glibc's malloc, which the shipped broker uses.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kGlibcMalloc = false;
#else
constexpr bool kGlibcMalloc = true;
#endif

constexpr size_t kFrame = 1 << 20;  // the largest Attach frame
constexpr int kInFlight = 4;        // frames allocated before the first is freed
constexpr int kRounds = 5;
constexpr long kPagesPerRound = kInFlight * kFrame / 4096;

// What a stream of output does to malloc: a burst of frame-sized buffers is
// allocated and written, then all are freed; `kRounds` bursts. Returns the
// page faults of every burst after the first (which always touches new pages).
long FaultsAfterFirstRound() {
  long after_first = 0;
  for (int round = 0; round < kRounds; ++round) {
    if (round == 1) after_first = MinorFaults();
    char* frames[kInFlight];
    for (char*& frame : frames) {
      frame = static_cast<char*>(malloc(kFrame));
      if (frame == nullptr) return -1;
      memset(frame, 'x', kFrame);
    }
    for (char* frame : frames) free(frame);
  }
  return MinorFaults() - after_first;
}

// Each case runs in a child so that the malloc settings cannot leak between cases.
TEST(ProcessTuningTest, FreedBuffersAreReusedWithoutFreshPageFaults) {
  if (!kGlibcMalloc) GTEST_SKIP() << "malloc is AddressSanitizer's in this build";
  EXPECT_EXIT(
      {
        if (!KeepFreedMemoryForReuse()) _exit(2);
        long faults = FaultsAfterFirstRound();
        // Reused memory: a handful of faults, not a fresh page for every page written.
        _exit(faults >= 0 && faults < kPagesPerRound / 8 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// The control: with glibc's defaults the freed burst goes back to the kernel and
// the next one faults its pages in again, so the test above measures the
// settings and not an allocator that reuses memory anyway.
TEST(ProcessTuningTest, GlibcDefaultsTouchFreshPagesForEveryBuffer) {
  if (!kGlibcMalloc) GTEST_SKIP() << "malloc is AddressSanitizer's in this build";
  EXPECT_EXIT(
      {
        long faults = FaultsAfterFirstRound();
        _exit(faults >= (kRounds - 1) * kPagesPerRound / 2 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace termbridge::broker
