// AuditLog: the durable JSONL audit file. Open takes an exclusive flock so two
// brokers cannot interleave indexes, then finds the last complete, valid
// record by reading the file backwards from its end (start-up cost does not
// grow with the log); its hash is where the chain continues. Append builds the
// whole line, writes it with one write(2) on an O_APPEND descriptor and
// fdatasyncs it under one mutex, so index order is file order, each "prev" is
// the hash of the line before it, and an index is handed out only once its
// record is on disk. Records written after the fact wait in pending_ (bounded)
// while writing fails and go first once it works.
#include "broker/audit/audit_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "openssl/evp.h"

namespace termbridge::audit {
namespace {

constexpr size_t kMaxEventNameBytes = 64;
constexpr off_t kScanChunkBytes = 64 * 1024;
constexpr std::string_view kReservedKeys[] = {"index", "time", "event", "prev", "written"};

absl::Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = absl::StrCat(what, ": ", strerror(err));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) return absl::ResourceExhaustedError(msg);
  return absl::ErrnoToStatus(err, msg);
}

// Closes an fd on every early return of Open.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Reads exactly `len` bytes at `offset` into `out`.
absl::Status PreadFull(int fd, off_t offset, size_t len, std::string* out) {
  out->resize(len);
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, out->data() + done, len - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("audit log: read", errno);
    if (n == 0) return absl::DataLossError("audit log: shrank while being read");
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Finds newlines walking backwards through a file, one cached chunk at a
// time, so that walking every line of the file reads each byte once.
class BackwardNewlineFinder {
 public:
  explicit BackwardNewlineFinder(int fd) : fd_(fd) {}

  // Returns the offset of the last '\n' in bytes [0, end) of the file, or -1.
  absl::StatusOr<off_t> Before(off_t end) {
    while (end > 0) {
      if (end <= chunk_start_ || end > chunk_start_ + static_cast<off_t>(chunk_.size())) {
        chunk_start_ = end - std::min(end, kScanChunkBytes);
        absl::Status read =
            PreadFull(fd_, chunk_start_, static_cast<size_t>(end - chunk_start_), &chunk_);
        if (!read.ok()) return read;
      }
      size_t at = std::string_view(chunk_).substr(0, end - chunk_start_).rfind('\n');
      if (at != std::string_view::npos) return chunk_start_ + static_cast<off_t>(at);
      end = chunk_start_;
    }
    return -1;
  }

 private:
  const int fd_;
  std::string chunk_;  // bytes [chunk_start_, chunk_start_ + chunk_.size())
  off_t chunk_start_ = 0;
};

std::string FormatRecordTime(absl::Time time) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", time, absl::UTCTimeZone());
}

struct ScanResult {
  uint64_t last_index = 0;     // 0 when the file holds no valid record
  std::string last_hash;       // RecordHash of that record (kGenesisHash if none)
  bool needs_newline = false;  // the file ends with a torn line
};

// Walks the file's complete lines from the last one back until one is a
// valid record. Lines longer than a record can be are skipped unread.
absl::StatusOr<ScanResult> ScanTail(int fd, off_t size) {
  ScanResult result;
  result.last_hash = std::string(kGenesisHash);
  BackwardNewlineFinder newlines(fd);
  absl::StatusOr<off_t> newline = newlines.Before(size);
  if (!newline.ok()) return newline.status();
  off_t end = *newline + 1;  // one past the '\n' ending the last complete line
  result.needs_newline = end != size;
  std::string line;
  while (end > 0) {
    newline = newlines.Before(end - 1);
    if (!newline.ok()) return newline.status();
    off_t start = *newline + 1;
    size_t len = static_cast<size_t>(end - 1 - start);
    if (len < AuditLog::kMaxRecordBytes) {
      absl::Status read = PreadFull(fd, start, len, &line);
      if (!read.ok()) return read;
      nlohmann::json record;
      if (ParseRecord(line, &record)) {
        result.last_index = record["index"].get<uint64_t>();
        result.last_hash = RecordHash(line);
        return result;
      }
    }
    end = start;
  }
  return result;
}

