// Recording and RecordingStore: segment files written with plain write(2)
// on the terminal's reader thread (the page cache takes them; no fsync, a
// recording is not the audit), read back with pread from any thread.
#include "broker/recording/recording.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/text/utf8.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::recording {
namespace {

using nlohmann::json;

// Timing lines are written at most this often while output streams.
constexpr int64_t kTimingStepMs = 20;

std::string SegmentName(std::string_view kind, uint64_t start) {
  return absl::StrFormat("%s.%020u", kind, start);
}

// Writes all of `data`; returns the bytes written (short on an error, errno set).
size_t WriteAll(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  return done;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (64u << 20)) break;
  }
  close(fd);
  return text;
}

// The segments in a recording directory, by start offset, with their sizes.
std::map<uint64_t, uint64_t> ScanSegments(const std::string& dir) {
  std::map<uint64_t, uint64_t> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    absl::string_view name = e->d_name;
    if (name.size() != 24 || name.substr(0, 4) != "out.") continue;
    uint64_t start;
    if (!absl::SimpleAtoi(name.substr(4), &start)) continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    out[start] = static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  return out;
}

json InfoJson(const RecordingInfo& info) {
  json j = {{"terminal_id", info.terminal_id},
            {"agent_id", info.agent_id},
            {"cwd", info.cwd},
            {"shell", info.shell},
            {"cols", info.cols},
            {"rows", info.rows},
            {"opened_at_ms", absl::ToUnixMillis(info.opened_at)},
            {"finished", info.finished},
            {"end", info.end}};
  if (info.finished) {
    j["finished_at_ms"] = absl::ToUnixMillis(info.finished_at);
    j["exit_code"] = info.exit_code;
    j["term_signal"] = info.term_signal;
  }
  return j;
}

void ParseInfo(const json& j, RecordingInfo* info) {
  auto str = [&](const char* key, std::string* out) {
    if (j.contains(key) && j[key].is_string()) *out = j[key].get<std::string>();
  };
  str("agent_id", &info->agent_id);
  str("cwd", &info->cwd);
  str("shell", &info->shell);
  if (j.contains("cols") && j["cols"].is_number_unsigned()) info->cols = j["cols"].get<unsigned>();
  if (j.contains("rows") && j["rows"].is_number_unsigned()) info->rows = j["rows"].get<unsigned>();
  if (j.contains("opened_at_ms") && j["opened_at_ms"].is_number_integer()) {
    info->opened_at = absl::FromUnixMillis(j["opened_at_ms"].get<int64_t>());
  }
  if (j.contains("finished") && j["finished"].is_boolean()) {
    info->finished = j["finished"].get<bool>();
  }
  if (info->finished) {
    if (j.contains("finished_at_ms") && j["finished_at_ms"].is_number_integer()) {
      info->finished_at = absl::FromUnixMillis(j["finished_at_ms"].get<int64_t>());
    }
    if (j.contains("exit_code") && j["exit_code"].is_number_integer()) {
      info->exit_code = j["exit_code"].get<int>();
    }
    if (j.contains("term_signal") && j["term_signal"].is_number_integer()) {
      info->term_signal = j["term_signal"].get<int>();
    }
  }
}

// The text of "o" events for output bytes that begin at stream offset
// `offset`, passed to `emit(offset, text)` piece by piece: each byte that is
// not part of well-formed UTF-8 becomes one U+FFFD, so a reader that counts
// a U+FFFD as one byte counts the stream's bytes; a piece ends after a
// U+FFFD the output held itself (three bytes), where the next piece's
// offset puts such a reader right again. False once `emit` says stop.
bool OutputPieces(uint64_t offset, std::string_view bytes,
                  const std::function<bool(uint64_t, std::string_view)>& emit) {
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  std::string text;
  uint64_t begin = offset;  // of the piece in `text`
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = text::Utf8SequenceLength(bytes, i);
    if (length == 0) {
      text.append(kReplacement);
      ++i;
      ++offset;
      continue;
    }
    text.append(bytes.data() + i, length);
    i += length;
    offset += length;
    if (bytes.substr(i - length, length) == kReplacement && i < bytes.size()) {
      if (!emit(begin, text)) return false;
      text.clear();
      begin = offset;
    }
  }
  return text.empty() || emit(begin, text);
}

