// RingBuffer: a fixed-capacity byte ring addressed by absolute offsets. The
// bytes live in one anonymous mapping of the full capacity; the kernel backs
// a page only when output first reaches it.
#include "broker/session/ring_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace termbridge::session {
namespace {

constexpr size_t kHugePage = 2 << 20;

}  // namespace

RingBuffer::RingBuffer(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {
  // Rings of 4 MiB and more start on a 2 MiB boundary (mapped with 2 MiB to
  // spare, the unaligned ends unmapped again), so every 2 MiB past the first
  // can be one huge page. Kernels since 6.7 align such mappings themselves;
  // on older ones (Debian 12 ships 6.1) a misaligned 8 MiB ring held two huge
  // pages and took 512 more small-page faults (~14 us each on a VM here).
  const size_t slack = capacity_ >= 2 * kHugePage ? kHugePage : 0;
  void* p = mmap(nullptr, capacity_ + slack, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  char* base = static_cast<char*>(p);
  if (slack > 0) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(base);
    const size_t head = static_cast<size_t>(((at + kHugePage - 1) & ~(kHugePage - 1)) - at);
    if (head > 0) munmap(base, head);
    if (slack - head > 0) munmap(base + head + capacity_, slack - head);
    base += head;
  }
  data_ = base;
  // A terminal's child never reads another terminal's output: fork need not
  // copy the page tables of every ring into each new shell.
  madvise(data_, capacity_, MADV_DONTFORK);
  // Past the first 2 MiB, a terminal that prints that much is printing in
  // bulk: let the kernel back it with huge pages (one page fault per 2 MiB
  // instead of 512). The first 2 MiB stay in small pages, so a quiet terminal
  // holds only the few pages it wrote.
  if (capacity_ >= 2 * kHugePage) {
    madvise(data_ + kHugePage, capacity_ - kHugePage, MADV_HUGEPAGE);
  }
}

RingBuffer::~RingBuffer() {
  if (data_ != nullptr) munmap(data_, capacity_);
}

void RingBuffer::Append(std::string_view bytes) {
  if (bytes.size() >= capacity_) {
    // Only the last `capacity_` bytes survive.
    const uint64_t skipped = bytes.size() - capacity_;
    end_ += skipped;
    bytes.remove_prefix(skipped);
  }
  while (!bytes.empty()) {
    const size_t pos = static_cast<size_t>(end_ % capacity_);
    const size_t n = std::min(bytes.size(), capacity_ - pos);
    std::copy_n(bytes.data(), n, data_ + pos);
    bytes.remove_prefix(n);
    end_ += n;
    size_ = std::min(capacity_, size_ + n);
  }
}

OutputSlice PlanRead(uint64_t cursor, uint64_t begin, uint64_t end, size_t max_bytes) {
  OutputSlice out;
  if (cursor < begin) {
    out.gap = begin - cursor;
    cursor = begin;
  }
  cursor = std::min(cursor, end);
  out.start = cursor;
  out.next = cursor + std::min<uint64_t>(end - cursor, max_bytes);
  return out;
}

OutputSlice RingBuffer::Read(uint64_t cursor, size_t max_bytes) const {
  OutputSlice out = PlanRead(cursor, begin_offset(), end_, max_bytes);
  cursor = out.start;
  const size_t n = static_cast<size_t>(out.next - out.start);
  out.data.reserve(n);
  size_t left = n;
  while (left > 0) {
    const size_t pos = static_cast<size_t>(cursor % capacity_);
    const size_t chunk = std::min(left, capacity_ - pos);
    out.data.append(data_ + pos, chunk);
    left -= chunk;
    cursor += chunk;
  }
  return out;
}

size_t RingBuffer::resident() const {
  if (data_ == nullptr) return 0;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((capacity_ + page - 1) / page);
  if (mincore(data_, capacity_, pages.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char p : pages) n += p & 1;
  return n * page;
}

OutputSlice RingBuffer::Tail(size_t max_bytes) const {
  const uint64_t held = std::min<uint64_t>(size_, max_bytes);
  return Read(end_ - held, max_bytes);
}

}  // namespace termbridge::session