std::string ParentDir(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Makes a newly created file's directory entry durable.
absl::Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("audit log: open dir ", dir), errno);
  FdCloser closer(fd);
  if (fsync(fd) != 0) return ErrnoStatus(absl::StrCat("audit log: fsync dir ", dir), errno);
  return absl::OkStatus();
}

bool IsValidEventName(std::string_view event) {
  if (event.empty() || event.size() > kMaxEventNameBytes) return false;
  return std::all_of(event.begin(), event.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

// Returns `fields` as the text to splice after "event" ("" or ",\"k\":v...").
absl::StatusOr<std::string> FieldsText(const nlohmann::json& fields) {
  if (fields.is_null()) return std::string();
  if (!fields.is_object()) return absl::InvalidArgumentError("audit fields must be a JSON object");
  for (std::string_view key : kReservedKeys) {
    if (fields.contains(std::string(key))) {
      return absl::InvalidArgumentError(
          absl::StrCat("audit field \"", std::string(key), "\" is reserved"));
    }
  }
  if (fields.empty()) return std::string();
  std::string text = fields.dump(/*indent=*/-1, ' ', /*ensure_ascii=*/false,
                                 nlohmann::json::error_handler_t::replace);
  // text is "{...}": keep what is between the braces.
  return absl::StrCat(",", text.substr(1, text.size() - 2));
}

struct OpenedFile {
  int fd;
  ScanResult scan;
};

// Opens (creating 0600) and locks the log file at `path`, and scans its tail.
absl::StatusOr<OpenedFile> OpenLogFile(const std::string& path) {
  // O_NOFOLLOW: a symlink planted in the state dir cannot redirect the log.
  // O_NONBLOCK: a FIFO at `path` fails the regular-file check instead of hanging.
  constexpr int kFlags = O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  bool created = true;
  int fd = open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0600);
  if (fd < 0 && errno == EEXIST) {
    created = false;
    fd = open(path.c_str(), kFlags);
  }
  if (fd < 0) {
    if (errno == ELOOP) {
      return absl::FailedPreconditionError(
          absl::StrCat("audit log ", path, " is a symlink; it must be a regular file"));
    }
    return ErrnoStatus(absl::StrCat("audit log: open ", path), errno);
  }
  FdCloser closer(fd);
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoStatus(absl::StrCat("audit log: stat ", path), errno);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("audit log ", path, " is not a regular file"));
  }
  if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) {
    return ErrnoStatus(absl::StrCat("audit log: chmod 0600 ", path), errno);
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("audit log ", path, " is already open (another broker?)"));
    }
    return ErrnoStatus(absl::StrCat("audit log: lock ", path), errno);
  }
  if (created) {
    absl::Status synced = SyncDir(ParentDir(path));
    if (!synced.ok()) return synced;
  }
  absl::StatusOr<ScanResult> scan = ScanTail(fd, st.st_size);
  if (!scan.ok()) return scan.status();
  return OpenedFile{closer.Release(), *scan};
}

}  // namespace

std::string RecordHash(std::string_view line) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // EVP_Digest with SHA-256 cannot fail short of memory exhaustion.
  if (EVP_Digest(line.data(), line.size(), digest, &size, EVP_sha256(), nullptr) != 1) {
    return std::string(64, '?');  // matches no record's "prev": verify reports it
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(size)));
}

absl::Status AuditSink::AppendAfterTheFact(std::string_view event, nlohmann::json fields) {
  return Append(event, std::move(fields)).status();
}

bool ParseRecord(std::string_view line, nlohmann::json* record) {
  *record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!record->is_object()) return false;  // also covers a parse failure (discarded)
  auto index = record->find("index");
  if (index == record->end() || !index->is_number_unsigned()) return false;
  auto event = record->find("event");
  return event != record->end() && event->is_string();
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path,
                                                         std::function<absl::Time()> clock) {
  absl::StatusOr<OpenedFile> file = OpenLogFile(path);
  if (!file.ok()) return file.status();
  return std::unique_ptr<AuditLog>(new AuditLog(path, file->fd, file->scan.last_index + 1,
                                                std::move(file->scan.last_hash),
                                                file->scan.needs_newline, std::move(clock)));
}