// One line of a segment's timing file: "t <ms> <end>" (the output up to
// stream offset end was there by then; end is empty when unreadable) or
// "r <ms> <cols> <rows>" (a resize, as "<cols>x<rows>").
struct TimingLine {
  char kind = 't';
  double seconds = 0;
  std::optional<uint64_t> end;
  std::string size;
};

// The lines of a timing file with a time (nullopt when it cannot be read).
std::optional<std::vector<TimingLine>> ReadTiming(const std::string& path) {
  absl::StatusOr<std::string> timing = ReadSmallFile(path);
  if (!timing.ok()) return std::nullopt;
  std::vector<TimingLine> lines;
  for (absl::string_view line : absl::StrSplit(*timing, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ');
    int64_t ms;
    if (f.size() < 3 || !absl::SimpleAtoi(f[1], &ms)) continue;
    TimingLine parsed;
    parsed.seconds = static_cast<double>(ms) / 1000.0;
    if (f[0] == "t") {
      if (uint64_t end; absl::SimpleAtoi(f[2], &end)) parsed.end = end;
    } else if (f[0] == "r" && f.size() == 4) {
      parsed.kind = 'r';
      parsed.size = absl::StrCat(f[2], "x", f[3]);
    } else {
      parsed.kind = '?';  // a time, nothing else known
    }
    lines.push_back(std::move(parsed));
  }
  return lines;
}

std::string EventLine(double seconds, std::string_view code, std::string_view data) {
  json event = json::array({seconds, code, data});
  return event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

bool IsRecordingName(std::string_view id) {
  if (id.size() < 3 || id.size() > 64 || id.substr(0, 2) != "t_") return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// ---- Recording ----

Recording::Recording(RecordingStore* store, std::string dir, RecordingInfo info,
                     absl::Time clock_zero)
    : store_(store), dir_(std::move(dir)), clock_zero_(clock_zero), info_(std::move(info)) {}

Recording::~Recording() {
  absl::MutexLock lock(&mu_);
  CloseSegmentLocked();
}

int64_t Recording::ElapsedMs() const {
  return absl::ToInt64Milliseconds(absl::Now() - clock_zero_);
}

bool Recording::StartSegmentLocked(uint64_t offset) {
  const int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
  out_fd_ = open(absl::StrCat(dir_, "/", SegmentName("out", offset)).c_str(), flags, 0600);
  if (out_fd_ < 0) return false;
  time_fd_ = open(absl::StrCat(dir_, "/", SegmentName("time", offset)).c_str(), flags, 0600);
  segments_.push_back({offset, offset});
  last_timing_ms_ = -1;
  return true;
}

void Recording::CloseSegmentLocked() {
  if (out_fd_ >= 0) close(out_fd_);
  if (time_fd_ >= 0) close(time_fd_);
  out_fd_ = time_fd_ = -1;
}

void Recording::WriteTimingLocked(std::string_view line) {
  if (time_fd_ < 0) return;
  // Timing is best effort: a lost line only merges two output events.
  (void)WriteAll(time_fd_, line);
}

void Recording::Append(std::string_view bytes) {
  if (bytes.empty()) return;
  int64_t grown = 0;
  bool rolled = false;
  std::optional<RecordingEvent> event;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t at = info_.end;
    info_.end += bytes.size();
    if (failed_) {
      if (absl::Now() < retry_at_) return;  // still in the gap
      failed_ = false;
    }
    if (out_fd_ >= 0 &&
        segments_.back().end - segments_.back().start >= store_->limits_.segment_bytes) {
      CloseSegmentLocked();
      rolled = true;
    }
    bool ok = out_fd_ >= 0 || StartSegmentLocked(at);
    size_t written = 0;
    if (ok) {
      written = WriteAll(out_fd_, bytes);
      segments_.back().end += written;
      info_.stored += written;
      grown = static_cast<int64_t>(written);
      ok = written == bytes.size();
    }
    if (!ok) {
      const int err = errno;
      CloseSegmentLocked();
      failed_ = true;
      retry_at_ = absl::Now() + store_->limits_.retry_after;
      event = RecordingEvent{RecordingEvent::kWriteFailed, info_.terminal_id, at + written,
                             info_.end, std::strerror(err)};
    }
    const int64_t ms = ElapsedMs();
    if (ms - last_timing_ms_ >= kTimingStepMs || !ok) {
      const uint64_t timed = segments_.empty() ? at : segments_.back().end;
      if (timed > timed_end_ || !ok) {
        WriteTimingLocked(absl::StrCat("t ", ms, " ", timed, "\n"));
        timed_end_ = timed;
        last_timing_ms_ = ms;
      }
    }
  }
  if (event) store_->Emit(*event);
  if (grown != 0 || rolled) store_->Account(grown, rolled);
}

void Recording::Resized(unsigned cols, unsigned rows) {
  absl::MutexLock lock(&mu_);
  if (cols == info_.cols && rows == info_.rows) return;
  info_.cols = cols;
  info_.rows = rows;
  // The output so far is timed first, so the resize lands between the right bytes.
  const int64_t ms = ElapsedMs();
  if (!segments_.empty() && segments_.back().end > timed_end_) {
    WriteTimingLocked(absl::StrCat("t ", ms, " ", segments_.back().end, "\n"));
    timed_end_ = segments_.back().end;
  }
  WriteTimingLocked(absl::StrCat("r ", ms, " ", cols, " ", rows, "\n"));
}

void Recording::Finish(int exit_code, int term_signal) {
  absl::MutexLock lock(&mu_);
  if (!segments_.empty() && segments_.back().end > timed_end_) {
    WriteTimingLocked(absl::StrCat("t ", ElapsedMs(), " ", segments_.back().end, "\n"));
    timed_end_ = segments_.back().end;
  }
  CloseSegmentLocked();
  info_.finished = true;
  info_.finished_at = absl::Now();
  info_.exit_code = exit_code;
  info_.term_signal = term_signal;
  info_.live = false;
  WriteMetaLocked();
}

void Recording::WriteMetaLocked() {
  const std::string path = absl::StrCat(dir_, "/meta.json");
  const std::string tmp = absl::StrCat(path, ".tmp");
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  const std::string text = InfoJson(info_).dump(-1, ' ', false, json::error_handler_t::replace);
  const bool ok = WriteAll(fd, text) == text.size();
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) unlink(tmp.c_str());
}

uint64_t Recording::DropOldestLocked() {
  // The segment being written stays.
  const size_t keep = out_fd_ >= 0 ? 1 : 0;
  if (segments_.size() <= keep) return 0;
  const Segment dropped = segments_.front();
  segments_.erase(segments_.begin());
  unlink(absl::StrCat(dir_, "/", SegmentName("out", dropped.start)).c_str());
  unlink(absl::StrCat(dir_, "/", SegmentName("time", dropped.start)).c_str());
  const uint64_t bytes = dropped.end - dropped.start;
  info_.stored -= std::min(info_.stored, bytes);
  return bytes;
}

uint64_t Recording::DropOldest() {
  uint64_t bytes;
  RecordingEvent event{RecordingEvent::kPruned, "", 0, 0, "retention"};
  {
    absl::MutexLock lock(&mu_);
    if (!segments_.empty()) event.from = segments_.front().start;
    bytes = DropOldestLocked();
    event.terminal_id = info_.terminal_id;
    event.to = segments_.empty() ? info_.end : segments_.front().start;
  }
  if (bytes > 0 && store_ != nullptr) store_->Emit(event);
  return bytes;
}

session::OutputSlice Recording::Read(uint64_t cursor, size_t max_bytes) const {
  std::vector<Segment> segments;
  uint64_t written_end;  // what was appended, whether or not it reached a file
  {
    absl::MutexLock lock(&mu_);
    segments = segments_;
    written_end = info_.end;
  }
  session::OutputSlice out;
  // The first segment that still has bytes at or after the cursor.
  auto it = std::find_if(segments.begin(), segments.end(),
                         [&](const Segment& s) { return s.end > cursor && s.end > s.start; });
  if (it == segments.end()) {
    // Past every segment: a cursor before the end is in a hole (a failed
    // write not retried yet, or everything pruned) that runs to the end.
    const uint64_t end = std::max(cursor, written_end);
    out = session::PlanRead(cursor, end, end, 0);
    return out;
  }
  out = session::PlanRead(cursor, it->start, it->end, max_bytes);
  const size_t n = static_cast<size_t>(out.next - out.start);
  if (n == 0) return out;
  int fd = open(absl::StrCat(dir_, "/", SegmentName("out", it->start)).c_str(),
                O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    // Pruned meanwhile: what it held is a gap.
    out.gap += out.next - out.start;
    out.start = out.next;
    return out;
  }
  out.data.resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r =
        pread(fd, out.data.data() + got, n - got, static_cast<off_t>(out.start - it->start + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  out.data.resize(got);
  out.next = out.start + got;
  return out;
}

uint64_t Recording::Remove() const {
  absl::MutexLock lock(&mu_);
  uint64_t freed = 0;
  for (const Segment& segment : segments_) {
    unlink(absl::StrCat(dir_, "/", SegmentName("out", segment.start)).c_str());
    unlink(absl::StrCat(dir_, "/", SegmentName("time", segment.start)).c_str());
    freed += segment.end - segment.start;
  }
  segments_.clear();
  info_.stored = 0;
  unlink(absl::StrCat(dir_, "/meta.json").c_str());
  if (rmdir(dir_.c_str()) != 0) {
    spdlog::warn("event=recording_prune_failed dir={} error=\"{}\"", dir_, std::strerror(errno));
  }
  return freed;
}

RecordingInfo Recording::Info() const {
  absl::MutexLock lock(&mu_);
  RecordingInfo info = info_;
  info.begin = segments_.empty() ? info_.end : segments_.front().start;
  return info;
}

// ---- RecordingStore ----

RecordingStore::RecordingStore(std::string dir, RecordingLimits limits,
                               std::function<void(const RecordingEvent&)> on_event)
    : dir_(std::move(dir)), limits_(limits), on_event_(std::move(on_event)) {}

RecordingStore::~RecordingStore() = default;

absl::StatusOr<std::unique_ptr<RecordingStore>> RecordingStore::Open(
    std::string dir, RecordingLimits limits, std::function<void(const RecordingEvent&)> on_event) {
  if (limits.segment_bytes == 0) limits.segment_bytes = 8 << 20;
  limits.max_terminal_bytes = std::max(limits.max_terminal_bytes, 2 * limits.segment_bytes);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir));
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("stat ", dir));
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  if (st.st_uid != geteuid() || (st.st_mode & 0077) != 0) {
    if (st.st_uid != geteuid() || chmod(dir.c_str(), 0700) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, " must be a directory of this user with mode 0700"));
    }
  }
  auto store = std::unique_ptr<RecordingStore>(
      new RecordingStore(std::move(dir), limits, std::move(on_event)));
  // What earlier runs left counts against the total from the start.
  int64_t total = 0;
  for (const RecordingInfo& info : store->List()) total += static_cast<int64_t>(info.stored);
  {
    absl::MutexLock lock(&store->mu_);
    store->total_ = total;
  }
  store->Enforce();
  return store;
}

