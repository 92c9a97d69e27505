// RingBuffer keeps the most recent bytes of a terminal's output, addressed by
// a monotonic byte offset that never wraps or resets. Readers hold a cursor
// (an offset); a cursor older than what the ring still holds gets an explicit
// gap instead of silently skipping bytes. Memory grows with the output, up to
// the capacity: a quiet terminal holds only what it printed, not a full ring.
// Not thread-safe: the owner locks.
#ifndef TERMBRIDGE_BROKER_SESSION_RING_BUFFER_H_
#define TERMBRIDGE_BROKER_SESSION_RING_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace termbridge::session {

struct OutputSlice {
  uint64_t start = 0;  // offset of data[0]
  uint64_t next = 0;   // cursor to pass to the next read (start + data.size())
  uint64_t gap = 0;    // bytes between the requested cursor and `start` that were overwritten
  std::string data;
};

// Where a read of up to `max_bytes` from `cursor` lands in output that holds
// [begin, end): start, next and gap filled in, data left empty for the caller.
OutputSlice PlanRead(uint64_t cursor, uint64_t begin, uint64_t end, size_t max_bytes);

class RingBuffer {
 public:
  // capacity: bytes kept, > 0. Reserves address space only; when even that
  // fails (a tight `ulimit -v`), ok() is false and the ring must not be used.
  explicit RingBuffer(size_t capacity);
  ~RingBuffer();
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  void Append(std::string_view bytes);

  // Returns at most max_bytes starting at `cursor`. A cursor before
  // begin_offset() is moved up to it and the skipped count is reported in
  // `gap`; a cursor past end_offset() is clamped to end_offset().
  OutputSlice Read(uint64_t cursor, size_t max_bytes) const;

  // Returns the last max_bytes bytes (or fewer).
  OutputSlice Tail(size_t max_bytes) const;

  uint64_t begin_offset() const { return end_ - size_; }  // oldest byte still held
  uint64_t end_offset() const { return end_; }            // total bytes ever appended
  size_t capacity() const { return capacity_; }
  bool ok() const { return data_ != nullptr; }
  // Bytes of memory the ring holds now (its resident pages).
  size_t resident() const;

 private:
  const size_t capacity_;
  char* data_ = nullptr;  // offset o is at data_[o % capacity_]
  uint64_t end_ = 0;
  size_t size_ = 0;
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_RING_BUFFER_H_
