// RingBuffer: a fixed-capacity byte ring addressed by absolute offsets.
#include "broker/session/ring_buffer.h"

#include <algorithm>

namespace termbridge::session {

RingBuffer::RingBuffer(size_t capacity) : buf_(std::max<size_t>(capacity, 1), '\0') {}

void RingBuffer::Append(std::string_view bytes) {
  const size_t cap = buf_.size();
  if (bytes.size() >= cap) {
    // Only the last `cap` bytes survive.
    const uint64_t skipped = bytes.size() - cap;
    end_ += skipped;
    bytes.remove_prefix(skipped);
  }
  size_t pos = static_cast<size_t>(end_ % cap);
  while (!bytes.empty()) {
    const size_t n = std::min(bytes.size(), cap - pos);
    buf_.replace(pos, n, bytes.data(), n);
    bytes.remove_prefix(n);
    end_ += n;
    size_ = std::min(cap, size_ + n);
    pos = 0;
  }
}

OutputSlice RingBuffer::Read(uint64_t cursor, size_t max_bytes) const {
  OutputSlice out;
  const uint64_t begin = begin_offset();
  if (cursor < begin) {
    out.gap = begin - cursor;
    cursor = begin;
  }
  cursor = std::min(cursor, end_);
  const size_t n = static_cast<size_t>(std::min<uint64_t>(end_ - cursor, max_bytes));
  out.start = cursor;
  out.next = cursor + n;
  out.data.reserve(n);
  const size_t cap = buf_.size();
  size_t pos = static_cast<size_t>(cursor % cap);
  size_t left = n;
  while (left > 0) {
    const size_t chunk = std::min(left, cap - pos);
    out.data.append(buf_, pos, chunk);
    left -= chunk;
    pos = 0;
  }
  return out;
}

OutputSlice RingBuffer::Tail(size_t max_bytes) const {
  const uint64_t held = std::min<uint64_t>(size_, max_bytes);
  return Read(end_ - held, max_bytes);
}

}  // namespace termbridge::session
