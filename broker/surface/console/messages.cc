// Conversions between operator gRPC messages and the page's JSON (see messages.h).
#include "broker/surface/console/messages.h"

#include <csignal>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/surface/console/string_views.h"
#include "common/nesting/nesting.h"

namespace termbridge::console {
namespace {

using nlohmann::json;

constexpr size_t kMaxNoteBytes = 4096;
constexpr size_t kMaxIdBytes = 256;
constexpr uint32_t kMaxTerminalSide = 1000;
constexpr size_t kMaxRulesBytes = 32 << 10;
constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxPathBytes = 4096;
// The longest time box a grant gets from the console: 30 days.
constexpr uint64_t kMaxGrantSeconds = 30 * 24 * 3600;

std::string_view StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

// Parses a JSON object body, or InvalidArgument. Nesting is bounded before
// parsing: the parser recurses, and a page message or API body 100,000 deep
// would overflow the broker's stack.
absl::StatusOr<json> ParseObject(std::string_view text) {
  if (nesting::JsonNestsDeeperThan(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("JSON nests deeper than ", nesting::kMaxJsonDepth, " levels"));
  }
  // nlohmann's parser ends the text at a NUL byte; JSON has no raw NUL.
  json value = text.find('\0') != std::string_view::npos
                   ? json(json::value_t::discarded)
                   : json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object()) {
    return absl::InvalidArgumentError("expected a JSON object");
  }
  return value;
}

// A required string member of at most `max_bytes`.
absl::StatusOr<std::string> StringField(const json& object, const char* name, size_t max_bytes,
                                        bool required) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(name, " is required"));
    return std::string();
  }
  if (!it->is_string()) return absl::InvalidArgumentError(absl::StrCat(name, " must be a string"));
  std::string value = it->get<std::string>();
  if (required && value.empty()) return absl::InvalidArgumentError(absl::StrCat(name, " is empty"));
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(name, " is longer than ", max_bytes, " bytes"));
  }
  return value;
}

// A non-negative integer member, or InvalidArgument.
absl::StatusOr<uint64_t> UintField(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a non-negative integer"));
  }
  return it->get<uint64_t>();
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() && HexValue(text[i + 1]) >= 0 &&
               HexValue(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

}  // namespace

json ExitJson(const v1::ExitInfo& exit) {
  json out = {{"running", exit.running()},
              {"exited_at_unix_ms", exit.exited_at_unix_ms()},
              {"closed_reason", exit.closed_reason()},
              {"completion", exit.completion()}};
  if (exit.has_exit_code()) out["exit_code"] = exit.exit_code();
  if (exit.has_signal()) out["signal"] = exit.signal();
  if (exit.secret_prompt()) out["secret_prompt"] = true;
  return out;
}

json ApprovalStateJson(const v1::ApprovalState& state) {
  return {{"state", state.state()},
          {"approval_id", state.approval_id()},
          {"rule", state.rule()},
          {"reason", state.reason()},
          {"decided_by", state.decided_by()},
          {"surface", state.surface()},
          {"note", state.note()},
          {"scope", state.scope()},
          {"grant_expires_at_unix_ms", state.grant_expires_at_unix_ms()}};
}

json SessionInfoJson(const v1::SessionInfo& info) {
  json out = {{"terminal_id", info.terminal_id()},
              {"session_id", info.session_id()},
              {"command", info.command()},
              {"cwd", info.cwd()},
              {"agent_id", info.agent_id()},
              {"started_at_unix_ms", info.started_at_unix_ms()},
              {"output_bytes", info.output_bytes()},
              {"viewers", info.viewers()},
              {"exit", ExitJson(info.exit())},
              {"lock", info.lock()},
              {"name", info.name()},
              {"person", info.person()},
              {"secret_prompt", info.secret_prompt()}};
  if (info.has_last_exit_code()) out["last_exit_code"] = info.last_exit_code();
  if (info.has_approval()) out["approval"] = ApprovalStateJson(info.approval());
  return out;
}

json ApprovalJson(const v1::Approval& approval) {
  json env = json::object();
  for (const auto& [key, value] : approval.env()) env[key] = value;
  return {{"approval_id", approval.approval_id()},
          {"kind", approval.kind()},
          {"command", approval.command()},
          {"cwd", approval.cwd()},
          {"env", std::move(env)},
          {"read_scope",
           std::vector<std::string>(approval.read_scope().begin(), approval.read_scope().end())},
          {"reads", std::vector<std::string>(approval.reads().begin(), approval.reads().end())},
          {"lane", approval.lane()},
          {"agent_id", approval.agent_id()},
          {"terminal_id", approval.terminal_id()},
          {"session_id", approval.session_id()},
          {"trace_id", approval.trace_id()},
          {"request_id", approval.request_id()},
          {"state", ApprovalStateJson(approval.state())},
          {"requested_at_unix_ms", approval.requested_at_unix_ms()},
          {"expires_at_unix_ms", approval.expires_at_unix_ms()},
          {"abridged", approval.abridged()},
          {"duplicates", approval.duplicates()},
          {"always_rules_toml", approval.always_rules_toml()},
          {"always_refusal", approval.always_refusal()}};
}