absl::StatusOr<std::shared_ptr<Recording>> RecordingStore::Start(RecordingInfo info) {
  if (!IsRecordingName(info.terminal_id)) {
    return absl::InvalidArgumentError(absl::StrCat("not a terminal id: ", info.terminal_id));
  }
  const std::string dir = absl::StrCat(dir_, "/", info.terminal_id);
  if (mkdir(dir.c_str(), 0700) != 0) return absl::ErrnoToStatus(errno, absl::StrCat("mkdir ", dir));
  info.live = true;
  info.finished = false;
  info.end = info.begin = info.stored = 0;
  if (info.opened_at == absl::InfinitePast()) info.opened_at = absl::Now();
  auto recording =
      std::shared_ptr<Recording>(new Recording(this, dir, std::move(info), absl::Now()));
  {
    absl::MutexLock lock(&recording->mu_);
    recording->WriteMetaLocked();
  }
  const std::string id = recording->Info().terminal_id;
  absl::MutexLock lock(&mu_);
  live_[id] = recording;
  return recording;
}

absl::StatusOr<std::shared_ptr<Recording>> RecordingStore::Load(const std::string& id) const {
  const std::string dir = absl::StrCat(dir_, "/", id);
  absl::StatusOr<std::string> meta = ReadSmallFile(absl::StrCat(dir, "/meta.json"));
  if (!meta.ok()) return absl::NotFoundError(absl::StrCat("no recording of ", id));
  RecordingInfo info;
  info.terminal_id = id;
  json j = json::parse(*meta, nullptr, false);
  if (j.is_object()) ParseInfo(j, &info);
  auto recording = std::shared_ptr<Recording>(
      new Recording(nullptr, dir, std::move(info), absl::InfinitePast()));
  absl::MutexLock lock(&recording->mu_);
  uint64_t end = 0;
  for (const auto& [start, size] : ScanSegments(dir)) {
    recording->segments_.push_back({start, start + size});
    recording->info_.stored += size;
    end = std::max(end, start + size);
  }
  // A broker that was killed never wrote the final end: the files say it.
  recording->info_.end = std::max(recording->info_.end, end);
  return recording;
}

