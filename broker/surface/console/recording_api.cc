// The console's replay window and whole-history search over a recording
// (see recording_api.h). Each request is one ExportRecording stream on
// gRPC's callback API; the export's lines are walked as they arrive (on a
// gRPC thread), so memory holds one answer, not the recording.
#include "broker/surface/console/recording_api.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/operator_call.h"
#include "broker/surface/console/recording_search.h"
#include "broker/surface/console/string_views.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

using nlohmann::json;

// A replay is sent whole; past this much asciicast the page gets the
// beginning and `truncated` (termbridge recordings export has it all).
constexpr size_t kMaxReplayBytes = 32 << 20;
// A replay at an offset begins this much output before it.
constexpr uint64_t kReplayLeadBytes = 2 << 20;
constexpr int kMaxSearches = 2;
// A search on from an offset reads this much before it (the line it is in).
constexpr uint64_t kSearchLeadBytes = 64 << 10;
// Replay windows loading at once (each may hold about 32 MiB twice over).
constexpr int kMaxCasts = 2;

uint64_t Before(uint64_t offset, uint64_t lead) { return offset > lead ? offset - lead : 0; }

json Error(std::string_view status, std::string_view message) {
  return {{"error", {{"status", status}, {"message", message}}}};
}

// One ExportRecording stream whose lines a subclass reads. Holds itself
// alive from Start until OnDone.
class RecordingRead : public grpc::ClientReadReactor<v1::RecordingChunk>,
                      public Stoppable,
                      public std::enable_shared_from_this<RecordingRead> {
 public:
  // The export begins at the segment holding output byte `from_offset`.
  RecordingRead(ConsoleContext* context, std::string terminal_id, uint64_t from_offset,
                ApiReply reply)
      : context_(context), reply_(std::move(reply)) {
    request_.set_terminal_id(std::move(terminal_id));
    request_.set_from_offset(from_offset);
  }
  ~RecordingRead() override = default;

  void Start() {
    live_id_ = context_->calls.Add(weak_from_this());
    if (live_id_ == 0) {
      Released();
      reply_(503, Dump(Error("UNAVAILABLE", "console stopping")));
      return;
    }
    self_ = shared_from_this();
    client_context_.set_deadline(std::chrono::system_clock::now() + 6 * kOperatorCallDeadline);
    context_->stub->async()->ExportRecording(&client_context_, &request_, this);
    StartRead(&chunk_);
    StartCall();
  }

  void Shutdown() override { client_context_.TryCancel(); }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    absl::StatusOr<bool> more = walker_.Feed(
        chunk_.asciicast(), [this](const CastEvent& e) { return Event(e); },
        absl::MakeConstSpan(chunk_.output_offsets().data(), chunk_.output_offsets().size()));
    if (!more.ok()) error_ = more.status();
    if (!more.ok() || !*more) {
      stopped_ = true;
      client_context_.TryCancel();
      return;
    }
    StartRead(&chunk_);
  }

  void OnDone(const grpc::Status& status) override {
    Released();  // before the reply: a client that has it may ask again at once
    if (!error_.ok()) {
      reply_(500, Dump(Error("INTERNAL", StdView(error_.message()))));
    } else if (status.ok() || stopped_) {
      reply_(200, Dump(Answer(/*complete=*/status.ok())));
    } else if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && PartialOnDeadline()) {
      timed_out_ = true;
      reply_(200, Dump(Answer(/*complete=*/false)));
    } else {
      reply_(HttpStatusFor(status.error_code()),
             Dump({{"error", StatusJson(status, ErrorDetailOf(client_context_))}}));
    }
    context_->calls.Remove(live_id_);
    auto keep = std::move(self_);  // may be the last reference
  }

 protected:
  // One event of the export; false stops the stream.
  virtual bool Event(const CastEvent& event) = 0;
  // The 200 answer, once the stream ended (`complete`: the whole recording
  // was read) or Event stopped it.
  virtual json Answer(bool complete) = 0;
  // The stream is over (or never started).
  virtual void Released() {}
  // Whether a stream cut by its deadline still answers what it read.
  virtual bool PartialOnDeadline() const { return false; }
  bool timed_out() const { return timed_out_; }

  const std::string& terminal_id() const { return request_.terminal_id(); }
  const CastWalker& walker() const { return walker_; }

 private:
  ConsoleContext* const context_;
  const ApiReply reply_;
  v1::ExportRecordingRequest request_;
  grpc::ClientContext client_context_;
  v1::RecordingChunk chunk_;
  CastWalker walker_;
  absl::Status error_;
  bool stopped_ = false;
  bool timed_out_ = false;
  std::shared_ptr<RecordingRead> self_;
  uint64_t live_id_ = 0;
};

// GET /api/recordings/cast: the asciicast, whole or from near `at`.
class CastWindow final : public RecordingRead {
 public:
  CastWindow(ConsoleContext* context, std::string terminal_id, std::optional<uint64_t> at,
             ApiReply reply)
      : RecordingRead(context, std::move(terminal_id), at ? Before(*at, kReplayLeadBytes) : 0,
                      std::move(reply)),
        console_(context),
        window_(at, kReplayLeadBytes, kMaxReplayBytes) {}

 protected:
  bool Event(const CastEvent& e) override { return window_.Add(e); }
  void Released() override { console_->recording_casts.fetch_sub(1); }

