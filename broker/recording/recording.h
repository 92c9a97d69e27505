// Recordings keep every terminal's output on disk, byte for byte, so a read
// from any offset the recording still holds gets the exact bytes after the
// ring has moved on, and a person can replay a terminal after it closed.
//
// On disk (docs/operating.md, "Recordings"): <dir>/<terminal_id>/ (0700)
// holds meta.json and the output in segments: out.<start> has the bytes from
// offset <start> on (20 digits), time.<start> their timing ("t <ms> <end>"
// lines: by <ms> after the terminal opened, the output reached <end>; "r <ms>
// <cols> <rows>" for a resize). Files are 0600. A write that fails (a full
// disk) ends its segment; the next write that works starts a new one, and
// the bytes between are a gap that reads and exports report.
//
// Retention: a recording past max_terminal_bytes drops its oldest segments;
// the store past max_total_bytes drops whole finished recordings, oldest
// first, then the oldest segments of live ones. Only pruned bytes are a gap.
#ifndef TERMBRIDGE_BROKER_RECORDING_RECORDING_H_
#define TERMBRIDGE_BROKER_RECORDING_RECORDING_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/session/output_archive.h"

namespace termbridge::recording {

struct RecordingLimits {
  uint64_t max_terminal_bytes = 512ull << 20;  // per recording
  uint64_t max_total_bytes = 4ull << 30;       // all recordings together
  uint64_t segment_bytes = 8 << 20;            // the unit retention drops
  // After a failed write, output is not written again for this long (a full
  // disk is not retried for every chunk).
  absl::Duration retry_after = absl::Seconds(1);
};

// What a recording says about its terminal (meta.json, plus what its files hold).
struct RecordingInfo {
  std::string terminal_id;
  std::string agent_id;
  std::string cwd;
  std::string shell;
  unsigned cols = 120;
  unsigned rows = 40;
  absl::Time opened_at = absl::InfinitePast();
  // Set once the terminal ended; a recording the broker stopped with open
  // (it was killed) has neither.
  bool finished = false;
  absl::Time finished_at = absl::InfinitePast();
  int exit_code = -1;
  int term_signal = 0;
  bool live = false;    // its terminal is open in this broker
  uint64_t begin = 0;   // first byte still held
  uint64_t end = 0;     // one past the last byte written
  uint64_t stored = 0;  // bytes held on disk (end - begin - gaps)
};

// Told when output could not be written (from, to: the bytes lost to the
// recording; the ring still has them) or when retention dropped bytes.
struct RecordingEvent {
  enum Kind { kWriteFailed, kPruned } kind;
  std::string terminal_id;
  uint64_t from = 0;
  uint64_t to = 0;
  std::string reason;
};

class RecordingStore;

// One terminal's recording. Live ones come from RecordingStore::Start and
// are appended by the terminal's reader thread; Read is safe from any thread.
class Recording : public session::OutputArchive {
 public:
  ~Recording() override;
  void Append(std::string_view bytes) override;
  void Resized(unsigned cols, unsigned rows) override;
  void Finish(int exit_code, int term_signal) override;
  session::OutputSlice Read(uint64_t cursor, size_t max_bytes) const override;

  RecordingInfo Info() const;

