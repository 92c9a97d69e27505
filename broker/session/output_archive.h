// OutputArchive is where a terminal's output is kept beyond its ring: the
// terminal appends every byte it puts in the ring (on its reader thread) and
// reads from the archive what the ring no longer holds. broker/recording
// implements it with files in the state directory (docs/operating.md,
// "Recordings"); a terminal without one reads only from its ring.
#ifndef TERMBRIDGE_BROKER_SESSION_OUTPUT_ARCHIVE_H_
#define TERMBRIDGE_BROKER_SESSION_OUTPUT_ARCHIVE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "broker/session/ring_buffer.h"

namespace termbridge::session {

class OutputArchive {
 public:
  virtual ~OutputArchive() = default;
  // The terminal's reader thread, in stream order, right after the same
  // bytes went into the ring. Never blocks on anything but the write itself;
  // a failed write leaves a gap in the archive, never stops the terminal.
  virtual void Append(std::string_view bytes) = 0;
  // The window size changed (for replay).
  virtual void Resized(unsigned cols, unsigned rows) = 0;
  // Once, after the last Append: the process ended with this status.
  virtual void Finish(int exit_code, int term_signal) = 0;
  // Any thread: up to `max_bytes` from `cursor`, as RingBuffer::Read reads
  // (a cursor before what the archive holds, or in a hole a failed write
  // left, is moved up with the skipped count in `gap`).
  virtual OutputSlice Read(uint64_t cursor, size_t max_bytes) const = 0;
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_OUTPUT_ARCHIVE_H_
