// VerifyAuditFiles: streams the files line by line (zlib reads plain and gzip
// files alike), keeps only the last record's index, hash and place, and
// compares each record with it. Memory stays bounded by the longest record
// (AuditLog::kMaxRecordBytes): a longer line is skipped unread.
#include "broker/audit/audit_verify.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/audit/audit_log.h"
#include "nlohmann/json.hpp"

namespace termbridge::audit {
namespace {

constexpr unsigned kReadChunkBytes = 256 * 1024;

// The lines of one file, each without its '\n'.
class LineReader {
 public:
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("audit verify: open ", path));
    }
    gzFile gz = gzdopen(fd, "rb");  // reads a file that is not gzip as it is
    if (gz == nullptr) {
      close(fd);
      return absl::ResourceExhaustedError(absl::StrCat("audit verify: zlib cannot read ", path));
    }
    gzbuffer(gz, kReadChunkBytes);
    return std::unique_ptr<LineReader>(new LineReader(path, gz));
  }
  ~LineReader() { gzclose(gz_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  struct Line {
    std::string bytes;       // empty when oversized
    bool complete = true;    // false: the file ended without a '\n'
    bool oversized = false;  // longer than any record can be
  };

  // The next line, or nullopt at the end of the file.
  absl::StatusOr<std::optional<Line>> Next() {
    Line line;
    size_t length = 0;
    while (true) {
      if (pos_ == buffer_.size()) {
        absl::StatusOr<bool> more = Fill();
        if (!more.ok()) return more.status();
        if (!*more) {
          if (length == 0) return std::nullopt;
          line.complete = false;
          return line;
        }
      }
      const size_t newline = buffer_.find('\n', pos_);
      const size_t end = newline == std::string::npos ? buffer_.size() : newline;
      length += end - pos_;
      if (length >= AuditLog::kMaxRecordBytes) {
        line.oversized = true;
        line.bytes.clear();
      } else {
        line.bytes.append(buffer_, pos_, end - pos_);
      }
      if (newline != std::string::npos) {
        pos_ = newline + 1;
        return line;
      }
      pos_ = buffer_.size();
    }
  }

 private:
  LineReader(std::string path, gzFile gz) : path_(std::move(path)), gz_(gz) {}

  // Reads the next chunk; false at the end of the file.
  absl::StatusOr<bool> Fill() {
    buffer_.resize(kReadChunkBytes);
    pos_ = 0;
    int n = gzread(gz_, buffer_.data(), kReadChunkBytes);
    if (n < 0) {
      int code = 0;
      const char* what = gzerror(gz_, &code);
      buffer_.clear();
      if (code == Z_ERRNO) {
        return absl::ErrnoToStatus(errno, absl::StrCat("audit verify: read ", path_));
      }
      return absl::DataLossError(absl::StrCat("audit verify: ", path_, ": ", what));
    }
    buffer_.resize(static_cast<size_t>(n));
    return n > 0;
  }

  const std::string path_;
  gzFile gz_;
  std::string buffer_;
  size_t pos_ = 0;
};

bool IsHash(const nlohmann::json& value) {
  if (!value.is_string()) return false;
  const std::string& text = value.get_ref<const std::string&>();
  if (text.size() != kGenesisHash.size()) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Where a line is, for messages: "line 7" in the current file, else "a.jsonl line 7".
struct Place {
  std::string file;
  uint64_t line = 0;
  std::string Text(const std::string& current_file) const {
    if (file == current_file) return absl::StrCat("line ", line);
    return absl::StrCat(file, " line ", line);
  }
};

// The walk along the chain, one line at a time.
class ChainCheck {
 public:
  explicit ChainCheck(AuditVerification* result) : result_(result) {}

  // Checks one line of `file`; false once a problem is found (stop there).
  bool Line(const std::string& file, uint64_t number, const LineReader::Line& line) {
    file_ = file;
    line_ = number;
    if (!line.complete) {
      Warn(kTornLine, 0,
           "the file ends with a line cut short (no newline): a write that did not finish "
           "(a crash or a full disk); it is not a record");
      return true;
    }
    nlohmann::json record;
    if (line.oversized || !ParseRecord(line.bytes, &record)) {
      Warn(kNotARecord, 0,
           line.oversized ? "a line longer than any record: not a record; the chain steps over it"
                          : "a line that is not a record (a write cut short by a full disk, or "
                            "text added by hand); the chain steps over it");
      between_ = Place{file, number};
      return true;
    }
    return Record(record, line.bytes);
  }

  void Finish() {
    if (unchained_ > 0) {
      AuditFinding finding{std::string(kUnchained), unchained_from_.file, unchained_from_.line, 0,
                           absl::StrCat(unchained_, " records from ", unchained_from_.Text(""),
                                        " on were written before the log was hash-chained (no "
                                        "\"prev\"): only their index order is checked")};
      Add(std::move(finding));
    }
    if (result_->records == 0 && !result_->problem) {
      Add(AuditFinding{std::string(kNoRecords), "", 0, 0, "the files hold no record"});
    }
  }

 private:
  bool Record(const nlohmann::json& record, const std::string& bytes) {
    const uint64_t index = record["index"].get<uint64_t>();
    const std::string event = record["event"].get<std::string>();
    auto prev = record.find("prev");
    const bool chained = prev != record.end();
    // The file and line are the finding's own fields: messages start at the record.
    const std::string here = absl::StrCat("record ", index);
    if (chained && !IsHash(*prev)) {
      return Fail(kPrevMissing, index,
                  absl::StrCat(here, ": \"prev\" is not a SHA-256 hash: the record was edited"));
    }
    if (!chained && chain_started_) {
      return Fail(kPrevMissing, index,
                  absl::StrCat(here,
                               ": no \"prev\" after hash-chained records: the record was edited "
                               "or inserted"));
    }
    const std::string between =
        between_ ? absl::StrCat(" (", between_->Text(file_),
                                " before it is not a record: a record there may have been edited)")
                 : "";
    if (have_last_) {
      const std::string last = absl::StrCat("record ", last_index_, " (", last_.Text(file_), ")");
      if (index > last_index_ + 1) {
        return Fail(
            kIndexGap, index,
            absl::StrCat(here, " follows ", last, ": ",
                         index - last_index_ - 1 == 1
                             ? absl::StrCat("record ", last_index_ + 1, " is")
                             : absl::StrCat("records ", last_index_ + 1, " to ", index - 1, " are"),
                         " missing (removed, or moved elsewhere)", between));
      }
      if (index <= last_index_) {
        return Fail(kIndexOutOfOrder, index,
                    absl::StrCat(here, " comes after ", last,
                                 ": records were reordered, copied or the files given are not in "
                                 "order (oldest first)"));
      }
      if (chained && prev->get_ref<const std::string&>() != last_hash_) {
        return Fail(kPrevMismatch, index,
                    absl::StrCat(here, ": \"prev\" is not the hash of the record before it, ", last,
                                 ": that record was changed after it was written", between));
      }
    } else if (chained) {
      const bool genesis = prev->get_ref<const std::string&>() == kGenesisHash;
      if (genesis && index != 1) {
        return Fail(kIndexGap, index,
                    absl::StrCat(here,
                                 " is the log's first (its \"prev\" is the genesis hash) "
                                 "but not record 1: records before it were removed"));
      }
      if (!genesis && event == kAuditLogReopened) {
        Warn(kStartsAfterRotation, index,
             absl::StrCat(
                 "the first record continues a rotated file that was not given: records before "
                 "index ",
                 index, " are not checked (give the older files first to check them)"));
      } else if (!genesis) {
        return Fail(kStartMissing, index,
                    absl::StrCat(here,
                                 " is neither the log's first record (index 1) nor a rotation "
                                 "(audit_log_reopened): the records before it were removed"));
      }
    }
    if (!chained) {
      if (unchained_++ == 0) unchained_from_ = Place{file_, line_};
    }
    chain_started_ = chain_started_ || chained;
    have_last_ = true;
    last_index_ = index;
    last_hash_ = RecordHash(bytes);
    last_ = Place{file_, line_};
    between_.reset();
    if (result_->records++ == 0) result_->first_index = index;
    result_->last_index = index;
    result_->last_hash = last_hash_;
    return true;
  }

  bool Fail(std::string_view kind, uint64_t index, std::string message) {
    result_->problem = AuditFinding{std::string(kind), file_, line_, index, std::move(message)};
    return false;
  }

  void Warn(std::string_view kind, uint64_t index, std::string message) {
    Add(AuditFinding{std::string(kind), file_, line_, index, std::move(message)});
  }

  void Add(AuditFinding finding) {
    if (result_->warnings_total++ < AuditVerification::kMaxWarnings) {
      result_->warnings.push_back(std::move(finding));
    }
  }

  AuditVerification* const result_;
  std::string file_;
  uint64_t line_ = 0;
  bool have_last_ = false;
  uint64_t last_index_ = 0;
  std::string last_hash_;
  Place last_;
  bool chain_started_ = false;
  uint64_t unchained_ = 0;
  Place unchained_from_;
  std::optional<Place> between_;  // a line that is not a record, since the last record
};

}  // namespace

absl::StatusOr<AuditVerification> VerifyAuditFiles(const std::vector<std::string>& paths) {
  AuditVerification result;
  result.files = paths;
  ChainCheck check(&result);
  for (const std::string& path : paths) {
    absl::StatusOr<std::unique_ptr<LineReader>> reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    uint64_t number = 0;
    while (true) {
      absl::StatusOr<std::optional<LineReader::Line>> line = (*reader)->Next();
      if (!line.ok()) return line.status();
      if (!line->has_value()) break;
      if (!check.Line(path, ++number, **line)) return result;
    }
  }
  check.Finish();
  return result;
}

}  // namespace termbridge::audit