absl::StatusOr<std::shared_ptr<const Recording>> RecordingStore::Find(const std::string& id) const {
  if (!IsRecordingName(id)) return absl::NotFoundError(absl::StrCat("no recording of ", id));
  {
    absl::MutexLock lock(&mu_);
    auto it = live_.find(id);
    if (it != live_.end()) {
      if (std::shared_ptr<Recording> live = it->second.lock()) return live;
    }
  }
  absl::StatusOr<std::shared_ptr<Recording>> loaded = Load(id);
  if (!loaded.ok()) return loaded.status();
  return std::shared_ptr<const Recording>(*std::move(loaded));
}

std::vector<RecordingInfo> RecordingStore::List() const {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir_.c_str())) {
    while (dirent* e = readdir(d)) {
      if (IsRecordingName(e->d_name)) names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());  // ids are ULIDs: by time opened
  std::vector<RecordingInfo> out;
  for (const std::string& name : names) {
    absl::StatusOr<std::shared_ptr<const Recording>> found = Find(name);
    if (found.ok()) out.push_back((*found)->Info());
  }
  return out;
}

uint64_t RecordingStore::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return static_cast<uint64_t>(std::max<int64_t>(total_, 0));
}

void RecordingStore::Emit(const RecordingEvent& event) const {
  if (event.kind == RecordingEvent::kWriteFailed) {
    spdlog::warn("event=recording_gap terminal_id={} from={} reason=\"{}\"", event.terminal_id,
                 event.from, event.reason);
  }
  if (on_event_) on_event_(event);
}

