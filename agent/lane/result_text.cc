// Model-readable text for the terminal tools' results (docs/CONTRACT.md, 'MCP wrapping').
#include "agent/lane/result_text.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace termbridge::lane {
namespace {

using nlohmann::json;

std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A number as text; empty when absent or null.
std::string Num(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->dump() : std::string();
}

uint64_t Unsigned(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return 0;
  return it->is_number_unsigned() ? it->get<uint64_t>()
                                  : static_cast<uint64_t>(std::max<int64_t>(0, it->get<int64_t>()));
}

bool Flag(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

// Output text ends its line before a marker or the status line follows.
void EndLine(std::string* out) {
  if (!out->empty() && out->back() != '\n') out->push_back('\n');
}

// One stream: its head, the omitted marker and its tail. Returns the bytes shown.
size_t AppendStream(const json& result, const char* name, const char* omitted_key,
                    const char* tail_key, const std::string& how_to_read, std::string* out) {
  std::string head = Str(result, name);
  size_t shown = head.size();
  *out += head;
  const uint64_t omitted = Unsigned(result, omitted_key);
  auto tail = result.find(tail_key);
  if (omitted == 0 || tail == result.end() || !tail->is_object()) return shown;
  EndLine(out);
  absl::StrAppend(out, "[… ", omitted, " bytes omitted here; ", how_to_read, " …]\n");
  std::string tail_text = Str(*tail, name);
  shown += tail_text.size();
  *out += tail_text;
  return shown;
}

// How the command stands: "exit 0", "running", "waiting for approval …".
std::string StateOf(const json& result, const std::string& action) {
  const json approval = result.value("approval", json::object());
  const std::string approval_state = Str(approval, "state");
  if (approval_state == "pending") {
    std::string id = Str(approval, "approval_id");
    return id.empty() ? "waiting for a person to approve"
                      : absl::StrCat("waiting for a person to approve (approval ", id, ")");
  }
  if (approval_state == "denied") return "denied: it did not run";
  if (approval_state == "timed_out") return "approval timed out: it did not run";
  std::string state;
  if (Flag(result, "running") && Flag(result, "secret_prompt")) {
    state = "running, waiting for a person to type a secret (echo is off: your input is refused)";
  } else if (Flag(result, "running")) {
    state = "running";
  } else if (std::string signal = Num(result, "signal"); !signal.empty()) {
    state = absl::StrCat("signal ", signal);
  } else if (std::string code = Num(result, "exit_code"); !code.empty()) {
    state = absl::StrCat("exit ", code);
  } else if (result.contains("running")) {
    state = "ended";
  }
  if (action == "terminate") return state.empty() ? "terminated" : "terminated, " + state;
  return state;
}

// `where` follows the byte count ("" when the text shows the bytes).
std::string StatusLine(const json& response, size_t shown, absl::string_view where = "") {
  const json& result = response["result"];
  const json identity = response.value("identity", json::object());
  std::vector<std::string> parts;
  if (std::string state = StateOf(result, Str(response, "action")); !state.empty()) {
    parts.push_back(std::move(state));
  }
  if (result.contains("stdout")) parts.push_back(absl::StrCat(shown, " bytes", where));
  if (Str(result, "lane") == "headless") parts.push_back("headless");
  if (std::string id = Str(identity, "session_id"); !id.empty()) {
    parts.push_back("session " + id);
  }
  if (std::string id = Str(identity, "terminal_id"); !id.empty()) {
    parts.push_back("terminal " + id);
  }
  if (std::string cursor = Num(result, "cursor"); !cursor.empty()) {
    parts.push_back(absl::StrCat(
        "cursor ", cursor,
        Flag(result, "more") && Unsigned(result, "omitted_bytes") == 0 ? " (more to read)" : ""));
  }
  if (uint64_t gap = Unsigned(result, "gap_bytes"); gap > 0) {
    parts.push_back(absl::StrCat(gap, " bytes lost before this output (past the buffer)"));
  }
  if (std::string wait = Str(result, "wait_result"); !wait.empty()) {
    parts.push_back("wait: " + wait);
  }
  if (std::string reason = Str(result, "closed_reason"); !reason.empty()) {
    parts.push_back("terminal closed: " + reason);
  }
  if (auto screen = result.find("screen"); screen != result.end() && screen->is_object()) {
    parts.push_back(absl::StrCat("screen ", Num(*screen, "cols"), "x", Num(*screen, "rows"),
                                 ", cursor at row ", Num(*screen, "cursor_row"), " col ",
                                 Num(*screen, "cursor_col"),
                                 Flag(*screen, "alternate_screen") ? ", alternate screen" : ""));
  }
  return absl::StrCat("[", absl::StrJoin(parts, " · "), "]");
}

// The bytes of output a result carries in one stream and its tail.
size_t StreamBytes(const json& result, const char* stream, const char* tail) {
  size_t bytes = Str(result, stream).size();
  if (auto t = result.find(tail); t != result.end() && t->is_object()) {
    bytes += Str(*t, stream).size();
  }
  return bytes;
}

std::string OutputText(const json& response, bool with_output) {
  const json& result = response["result"];
  if (!with_output) {
    return StatusLine(
        response,
        StreamBytes(result, "stdout", "tail") + StreamBytes(result, "stderr", "stderr_tail"),
        " in structuredContent");
  }
  std::string out;
  size_t shown = 0;
  if (result.contains("stdout")) {
    shown += AppendStream(
        result, "stdout", "omitted_bytes", "tail",
        absl::StrCat("read_output cursor=", Num(result, "cursor"), " tail=false reads them"), &out);
  }
  if (!Str(result, "stderr").empty()) {
    EndLine(&out);
    out += "[stderr]\n";
    shown += AppendStream(result, "stderr", "stderr_omitted_bytes", "stderr_tail",
                          "a larger max_bytes returns them", &out);
  }
  EndLine(&out);
  out += StatusLine(response, shown);
  if (std::string warning = Str(result, "warning"); !warning.empty()) {
    absl::StrAppend(&out, "\nwarning: ", warning);
  }
  return out;
}

std::string ItemState(const json& item) {
  if (Flag(item, "running")) return "running";
  if (std::string signal = Num(item, "signal"); !signal.empty()) return "signal " + signal;
  if (std::string code = Num(item, "exit_code"); !code.empty()) return "exit " + code;
  return "ended";
}

std::string ListText(const json& result) {
  std::string out;
  const json& items = result["items"];
  for (const json& item : items) {
    std::string terminal = Str(item, "terminal_id");
    absl::StrAppend(&out, Str(item, "session_id"), "  ", terminal.empty() ? "-" : terminal, "  ",
                    Str(item, "mode"), "  ", ItemState(item), "  ", Str(item, "command"));
    if (std::string cwd = Str(item, "cwd"); !cwd.empty()) absl::StrAppend(&out, "  (in ", cwd, ")");
    out += "\n";
  }
  std::vector<std::string> parts = {absl::StrCat(items.size(), " sessions")};
  if (auto lanes = result.find("lanes"); lanes != result.end() && lanes->is_object()) {
    for (const auto& [name, lane] : lanes->items()) {
      std::string error = Str(lane, "error");
      parts.push_back(absl::StrCat(name, " lane ",
                                   Flag(lane, "available") ? "available" : "unavailable",
                                   error.empty() ? "" : ": " + error));
    }
  }
  absl::StrAppend(&out, "[", absl::StrJoin(parts, " · "), "]");
  return out;
}

std::string AllowlistText(const json& result) {
  std::string out;
  for (const json& rule : result["allow"]) {
    std::string match = Str(rule, "match");
    std::string what = match == "regex" ? Str(rule, "regex") : "";
    if (what.empty() && rule.contains("argv") && rule["argv"].is_array()) {
      std::vector<std::string> words;
      for (const json& word : rule["argv"]) {
        if (word.is_string()) words.push_back(word.get<std::string>());
      }
      what = absl::StrJoin(words, " ");
    }
    absl::StrAppend(&out, "allow ", Str(rule, "id"), ": ", match, " ", what, "\n");
  }
  absl::StrAppend(&out, "[", result["allow"].size(), " allow rules · source ",
                  Str(result, "source"),
                  " · read only: update_allowlist proposes a rule for a person to approve]");
  return out;
}

std::string ProposalText(const json& result) {
  std::vector<std::string> words;
  for (const json& word : result["proposed"]) {
    if (word.is_string()) words.push_back(word.get<std::string>());
  }
  const json approval = result.value("approval", json::object());
  std::vector<std::string> parts = {absl::StrCat("proposed: ", absl::StrJoin(words, " "))};
  if (std::string state = Str(approval, "state"); !state.empty()) {
    std::string id = Str(approval, "approval_id");
    parts.push_back(absl::StrCat("approval ", state, id.empty() ? "" : " (" + id + ")"));
  }
  if (std::string note = Str(result, "note"); !note.empty()) parts.push_back(note);
  return absl::StrCat("[", absl::StrJoin(parts, " · "), "]");
}

std::string ErrorText(const json& response) {
  const json error = response.value("error", json::object());
  const json fallback = response.value("fallback", json::object());
  std::string code = Str(error, "code");
  std::string out = absl::StrCat(code.empty() ? "error" : code, ": ", Str(error, "message"));
  if (auto details = error.find("details");
      details != error.end() && details->is_object() && !details->empty()) {
    absl::StrAppend(&out,
                    "\ndetails: ", details->dump(-1, ' ', false, json::error_handler_t::replace));
  }
  std::vector<std::string> parts;
  if (std::string next = Str(fallback, "next_action"); !next.empty() && next != "none") {
    parts.push_back("next: " + next);
  }
  if (std::string mode = Str(fallback, "recommended_mode"); !mode.empty()) {
    parts.push_back("mode: " + mode);
  }
  if (Flag(error, "retriable")) parts.push_back("retriable");
  std::string message = Str(fallback, "user_message");
  if (!message.empty() || !parts.empty()) {
    absl::StrAppend(&out, "\n", message, message.empty() || parts.empty() ? "" : " ",
                    parts.empty() ? "" : absl::StrCat("[", absl::StrJoin(parts, " · "), "]"));
  }
  return out;
}

}  // namespace

std::string ResultText(const json& response, bool with_output) {
  if (!response.is_object()) return response.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!Flag(response, "success")) return ErrorText(response);
  auto result = response.find("result");
  if (result == response.end() || !result->is_object()) {
    return absl::StrCat("[", Str(response, "action"), " ", Str(response, "status"), "]");
  }
  if (result->contains("items")) return ListText(*result);
  if (result->contains("allow")) return AllowlistText(*result);
  if (result->contains("proposed")) return ProposalText(*result);
  return OutputText(response, with_output);
}

}  // namespace termbridge::lane