absl::StatusOr<bool> AuditLog::Reopen() {
  absl::MutexLock lock(&mu_);
  struct stat open_st, path_st;
  if (fstat(fd_, &open_st) == 0 && lstat(path_.c_str(), &path_st) == 0 &&
      open_st.st_dev == path_st.st_dev && open_st.st_ino == path_st.st_ino) {
    return false;  // nothing moved it
  }
  absl::StatusOr<OpenedFile> file = OpenLogFile(path_);
  if (!file.ok()) return file.status();
  // What waited belongs before the rotation: the old file, if it takes it now.
  WritePendingLocked().IgnoreError();
  close(fd_);
  fd_ = file->fd;
  needs_newline_ = file->scan.needs_newline;
  const uint64_t previous_last = next_index_ - 1;
  // Records someone left in the new file keep their indexes: continue after
  // them. The chain goes on from this log's own last record (last_hash_).
  next_index_ = std::max(next_index_, file->scan.last_index + 1);
  broken_ = absl::OkStatus();
  // Under the same lock: the new file's first record says where it continues from.
  absl::StatusOr<std::string> fields =
      FieldsText({{"previous_last_index", previous_last}, {"path", path_}});
  if (!fields.ok()) return fields.status();
  const absl::Time now = clock_();
  absl::StatusOr<uint64_t> index = AppendLocked(kAuditLogReopened, *fields, now, /*late=*/false);
  if (!index.ok()) {
    if (absl::IsDataLoss(index.status())) return index.status();  // written, not synced
    // Kept ahead of the rest: the new file must still open with it.
    pending_bytes_ += fields->size();
    pending_.push_front(Pending{std::string(kAuditLogReopened), *std::move(fields), now});
    return index.status();
  }
  absl::Status rest = WritePendingLocked();
  if (!rest.ok()) return rest;
  return true;
}

AuditLog::AuditLog(std::string path, int fd, uint64_t next_index, std::string last_hash,
                   bool needs_newline, std::function<absl::Time()> clock)
    : path_(std::move(path)),
      fd_(fd),
      clock_(std::move(clock)),
      next_index_(next_index),
      last_hash_(std::move(last_hash)),
      needs_newline_(needs_newline) {}

AuditLog::~AuditLog() {
  absl::MutexLock lock(&mu_);
  WritePendingLocked().IgnoreError();  // the last chance for kept records
  close(fd_);
}

absl::StatusOr<uint64_t> AuditLog::Append(std::string_view event, nlohmann::json fields) {
  if (!IsValidEventName(event)) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit event name \"", std::string(event), "\" is not [a-z0-9_]{1,64}"));
  }
  absl::StatusOr<std::string> fields_text = FieldsText(fields);
  if (!fields_text.ok()) return fields_text.status();

  absl::MutexLock lock(&mu_);
  // Records of what already happened go first; while they cannot be written,
  // nothing new is (the caller refuses to act unaudited).
  if (absl::Status pending = WritePendingLocked(); !pending.ok()) return pending;
  // Time is read under the lock so that times never go backwards along the
  // index (short of the wall clock itself being stepped back).
  return AppendLocked(event, *fields_text, clock_(), /*late=*/false);
}

absl::Status AuditLog::AppendAfterTheFact(std::string_view event, nlohmann::json fields) {
  if (!IsValidEventName(event)) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit event name \"", std::string(event), "\" is not [a-z0-9_]{1,64}"));
  }
  absl::StatusOr<std::string> fields_text = FieldsText(fields);
  if (!fields_text.ok()) return fields_text.status();

  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_();
  absl::Status written = WritePendingLocked();
  if (written.ok()) {
    absl::StatusOr<uint64_t> index = AppendLocked(event, *fields_text, now, /*late=*/false);
    // DATA_LOSS here is a failed fdatasync: the line was written, keep no copy.
    if (index.ok() || absl::IsInvalidArgument(index.status()) || absl::IsDataLoss(index.status())) {
      return index.status();
    }
    written = index.status();
  }
  KeepLocked(Pending{std::string(event), *std::move(fields_text), now});
  return absl::Status(
      written.code(),
      absl::StrCat(written.message(), dropped_.empty() ? "; the record is kept and will be written "
                                                         "once the log can be written"
                                                       : "; no room to keep the record: it is "
                                                         "counted in audit_records_dropped"));
}

