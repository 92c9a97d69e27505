// RingBuffer: a fixed-capacity byte ring addressed by absolute offsets, kept
// in blocks that are allocated when output first reaches them.
#include "broker/session/ring_buffer.h"

#include <algorithm>

namespace termbridge::session {

RingBuffer::RingBuffer(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)),
      blocks_((capacity_ + kBlockBytes - 1) / kBlockBytes) {}

char* RingBuffer::At(size_t pos, size_t* contiguous) {
  const size_t block = pos / kBlockBytes;
  const size_t within = pos % kBlockBytes;
  const size_t block_size = std::min(kBlockBytes, capacity_ - block * kBlockBytes);
  if (!blocks_[block]) {
    // Not zero-filled: Read never returns bytes that were not appended.
    blocks_[block].reset(new char[block_size]);
    allocated_ += block_size;
  }
  *contiguous = block_size - within;
  return blocks_[block].get() + within;
}

void RingBuffer::Append(std::string_view bytes) {
  if (bytes.size() >= capacity_) {
    // Only the last `capacity_` bytes survive.
    const uint64_t skipped = bytes.size() - capacity_;
    end_ += skipped;
    bytes.remove_prefix(skipped);
  }
  while (!bytes.empty()) {
    size_t room = 0;
    char* dst = At(static_cast<size_t>(end_ % capacity_), &room);
    const size_t n = std::min(bytes.size(), room);
    std::copy_n(bytes.data(), n, dst);
    bytes.remove_prefix(n);
    end_ += n;
    size_ = std::min(capacity_, size_ + n);
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
  size_t left = n;
  while (left > 0) {
    const size_t pos = static_cast<size_t>(cursor % capacity_);
    const size_t block = pos / kBlockBytes;
    const size_t within = pos % kBlockBytes;
    const size_t block_size = std::min(kBlockBytes, capacity_ - block * kBlockBytes);
    const size_t chunk = std::min(left, block_size - within);
    out.data.append(blocks_[block].get() + within, chunk);
    left -= chunk;
    cursor += chunk;
  }
  return out;
}

OutputSlice RingBuffer::Tail(size_t max_bytes) const {
  const uint64_t held = std::min<uint64_t>(size_, max_bytes);
  return Read(end_ - held, max_bytes);
}

}  // namespace termbridge::session