  json Answer(bool complete) override {
    return {{"terminal_id", terminal_id()},
            {"asciicast", walker().header() + "\n" + window_.lines()},
            {"offsets", window_.offsets()},
            {"first_offset", window_.first_offset()},
            {"end_offset", walker().offset()},
            {"truncated", window_.truncated() || !complete}};
  }

 private:
  ConsoleContext* const console_;
  ReplayWindow window_;
};

// GET /api/recordings/search.
class SearchRun final : public RecordingRead {
 public:
  SearchRun(ConsoleContext* context, std::string terminal_id, std::string query, uint64_t from,
            ApiReply reply)
      : RecordingRead(context, std::move(terminal_id), Before(from, kSearchLeadBytes),
                      std::move(reply)),
        console_(context),
        query_(std::move(query)),
        search_(query_, SearchLimits(), from) {}

 protected:
  bool Event(const CastEvent& e) override {
    if (e.code == 'o') return search_.Output(e.offset, e.data, e.seconds);
    if (e.code == 'm' && e.end > e.offset) search_.Gap();
    return true;
  }

  json Answer(bool complete) override {
    if (complete || timed_out()) search_.Finish();  // the line it was in, too
    json header = json::parse(walker().header(), nullptr, /*allow_exceptions=*/false);
    double opened = 0;
    if (header.is_object() && header.contains("timestamp") && header["timestamp"].is_number()) {
      opened = header["timestamp"].get<double>();
    }
    json matches = json::array();
    for (const SearchMatch& m : search_.matches()) {
      json match = {{"offset", m.offset}, {"end", m.end},       {"line", m.line},
                    {"column", m.column}, {"length", m.length}, {"seconds", m.seconds}};
      if (opened > 0 && m.seconds >= 0) {
        match["time_unix_ms"] = static_cast<int64_t>((opened + m.seconds) * 1000);
      }
      matches.push_back(std::move(match));
    }
    const RecordingSearch::Stop stop = search_.stopped();
    return {{"terminal_id", terminal_id()},
            {"query", query_},
            {"matches", std::move(matches)},
            {"stopped", stop == RecordingSearch::Stop::kMatches ? "matches"
                        : stop == RecordingSearch::Stop::kBytes ? "bytes"
                        : timed_out()                           ? "time"
                                                                : ""},
            {"scanned_to", search_.scanned_to()},
            {"scanned_bytes", search_.scanned_bytes()},
            {"end_offset", walker().offset()}};
  }

  void Released() override { console_->recording_searches.fetch_sub(1); }
  bool PartialOnDeadline() const override { return true; }

 private:
  ConsoleContext* const console_;
  const std::string query_;
  RecordingSearch search_;
};

void BadRequest(std::string_view message, const ApiReply& reply) {
  reply(400, Dump(Error("INVALID_ARGUMENT", message)));
}

std::optional<std::string> TerminalId(std::string_view query, const ApiReply& reply) {
  std::optional<std::string> id = QueryParam(query, "terminal_id");
  if (!id || id->empty() || id->size() > 256) {
    BadRequest("terminal_id is required", reply);
    return std::nullopt;
  }
  return id;
}

// An optional offset parameter; false (and a 400 sent) when it is bad.
bool OffsetParam(std::string_view query, std::string_view name, std::optional<uint64_t>* value,
                 const ApiReply& reply) {
  std::optional<std::string> text = QueryParam(query, name);
  if (!text || text->empty()) return true;
  uint64_t parsed = 0;
  if (!absl::SimpleAtoi(*text, &parsed)) {
    BadRequest(absl::StrCat(AbslView(name), " must be an output byte offset"), reply);
    return false;
  }
  *value = parsed;
  return true;
}

}  // namespace

bool IsRecordingPath(std::string_view path) {
  return path == "/api/recordings/cast" || path == "/api/recordings/search";
}

void HandleRecording(ConsoleContext* context, std::string_view path, std::string_view query,
                     ApiReply reply) {
  std::optional<std::string> terminal_id = TerminalId(query, reply);
  if (!terminal_id) return;
  if (path == "/api/recordings/cast") {
    std::optional<uint64_t> at;
    if (!OffsetParam(query, "at", &at, reply)) return;
    if (context->recording_casts.fetch_add(1) >= kMaxCasts) {
      context->recording_casts.fetch_sub(1);
      reply(503, Dump(Error("UNAVAILABLE",
                            "two replays are loading already: try again once one has loaded")));
      return;
    }
    std::make_shared<CastWindow>(context, *std::move(terminal_id), at, std::move(reply))->Start();
    return;
  }
  std::string text = QueryParam(query, "q").value_or("");
  if (absl::Status valid = RecordingSearch::CheckQuery(text); !valid.ok()) {
    return BadRequest(StdView(valid.message()), reply);
  }
  std::optional<uint64_t> from;
  if (!OffsetParam(query, "from", &from, reply)) return;
  if (context->recording_searches.fetch_add(1) >= kMaxSearches) {
    context->recording_searches.fetch_sub(1);
    reply(503, Dump(Error("UNAVAILABLE", "two searches are running already: try again soon")));
    return;
  }
  spdlog::info("event=console_recording_search terminal_id={} from={}", *terminal_id,
               from.value_or(0));
  std::make_shared<SearchRun>(context, *std::move(terminal_id), std::move(text), from.value_or(0),
                              std::move(reply))
      ->Start();
}

}  // namespace termbridge::console