void RecordingStore::Account(int64_t delta, bool rolled) {
  {
    absl::MutexLock lock(&mu_);
    total_ += delta;
  }
  // Both limits are checked when a segment fills, i.e. once per segment_bytes.
  if (rolled) Enforce();
}

void RecordingStore::Enforce() {
  absl::MutexLock enforce(&enforce_mu_);
  // Each live recording within its own cap.
  std::vector<std::shared_ptr<Recording>> live;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = live_.begin(); it != live_.end();) {
      if (std::shared_ptr<Recording> r = it->second.lock()) {
        live.push_back(std::move(r));
        ++it;
      } else {
        it = live_.erase(it);
      }
    }
  }
  for (const std::shared_ptr<Recording>& r : live) {
    for (;;) {
      uint64_t stored;
      {
        absl::MutexLock lock(&r->mu_);
        stored = r->info_.stored;
      }
      if (stored <= limits_.max_terminal_bytes) break;
      const uint64_t freed = r->DropOldest();
      if (freed == 0) break;
      absl::MutexLock lock(&mu_);
      total_ -= static_cast<int64_t>(freed);
    }
  }
  auto over = [&] {
    absl::MutexLock lock(&mu_);
    return total_ > static_cast<int64_t>(limits_.max_total_bytes);
  };
  if (!over()) return;
  // Whole finished recordings, oldest first.
  for (const RecordingInfo& info : List()) {
    if (!over()) return;
    if (info.live) continue;
    absl::StatusOr<std::shared_ptr<const Recording>> found = Find(info.terminal_id);
    if (!found.ok()) continue;
    const uint64_t freed = (*found)->Remove();
    Emit({RecordingEvent::kPruned, info.terminal_id, info.begin, info.end, "retention"});
    absl::MutexLock lock(&mu_);
    total_ -= static_cast<int64_t>(freed);
  }
  // Then the oldest segments of live ones, oldest recording first.
  for (const std::shared_ptr<Recording>& r : live) {
    while (over()) {
      const uint64_t freed = r->DropOldest();
      if (freed == 0) break;
      absl::MutexLock lock(&mu_);
      total_ -= static_cast<int64_t>(freed);
    }
  }
}

