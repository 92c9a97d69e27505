// The console's history views over the audit log (see history_api.h).
#include "broker/surface/console/history_api.h"

#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/operator_call.h"
#include "broker/surface/console/string_views.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

// The most audit log the console reads for one answer, in bytes on disk (a
// gzip file counts ten times its size): the log has no size limit, and each
// answer holds the records it reads in memory. Past it, the answer says to
// use the CLI, which reads on the host without taking the broker's memory.
constexpr uintmax_t kMaxHistoryBytes = uintmax_t{256} << 20;

uintmax_t ReadCost(const std::vector<std::string>& files) {
  uintmax_t total = 0;
  for (const std::string& file : files) {
    std::error_code error;
    uintmax_t size = std::filesystem::file_size(file, error);
    if (error) continue;
    bool gz = file.size() > 3 && file.compare(file.size() - 3, 3, ".gz") == 0;
    total += gz ? size * 10 : size;
  }
  return total;
}

namespace history = cli::history;
using nlohmann::json;

constexpr size_t kMaxFilterBytes = 256;

json Error(std::string_view status, absl::string_view message) {
  return {{"error", {{"status", status}, {"message", std::string(message)}}}};
}

// The library's messages name the CLI's flags ("--since 5x: ..."); the page
// has fields of the same names.
std::string FieldMessage(const absl::Status& status) {
  absl::string_view message = status.message();
  absl::ConsumePrefix(&message, "--");
  return std::string(message);
}

absl::StatusOr<std::string> Param(std::string_view query, std::string_view name) {
  std::string value = QueryParam(query, name).value_or("");
  if (value.size() > kMaxFilterBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(name), " is longer than ", kMaxFilterBytes, " bytes"));
  }
  return value;
}

// The names terminals had (terminal_opened, then terminal_renamed), by id.
std::map<std::string, std::string> TerminalNames(const std::vector<json>& records) {
  std::map<std::string, std::string> names;
  for (const json& record : records) {
    if (!record.is_object()) continue;
    auto event = record.find("event");
    if (event == record.end() || !event->is_string()) continue;
    if (*event != "terminal_opened" && *event != "terminal_renamed") continue;
    auto id = record.find("terminal_id");
    auto name = record.find("name");
    if (id == record.end() || name == record.end() || !id->is_string() || !name->is_string()) {
      continue;
    }
    if (!name->get<std::string>().empty()) names[id->get<std::string>()] = name->get<std::string>();
  }
  return names;
}

json DecisionsBody(const history::AuditRecords& audit, const history::DecisionFilter& filter) {
  history::DecisionFilter all = filter;
  all.limit = 0;
  std::vector<history::Decision> matched = history::Filter(history::Decisions(audit.records), all);
  const size_t keep =
      filter.limit == 0 ? kMaxHistoryDecisions : std::min(filter.limit, kMaxHistoryDecisions);
  const size_t first = matched.size() > keep ? matched.size() - keep : 0;
  std::map<std::string, std::string> names = TerminalNames(audit.records);
  json decisions = json::array();
  json terminal_names = json::object();
  for (size_t i = first; i < matched.size(); ++i) {
    decisions.push_back(history::DecisionJson(matched[i]));
    auto it = names.find(matched[i].terminal_id);
    if (it != names.end()) terminal_names[it->first] = it->second;
  }
  return {{"decisions", std::move(decisions)},
          {"matched", matched.size()},
          {"terminal_names", std::move(terminal_names)},
          {"skipped_lines", audit.skipped_lines}};
}

HistoryAnswer TimelineAnswer(const history::AuditRecords& audit, const std::string& terminal_id) {
  absl::StatusOr<history::Timeline> timeline = history::BuildTimeline(audit.records, terminal_id);
  if (!timeline.ok()) {
    return {404, Error("NOT_FOUND", timeline.status().message())};
  }
  const size_t total = timeline->entries.size();
  const size_t first = total > kMaxTimelineEntries ? total - kMaxTimelineEntries : 0;
  json entries = json::array();
  for (size_t i = first; i < total; ++i) {
    entries.push_back(history::TimelineEntryJson(timeline->entries[i]));
  }
  std::map<std::string, std::string> names = TerminalNames(audit.records);
  auto name = names.find(terminal_id);
  return {200,
          {{"terminal_id", timeline->terminal_id},
           {"name", name == names.end() ? "" : name->second},
           {"entries", std::move(entries)},
           {"omitted", first},
           {"skipped_lines", audit.skipped_lines}}};
}

}  // namespace

bool IsHistoryPath(std::string_view path) {
  return path == "/api/history/decisions" || path == "/api/history/timeline";
}