json TerminalEventJson(const v1::TerminalEvent& event) {
  json out = {{"type", "terminal"}, {"kind", event.kind()}};
  if (event.has_terminal()) out["terminal"] = SessionInfoJson(event.terminal());
  return out;
}

json ApprovalEventJson(const v1::ApprovalEvent& event) {
  json out = {{"type", "approval"}, {"kind", event.kind()}};
  if (event.has_approval()) out["approval"] = ApprovalJson(event.approval());
  return out;
}

std::string AttachFrameText(const v1::AttachServerFrame& frame) {
  switch (frame.frame_case()) {
    case v1::AttachServerFrame::kGap:
      return Dump({{"type", "gap"}, {"from", frame.gap().from()}, {"to", frame.gap().to()}});
    case v1::AttachServerFrame::kNotice:
      return Dump({{"type", "notice"}, {"text", frame.notice().text()}});
    case v1::AttachServerFrame::kExited:
      return Dump({{"type", "exited"}, {"exit", ExitJson(frame.exited())}});
    default:
      return "";
  }
}

std::string EncodeOutputFrame(uint64_t offset, std::string_view data) {
  std::string out(8 + data.size(), '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((offset >> (56 - 8 * i)) & 0xff);
  out.replace(8, data.size(), data);
  return out;
}

json StatusJson(const grpc::Status& status, std::string_view error_detail) {
  json out = {{"status", StatusCodeName(status.error_code())}, {"message", status.error_message()}};
  v1::ErrorDetail detail;
  if (!error_detail.empty() &&
      detail.ParseFromArray(error_detail.data(), static_cast<int>(error_detail.size()))) {
    out["pm_code"] = detail.code();
    if (!detail.message().empty()) out["message"] = detail.message();
  }
  return out;
}

int HttpStatusFor(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    default:
      return 500;
  }
}

absl::StatusOr<PageMessage> ParsePageMessage(std::string_view text) {
  absl::StatusOr<json> object = ParseObject(text);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> type = StringField(*object, "type", 32, /*required=*/true);
  if (!type.ok()) return type.status();
  PageMessage message;
  if (*type == "ack") {
    absl::StatusOr<uint64_t> bytes = UintField(*object, "bytes");
    if (!bytes.ok()) return bytes.status();
    message.kind = PageMessage::Kind::kAck;
    message.bytes = *bytes;
    return message;
  }
  if (*type == "resize") {
    absl::StatusOr<uint64_t> cols = UintField(*object, "cols");
    absl::StatusOr<uint64_t> rows = UintField(*object, "rows");
    if (!cols.ok()) return cols.status();
    if (!rows.ok()) return rows.status();
    if (*cols < 1 || *rows < 1 || *cols > kMaxTerminalSide || *rows > kMaxTerminalSide) {
      return absl::InvalidArgumentError("cols and rows must be between 1 and 1000");
    }
    message.kind = PageMessage::Kind::kResize;
    message.cols = static_cast<uint32_t>(*cols);
    message.rows = static_cast<uint32_t>(*rows);
    return message;
  }
  if (*type == "signal") {
    absl::StatusOr<std::string> name = StringField(*object, "signal", 16, /*required=*/true);
    if (!name.ok()) return name.status();
    message.kind = PageMessage::Kind::kSignal;
    if (*name == "SIGINT") {
      message.signal = SIGINT;
    } else if (*name == "SIGTERM") {
      message.signal = SIGTERM;
    } else if (*name == "SIGQUIT") {
      message.signal = SIGQUIT;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("signal ", *name, " is not offered"));
    }
    return message;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown message type ", *type));
}

absl::StatusOr<v1::DecideApprovalRequest> ParseDecision(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> id = StringField(*object, "approval_id", kMaxIdBytes, true);
  absl::StatusOr<std::string> decision = StringField(*object, "decision", 16, true);
  absl::StatusOr<std::string> note = StringField(*object, "note", kMaxNoteBytes, false);
  absl::StatusOr<std::string> rules = StringField(*object, "rules_toml", kMaxRulesBytes, false);
  for (const auto* field : {&id, &decision, &note, &rules}) {
    if (!field->ok()) return field->status();
  }
  if (*decision != "once" && *decision != "terminal" && *decision != "always" &&
      *decision != "deny") {
    return absl::InvalidArgumentError("decision must be once, terminal, always or deny");
  }
  if (!rules->empty() && *decision != "always") {
    return absl::InvalidArgumentError("rules_toml goes only with the decision always");
  }
  uint64_t expires_in = 0;
  if (object->contains("expires_in_seconds")) {
    absl::StatusOr<uint64_t> seconds = UintField(*object, "expires_in_seconds");
    if (!seconds.ok()) return seconds.status();
    if (*seconds > kMaxGrantSeconds) {
      return absl::InvalidArgumentError(
          absl::StrCat("expires_in_seconds must be at most ", kMaxGrantSeconds));
    }
    if (*seconds > 0 && *decision != "terminal" && *decision != "always") {
      return absl::InvalidArgumentError(
          "expires_in_seconds goes only with the decisions terminal and always");
    }
    expires_in = *seconds;
  }
  v1::DecideApprovalRequest request;
  request.set_approval_id(*id);
  request.set_decision(*decision);
  request.set_note(*note);
  request.set_rules_toml(*rules);
  request.set_expires_in_seconds(static_cast<uint32_t>(expires_in));
  request.set_surface("console");
  return request;
}