 private:
  // Deletes the recording's files (retention). Returns the bytes freed.
  uint64_t Remove() const;
  friend class RecordingStore;
  struct Segment {
    uint64_t start = 0;
    uint64_t end = 0;  // one past its last byte
  };
  Recording(RecordingStore* store, std::string dir, RecordingInfo info, absl::Time clock_zero);
  // Opens the segment files for new bytes at `offset`. False (and a
  // failure noted) when they cannot be created.
  bool StartSegmentLocked(uint64_t offset) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseSegmentLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WriteTimingLocked(std::string_view line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the oldest segment (not the one being written). Returns the bytes freed.
  uint64_t DropOldestLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t DropOldest();
  void WriteMetaLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t ElapsedMs() const;

  RecordingStore* const store_;  // null for one loaded from disk
  const std::string dir_;
  const absl::Time clock_zero_;
  mutable absl::Mutex mu_;
  mutable RecordingInfo info_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<Segment> segments_ ABSL_GUARDED_BY(mu_);
  int out_fd_ ABSL_GUARDED_BY(mu_) = -1;  // the last segment's, while writing
  int time_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;  // the last write failed: a gap runs
  absl::Time retry_at_ ABSL_GUARDED_BY(mu_);  // when to try writing again
  int64_t last_timing_ms_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t timed_end_ ABSL_GUARDED_BY(mu_) = 0;  // the end the last "t" line named
};

// The recordings directory: starts recordings for new terminals, lists and
// exports every recording on disk (also those of a previous broker run), and
// applies retention.
class RecordingStore {
 public:
  // Creates `dir` (0700) if missing; refuses a symlink or a directory others
  // can write. `on_event` (may be null) is told of write failures and pruning,
  // from the thread that noticed; it must not call back into the store.
  static absl::StatusOr<std::unique_ptr<RecordingStore>> Open(
      std::string dir, RecordingLimits limits,
      std::function<void(const RecordingEvent&)> on_event = nullptr);
  ~RecordingStore();

  // A live recording for a terminal that opens now. An error leaves the
  // terminal unrecorded (the caller logs it); no terminal waits on this.
  absl::StatusOr<std::shared_ptr<Recording>> Start(RecordingInfo info);

  // Every recording on disk, live ones included, oldest first.
  std::vector<RecordingInfo> List() const;
  // The recording of `terminal_id` (live, or loaded from disk): NotFound when
  // there is none or the id is not one the broker mints.
  absl::StatusOr<std::shared_ptr<const Recording>> Find(const std::string& terminal_id) const;
  // One line of an export (with its newline) and, for an "o" event, the
  // output stream offset of its first byte (nullopt for other lines). Each
  // byte that is not UTF-8 is one U+FFFD in an event's text, so counting a
  // U+FFFD as one byte goes on from that offset; a U+FFFD the output held
  // itself (three bytes) ends its event.
  using ExportSink =
      std::function<bool(std::string_view line, std::optional<uint64_t> output_offset)>;
  // Writes the recording as asciicast v2 (one JSON line at a time) to `sink`;
  // stops early when the sink returns false. With `from`, it begins at the
  // segment holding output byte `from` (whole segments before it are not
  // read; the last resize among them comes first, so the size is right).
  absl::Status Export(const std::string& terminal_id, const ExportSink& sink,
                      uint64_t from = 0) const;

  const std::string& dir() const { return dir_; }
  uint64_t total_bytes() const;

 private:
  friend class Recording;
  RecordingStore(std::string dir, RecordingLimits limits,
                 std::function<void(const RecordingEvent&)> on_event);
  // Called by a recording whose bytes grew past a segment: applies both limits.
  void Account(int64_t delta, bool rolled);
  void Enforce();
  void Emit(const RecordingEvent& event) const;
  absl::StatusOr<std::shared_ptr<Recording>> Load(const std::string& terminal_id) const;

  const std::string dir_;
  const RecordingLimits limits_;
  const std::function<void(const RecordingEvent&)> on_event_;
  mutable absl::Mutex mu_;
  // Live recordings (weak: the terminal owns them).
  std::map<std::string, std::weak_ptr<Recording>> live_ ABSL_GUARDED_BY(mu_);
  int64_t total_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex enforce_mu_;  // one pruning pass at a time
};

// Terminal ids the broker mints ("t_" and letters, digits, '_' or '-'): the
// only names a recording directory may have.
bool IsRecordingName(std::string_view terminal_id);

}  // namespace termbridge::recording

#endif  // TERMBRIDGE_BROKER_RECORDING_RECORDING_H_