absl::StatusOr<HistoryRequest> ParseHistoryRequest(std::string_view path, std::string_view query,
                                                   absl::Time now) {
  HistoryRequest request;
  if (path == "/api/history/timeline") {
    request.kind = HistoryRequest::Kind::kTimeline;
    absl::StatusOr<std::string> id = Param(query, "terminal_id");
    if (!id.ok()) return id.status();
    if (id->empty()) return absl::InvalidArgumentError("terminal_id is required");
    request.terminal_id = *std::move(id);
    return request;
  }
  if (path != "/api/history/decisions") return absl::NotFoundError("no such history view");
  history::DecisionFilter& filter = request.filter;
  for (auto [name, slot] :
       {std::pair{"agent", &filter.agent}, std::pair{"terminal", &filter.terminal},
        std::pair{"decision", &filter.decision}}) {
    absl::StatusOr<std::string> value = Param(query, name);
    if (!value.ok()) return value.status();
    *slot = *std::move(value);
  }
  for (auto [name, slot] : {std::pair{"since", &filter.since}, std::pair{"until", &filter.until}}) {
    absl::StatusOr<std::string> value = Param(query, name);
    if (!value.ok()) return value.status();
    if (value->empty()) continue;
    absl::StatusOr<absl::Time> when = history::ParseWhen(*value, now, name);
    if (!when.ok()) return absl::InvalidArgumentError(FieldMessage(when.status()));
    *slot = *when;
  }
  absl::StatusOr<std::string> limit = Param(query, "limit");
  if (!limit.ok()) return limit.status();
  if (!limit->empty() && !absl::SimpleAtoi(*limit, &filter.limit)) {
    return absl::InvalidArgumentError("limit must be a count of 0 or more");
  }
  if (absl::Status s = history::CheckDecisionFilter(filter); !s.ok()) {
    return absl::InvalidArgumentError(FieldMessage(s));
  }
  return request;
}

HistoryAnswer AnswerHistory(const std::string& audit_log, const HistoryRequest& request) {
  if (audit_log.empty()) {
    return {412, Error("FAILED_PRECONDITION", "the broker keeps no audit log (audit_log is off)")};
  }
  absl::StatusOr<std::vector<std::string>> files = history::FindAuditFiles(audit_log);
  if (!files.ok()) {
    return {files.status().code() == absl::StatusCode::kNotFound ? 404 : 500,
            Error(files.status().code() == absl::StatusCode::kNotFound ? "NOT_FOUND" : "INTERNAL",
                  files.status().message())};
  }
  if (uintmax_t cost = ReadCost(*files); cost > kMaxHistoryBytes) {
    return {413, Error("RESOURCE_EXHAUSTED",
                       absl::StrCat("the audit log is too large to read here (", cost >> 20,
                                    " MiB, the console reads up to ", kMaxHistoryBytes >> 20,
                                    " MiB); on the host, termbridge approvals history --since 1d "
                                    "and termbridge history <terminal> read it"))};
  }
  absl::StatusOr<history::AuditRecords> audit = history::ReadAuditRecords(*files);
  if (!audit.ok()) return {500, Error("INTERNAL", audit.status().message())};
  if (request.kind == HistoryRequest::Kind::kTimeline) {
    return TimelineAnswer(*audit, request.terminal_id);
  }
  return {200, DecisionsBody(*audit, request.filter)};
}

void HandleHistory(ConsoleContext* context, HistoryRequest request, ApiReply reply) {
  auto call = std::make_shared<OperatorCall<v1::BrokerInfoRequest, v1::BrokerInfo>>(context);
  call->Start(
      [](v1::TerminalOperator::Stub* stub, grpc::ClientContext* c, const v1::BrokerInfoRequest* req,
         v1::BrokerInfo* resp, std::function<void(grpc::Status)> done) {
        stub->async()->GetBrokerInfo(c, req, resp, std::move(done));
      },
      [context, request = std::move(request), reply](
          const grpc::Status& status, const v1::BrokerInfo& info, std::string_view detail) mutable {
        if (!status.ok()) {
          reply(HttpStatusFor(status.error_code()), Dump({{"error", StatusJson(status, detail)}}));
          return;
        }
        absl::Status started = context->history_readers.Start(
            [audit_log = info.audit_log(), request = std::move(request), reply] {
              HistoryAnswer answer = AnswerHistory(audit_log, request);
              reply(answer.http_status, Dump(answer.body));
            });
        if (!started.ok()) {
          spdlog::warn("event=console_history_refused error=\"{}\"",
                       std::string(started.message()));
          reply(503, Dump(Error("UNAVAILABLE", started.message())));
        }
      });
}

}  // namespace termbridge::console