size_t AuditLog::PendingRecords() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

void AuditLog::KeepLocked(Pending record) {
  if (dropped_.empty() && pending_.size() < kMaxPendingRecords &&
      pending_bytes_ + record.fields_text.size() <= kMaxPendingBytes) {
    pending_bytes_ += record.fields_text.size();
    pending_.push_back(std::move(record));
    return;
  }
  // Once one is dropped, later ones are too: what is kept stays a prefix.
  if (dropped_.empty()) first_dropped_ = record.time;
  last_dropped_ = record.time;
  ++dropped_[record.event];
}

absl::Status AuditLog::WritePendingLocked() {
  if (!broken_.ok()) return broken_;
  while (!pending_.empty()) {
    const Pending& next = pending_.front();
    absl::StatusOr<uint64_t> index =
        AppendLocked(next.event, next.fields_text, next.time, /*late=*/true);
    // Written (fdatasync may have failed: DATA_LOSS, the line is in the file)
    // or never writable (a record too large once "written" is added): done.
    const bool done =
        index.ok() || absl::IsDataLoss(index.status()) || absl::IsInvalidArgument(index.status());
    if (done) {
      pending_bytes_ -= next.fields_text.size();
      pending_.pop_front();
    }
    if (!index.ok() && !absl::IsInvalidArgument(index.status())) return index.status();
  }
  if (dropped_.empty()) return absl::OkStatus();
  uint64_t count = 0;
  for (const auto& [event, n] : dropped_) count += n;
  absl::StatusOr<std::string> fields = FieldsText({{"count", count},
                                                   {"events", dropped_},
                                                   {"first_time", FormatRecordTime(first_dropped_)},
                                                   {"last_time", FormatRecordTime(last_dropped_)}});
  if (!fields.ok()) return fields.status();
  absl::StatusOr<uint64_t> index =
      AppendLocked(kAuditRecordsDropped, *fields, last_dropped_, /*late=*/true);
  if (!index.ok()) return index.status();
  dropped_.clear();
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> AuditLog::AppendLocked(std::string_view event,
                                                const std::string& fields_text, absl::Time time,
                                                bool late) {
  if (!broken_.ok()) return broken_;
  const uint64_t index = next_index_;
  // The record's own line, without the newline: what the next "prev" hashes.
  std::string record = absl::StrCat(
      "{\"index\":", index, ",\"time\":\"", FormatRecordTime(time), "\",\"event\":\"",
      std::string(event), "\",\"prev\":\"", last_hash_, "\"",
      late ? absl::StrCat(",\"written\":\"", FormatRecordTime(clock_()), "\"") : std::string(),
      fields_text, "}");
  if (record.size() + 1 > kMaxRecordBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("audit record of ", record.size() + 1, " bytes exceeds ", kMaxRecordBytes));
  }
  std::string line = absl::StrCat(needs_newline_ ? "\n" : "", record, "\n");

  ssize_t n;
  do {
    n = write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);  // -1 on a regular file: nothing was written
  if (n < 0) return ErrnoStatus("audit log: write", errno);
  if (static_cast<size_t>(n) < line.size()) {
    // Part of the line reached the file (disk or file-size limit hit): that
    // tail is torn, so the next record must start on a line of its own.
    if (n > 0) needs_newline_ = line[static_cast<size_t>(n) - 1] != '\n';
    return absl::ResourceExhaustedError(
        absl::StrCat("audit log: short write, ", n, " of ", line.size(), " bytes"));
  }
  needs_newline_ = false;
  if (fdatasync(fd_) != 0) {
    broken_ = absl::DataLossError(absl::StrCat("audit log: fdatasync failed (", strerror(errno),
                                               "); records may be lost; reopen the log"));
    return broken_;
  }
  next_index_ = index + 1;
  last_hash_ = RecordHash(record);
  return index;
}

}  // namespace termbridge::audit