absl::Status RecordingStore::Export(const std::string& terminal_id, const ExportSink& sink,
                                    uint64_t from) const {
  absl::StatusOr<std::shared_ptr<const Recording>> found = Find(terminal_id);
  if (!found.ok()) return found.status();
  const Recording& recording = **found;
  const RecordingInfo info = recording.Info();
  std::vector<Recording::Segment> segments;
  {
    absl::MutexLock lock(&recording.mu_);
    segments = recording.segments_;
  }
  // The first size the terminal had: a resize line before any output says it.
  json header = {{"version", 2},
                 {"width", info.cols},
                 {"height", info.rows},
                 {"timestamp", absl::ToUnixSeconds(info.opened_at)},
                 {"title", info.terminal_id},
                 {"env", {{"SHELL", info.shell}, {"TERM", "xterm-256color"}}}};
  if (!sink(header.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", std::nullopt)) {
    return absl::OkStatus();
  }
  // Segments wholly before `from` are skipped; of their timing only the
  // last resize (and the time) is kept.
  double last_t = 0;
  std::optional<std::string> skipped_resize;
  size_t first = 0;
  auto timing_of = [&](const Recording::Segment& segment) {
    return ReadTiming(
        absl::StrCat(dir_, "/", terminal_id, "/", SegmentName("time", segment.start)));
  };
  while (first + 1 < segments.size() && segments[first].end <= from) {
    for (const TimingLine& line : timing_of(segments[first]).value_or(std::vector<TimingLine>())) {
      last_t = std::max(last_t, line.seconds);
      if (line.kind == 'r') skipped_resize = line.size;
    }
    ++first;
  }
  segments.erase(segments.begin(), segments.begin() + static_cast<ptrdiff_t>(first));
  // Bytes [at - carry.size(), at) are the start of a character a read cut.
  std::string carry;
  uint64_t at = segments.empty() ? info.end : segments.front().start;
  auto mark = [&](double t, const std::string& text) {
    return sink(EventLine(t, "m", text), std::nullopt);
  };
  // Output bytes from stream offset `offset` as "o" events at time t.
  auto output = [&](double t, uint64_t offset, std::string_view bytes) {
    return OutputPieces(offset, bytes, [&](uint64_t piece_offset, std::string_view text) {
      return sink(EventLine(t, "o", text), piece_offset);
    });
  };
  // The cut character's bytes, when no more of it comes (a hole, the end).
  auto flush_carry = [&](double t) {
    std::string bytes = std::move(carry);
    carry.clear();
    return bytes.empty() || output(t, at - bytes.size(), bytes);
  };
  // Bytes from `from` on that retention dropped (all of them before the
  // first segment, without `from`).
  if (at > from && !mark(last_t, absl::StrCat("[", at - from, " earlier bytes not kept]"))) {
    return absl::OkStatus();
  }
  if (skipped_resize && !sink(EventLine(last_t, "r", *skipped_resize), std::nullopt)) {
    return absl::OkStatus();
  }
  // Emits the bytes from `at` up to `end` at time t, marking holes.
  auto emit_to = [&](uint64_t end, double t) -> bool {
    while (at < end) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(end - at, 1 << 20));
      session::OutputSlice slice = recording.Read(at, want);
      if (slice.start > at) {  // a hole: bytes lost to a failed write or pruned meanwhile
        const uint64_t hole_end = std::min(slice.start, end);
        if (!flush_carry(t) || !mark(t, absl::StrCat("[", hole_end - at, " bytes not recorded]"))) {
          return false;
        }
        at = hole_end;
        continue;
      }
      if (slice.data.empty()) break;
      const uint64_t from = at - carry.size();
      std::string bytes = std::move(carry);
      bytes.append(slice.data.data(), slice.data.size());
      const size_t whole = text::CompleteUtf8Length(bytes);
      carry = bytes.substr(whole);
      bytes.resize(whole);
      if (!bytes.empty() && !output(t, from, bytes)) return false;
      at = slice.next;
    }
    return true;
  };
  for (const Recording::Segment& segment : segments) {
    std::optional<std::vector<TimingLine>> timing = timing_of(segment);
    if (!timing) continue;
    for (const TimingLine& line : *timing) {
      const double t = std::max(last_t, line.seconds);
      if (line.kind == 't') {
        if (!line.end) continue;
        if (!emit_to(std::min(*line.end, segment.end), t)) return absl::OkStatus();
      } else if (line.kind == 'r') {
        if (!emit_to(std::min(at, segment.end), t)) return absl::OkStatus();
        if (!sink(EventLine(t, "r", line.size), std::nullopt)) return absl::OkStatus();
      }
      last_t = t;
    }
    // Bytes past the last timing line (a broker killed mid-stream).
    if (!emit_to(segment.end, last_t)) return absl::OkStatus();
  }
  if (!flush_carry(last_t)) return absl::OkStatus();
  if (at < info.end) mark(last_t, absl::StrCat("[", info.end - at, " bytes not recorded]"));
  return absl::OkStatus();
}

}  // namespace termbridge::recording