absl::StatusOr<v1::CloseTerminalRequest> ParseCloseTerminal(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> id = StringField(*object, "terminal_id", kMaxIdBytes, true);
  if (!id.ok()) return id.status();
  v1::CloseTerminalRequest request;
  request.set_terminal_id(*id);
  return request;
}

absl::StatusOr<v1::SetLockRequest> ParseSetLock(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> id = StringField(*object, "terminal_id", kMaxIdBytes, true);
  absl::StatusOr<std::string> mode = StringField(*object, "mode", 16, true);
  for (const auto* field : {&id, &mode}) {
    if (!field->ok()) return field->status();
  }
  if (*mode != "shared" && *mode != "user_only" && *mode != "agent_only") {
    return absl::InvalidArgumentError("mode must be shared, user_only or agent_only");
  }
  v1::SetLockRequest request;
  request.set_terminal_id(*id);
  request.set_mode(*mode);
  request.set_surface("console");
  return request;
}

absl::StatusOr<v1::OpenTerminalRequest> ParseOpenTerminal(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> name = StringField(*object, "name", kMaxNameBytes, false);
  absl::StatusOr<std::string> cwd = StringField(*object, "cwd", kMaxPathBytes, false);
  for (const auto* field : {&name, &cwd}) {
    if (!field->ok()) return field->status();
  }
  v1::OpenTerminalRequest request;
  request.set_name(*name);
  request.set_cwd(*cwd);
  request.set_surface("console");
  return request;
}

absl::StatusOr<v1::RenameTerminalRequest> ParseRenameTerminal(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> id = StringField(*object, "terminal_id", kMaxIdBytes, true);
  absl::StatusOr<std::string> name = StringField(*object, "name", kMaxNameBytes, true);
  for (const auto* field : {&id, &name}) {
    if (!field->ok()) return field->status();
  }
  v1::RenameTerminalRequest request;
  request.set_terminal_id(*id);
  request.set_name(*name);
  request.set_surface("console");
  return request;
}

absl::StatusOr<v1::HandOverTerminalRequest> ParseHandOver(std::string_view body) {
  absl::StatusOr<json> object = ParseObject(body);
  if (!object.ok()) return object.status();
  absl::StatusOr<std::string> id = StringField(*object, "terminal_id", kMaxIdBytes, true);
  absl::StatusOr<std::string> agent = StringField(*object, "agent_id", kMaxIdBytes, false);
  for (const auto* field : {&id, &agent}) {
    if (!field->ok()) return field->status();
  }
  v1::HandOverTerminalRequest request;
  request.set_terminal_id(*id);
  request.set_agent_id(*agent);
  request.set_surface("console");
  return request;
}

absl::StatusOr<AttachTarget> ParseAttachTarget(std::string_view query) {
  AttachTarget target;
  std::optional<std::string> terminal = QueryParam(query, "terminal");
  if (!terminal || terminal->empty() || terminal->size() > kMaxIdBytes) {
    return absl::InvalidArgumentError("terminal is required");
  }
  target.terminal_id = *terminal;
  if (std::optional<std::string> offset = QueryParam(query, "offset")) {
    if (!absl::SimpleAtoi(*offset, &target.offset)) {
      return absl::InvalidArgumentError("offset must be a byte offset");
    }
    target.from_start = false;
  }
  return target;
}

std::pair<std::string_view, std::string_view> SplitTarget(std::string_view target) {
  size_t question = target.find('?');
  if (question == std::string_view::npos) return {target, std::string_view()};
  return {target.substr(0, question), target.substr(question + 1)};
}

std::optional<std::string> QueryParam(std::string_view query, std::string_view name) {
  for (absl::string_view pair : absl::StrSplit(AbslView(query), '&')) {
    size_t eq = pair.find('=');
    std::string key = PercentDecode(StdView(pair.substr(0, eq)));
    if (key != name) continue;
    return eq == absl::string_view::npos ? std::string()
                                         : PercentDecode(StdView(pair.substr(eq + 1)));
  }
  return std::nullopt;
}

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace termbridge::console
