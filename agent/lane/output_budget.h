// Output sized for a model (docs/CONTRACT.md, 'Output budget'): a read returns
// at most a budget of output bytes. When more than the budget is there, it
// returns the head (from the cursor) and the tail (the last bytes there now)
// and says how many bytes lie between them; the next cursor is the end of the
// head, so reading on from it loses nothing. Both lanes shape their output
// here: the headless lane from the bytes it holds (ShapeBytes), the
// interactive lane from the broker's reads (CompleteToBudget).
#ifndef TERMBRIDGE_AGENT_LANE_OUTPUT_BUDGET_H_
#define TERMBRIDGE_AGENT_LANE_OUTPUT_BUDGET_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace termbridge::lane {

// The budget when the caller names none (or 0): about 4,000 tokens of text.
inline constexpr uint32_t kDefaultOutputBudget = 16 << 10;
// The largest budget when the reader knows no other bound (the broker's
// default max_read_bytes, and the headless lane's per-stream bound).
inline constexpr uint32_t kMaxOutputBudget = 1 << 20;

// The budget for a request's `max_bytes`: absent or 0 is the default, and
// anything above `max` is `max`. In bytes.
uint32_t OutputBudget(std::optional<int64_t> max_bytes, uint32_t max = kMaxOutputBudget);

// How many bytes of a budget go to the head and to the tail (head + tail ==
// budget; a budget under 2 bytes has no tail).
size_t HeadBytes(size_t budget);
size_t TailBytes(size_t budget);

// One stream's output from a cursor, shaped to a budget. Offsets are byte
// offsets of the stream (the cursors of docs/CONTRACT.md).
struct ShapedSlice {
  std::string text;        // the head: output from `start`
  uint64_t start = 0;      // offset of text's first byte
  uint64_t next = 0;       // end of the head: the cursor to read on from
  uint64_t gap_bytes = 0;  // lost between the requested cursor and `start`
  bool more = false;       // output past `next` is there now
  // Between the head and the tail: bytes not returned, read from `next`.
  uint64_t omitted_bytes = 0;
  std::string tail;         // the last output there now; empty unless omitted_bytes > 0
  uint64_t tail_start = 0;  // == next + omitted_bytes
  uint64_t tail_next = 0;   // offset after the tail's last byte
};

// Shapes the bytes a stream holds: `held` starts at offset `held_start`
// (older bytes are gone), read from `cursor` within `budget` bytes. The head
// ends and the tail starts on UTF-8 character boundaries. With `tail` false
// it is a page: up to `budget` bytes from the cursor, no tail.
ShapedSlice ShapeBytes(std::string_view held, uint64_t held_start, uint64_t cursor, size_t budget,
                       bool tail = true);

// How many bytes the first read of a shaped read asks for: the head's share,
// or the whole budget for a page (`tail` false).
size_t FirstReadBytes(size_t budget, bool tail);

// Splits one budget between two streams read together (stdout and stderr):
// a stream with less than half gets what it has, the other the rest. Returns
// {first's budget, second's budget}; their sum is at most `budget`.
std::pair<size_t, size_t> SplitBudget(size_t first_available, size_t second_available,
                                      size_t budget);

// A piece of output as a reader returns it (the broker's v1::Output).
struct OutputPiece {
  std::string text;
  uint64_t start = 0;
  uint64_t next = 0;
  uint64_t gap_bytes = 0;
  bool more = false;
};

// Reads up to `max_bytes` from `cursor`, or with no cursor the last
// `max_bytes` bytes there now, without waiting.
using PieceReader =
    std::function<absl::StatusOr<OutputPiece>(std::optional<uint64_t> cursor, size_t max_bytes)>;

// Completes a budget-shaped slice from `head`, a first read of at most
// HeadBytes(budget) from the cursor (which may have waited): when more is
// there it reads the tail; when the tail reaches back to the head the output
// fits and it reads on from the head instead. If a further read fails the
// head alone is returned (more: true), so nothing is skipped.
ShapedSlice CompleteToBudget(OutputPiece head, size_t budget, const PieceReader& read);

// Adds a shaped stream to a canonical result: `<name>` (the head), and when
// bytes were omitted `<omitted_key>` and `<tail_key>`: {<name>, start,
// cursor}. The stream's cursor fields are the caller's.
void AddShapedJson(const ShapedSlice& slice, const std::string& name,
                   const std::string& omitted_key, const std::string& tail_key,
                   nlohmann::json* result);

}  // namespace termbridge::lane

#endif  // TERMBRIDGE_AGENT_LANE_OUTPUT_BUDGET_H_
