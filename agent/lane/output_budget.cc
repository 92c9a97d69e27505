// Head and tail shaping of output within a budget (docs/CONTRACT.md, 'Output budget').
#include "agent/lane/output_budget.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace termbridge::lane {
namespace {

bool IsContinuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// A UTF-8 character is at most 4 bytes: a boundary is at most 3 bytes away.
constexpr int kMaxContinuation = 3;

ShapedSlice FromPiece(OutputPiece piece) {
  ShapedSlice slice;
  slice.text = std::move(piece.text);
  slice.start = piece.start;
  slice.next = piece.next;
  slice.gap_bytes = piece.gap_bytes;
  slice.more = piece.more;
  return slice;
}

}  // namespace

uint32_t OutputBudget(std::optional<int64_t> max_bytes, uint32_t max) {
  if (!max_bytes || *max_bytes <= 0) return std::min(kDefaultOutputBudget, max);
  return static_cast<uint32_t>(std::min<int64_t>(*max_bytes, max));
}

size_t HeadBytes(size_t budget) { return budget < 2 ? budget : budget / 2; }

size_t TailBytes(size_t budget) { return budget - HeadBytes(budget); }

size_t FirstReadBytes(size_t budget, bool tail) { return tail ? HeadBytes(budget) : budget; }

ShapedSlice ShapeBytes(std::string_view held, uint64_t held_start, uint64_t cursor, size_t budget,
                       bool tail) {
  ShapedSlice slice;
  const uint64_t end = held_start + held.size();
  const uint64_t from = std::clamp(cursor, held_start, end);
  auto byte_at = [&](uint64_t offset) { return held[offset - held_start]; };
  slice.gap_bytes = cursor < held_start ? held_start - cursor : 0;
  slice.start = from;
  const uint64_t available = end - from;
  if (available <= budget || TailBytes(budget) == 0 || !tail) {
    uint64_t next = from + std::min<uint64_t>(available, budget);
    // A page cut inside a character gives it back to the next page (unless
    // that would leave nothing: then the reader still moves on).
    uint64_t whole = next;
    for (int i = 0;
         i < kMaxContinuation && whole > from && whole < end && IsContinuation(byte_at(whole));
         ++i) {
      --whole;
    }
    if (whole > from) next = whole;
    slice.text = std::string(held.substr(from - held_start, next - from));
    slice.next = next;
    slice.more = slice.next < end;
    return slice;
  }
  // Cut on character boundaries: the head gives back a split character, the
  // tail skips one; both only make the omitted part longer.
  uint64_t head_end = from + HeadBytes(budget);
  for (int i = 0; i < kMaxContinuation && head_end > from && IsContinuation(byte_at(head_end));
       ++i) {
    --head_end;
  }
  uint64_t tail_start = end - TailBytes(budget);
  for (int i = 0; i < kMaxContinuation && tail_start < end && IsContinuation(byte_at(tail_start));
       ++i) {
    ++tail_start;
  }
  slice.text = std::string(held.substr(from - held_start, head_end - from));
  slice.next = head_end;
  slice.more = true;
  slice.omitted_bytes = tail_start - head_end;
  slice.tail = std::string(held.substr(tail_start - held_start));
  slice.tail_start = tail_start;
  slice.tail_next = end;
  return slice;
}

std::pair<size_t, size_t> SplitBudget(size_t first_available, size_t second_available,
                                      size_t budget) {
  if (first_available + second_available <= budget) return {first_available, second_available};
  const size_t half = budget / 2;
  if (second_available <= half) return {budget - second_available, second_available};
  if (first_available <= half) return {first_available, budget - first_available};
  return {budget - half, half};
}

ShapedSlice CompleteToBudget(OutputPiece head, size_t budget, const PieceReader& read) {
  const uint64_t head_next = head.next;
  ShapedSlice slice = FromPiece(std::move(head));
  const size_t tail_bytes = TailBytes(budget);
  if (!slice.more || tail_bytes == 0) return slice;
  absl::StatusOr<OutputPiece> tail = read(std::nullopt, tail_bytes);
  if (!tail.ok()) {
    spdlog::warn("event=tail_read_failed cursor={} status=\"{}\"", head_next,
                 tail.status().ToString());
    return slice;
  }
  if (tail->start <= head_next) {
    // All of it fits the budget: read on from the head instead.
    absl::StatusOr<OutputPiece> rest = read(head_next, tail_bytes);
    if (!rest.ok() || rest->start != head_next) return slice;
    slice.text += rest->text;
    slice.next = rest->next;
    slice.more = rest->more;
    return slice;
  }
  slice.more = true;
  slice.omitted_bytes = tail->start - head_next;
  slice.tail = std::move(tail->text);
  slice.tail_start = tail->start;
  slice.tail_next = tail->next;
  return slice;
}

void AddShapedJson(const ShapedSlice& slice, const std::string& name,
                   const std::string& omitted_key, const std::string& tail_key,
                   nlohmann::json* result) {
  (*result)[name] = slice.text;
  (*result)[omitted_key] = slice.omitted_bytes;
  if (slice.omitted_bytes > 0) {
    (*result)[tail_key] = {
        {name, slice.tail}, {"start", slice.tail_start}, {"cursor", slice.tail_next}};
  }
}

}  // namespace termbridge::lane
