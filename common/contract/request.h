// The canonical request (docs/CONTRACT.md, 'Tools and the canonical request')
// and its normalization from the arguments an MCP client sends, including the
// legacy aliases (run, kill, send, close, create) and the validation rules
// ('Fields'). Alias handling lives only here: everything after Normalize speaks
// canonical terms.
#ifndef TERMBRIDGE_COMMON_CONTRACT_REQUEST_H_
#define TERMBRIDGE_COMMON_CONTRACT_REQUEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace termbridge::contract {

enum class Action { kExecute, kReadOutput, kTerminate, kList };
enum class Mode { kInteractive, kHeadless };
enum class Intent { kOpenOnly, kExecuteCommand };
// Deprecation phases for legacy aliases (docs/CONTRACT.md, 'Flat legacy shape
// and aliases'): A accepts them with metadata, B adds a deterministic warning,
// C rejects them.
enum class DeprecationPhase { kA, kB, kC };

std::string_view ActionName(Action action);  // "execute", ...
std::string_view ModeName(Mode mode);        // "interactive" | "headless"
std::string_view IntentName(Intent intent);  // "open_only" | "execute_command"

struct Correlation {
  std::string request_id;  // generated ("req_<ulid>") when the caller sent none
  std::string trace_id;    // generated ("trace_<ulid>") when absent, then never changed
  std::string client_request_id;
};

struct CanonicalRequest {
  Action action = Action::kList;
  std::optional<Mode> mode;
  std::optional<Intent> intent;
  Correlation correlation;
  // runtime
  std::string workspace_id;
  std::string cwd;
  std::optional<int64_t> timeout_ms;
  std::string adapter_override;  // runtime.adapter_override, validated by the agent's resolver
  // execution
  std::optional<std::string> command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  // execution.terminal_name: a name for a terminal the request opens.
  std::string terminal_name;
  // target
  std::string session_id;
  std::string terminal_id;
  // compat
  bool alias_applied = false;
  std::string legacy_action;  // the alias the caller used, or empty
  std::string caller_surface;
  std::string deprecation_warning;  // set in phase B when an alias was used
  // Read options (read_output): all optional, passed through unchanged.
  std::optional<uint64_t> cursor;
  std::optional<int64_t> max_bytes;
  std::optional<int64_t> wait_ms;
  std::string until;               // read_output: "", "output", "exit", "idle" or "match"
  std::string match;               // read_output until "match": an RE2 regex
  std::optional<int64_t> idle_ms;  // read_output until "idle"
  std::string output_format;       // "", "clean" or "raw"
  // Output over the budget (max_bytes): also return its tail (absent: true),
  // or, false, only a page from the cursor (docs/CONTRACT.md, 'Output budget').
  std::optional<bool> tail;
  // MCP wrapping only: false leaves the output out of the result's text
  // content, which keeps its status line (docs/CONTRACT.md, 'MCP wrapping').
  std::optional<bool> text_output;
};

// Normalizes tool arguments into a canonical request and validates it.
// Accepts both the nested canonical shape ({"action", "invocation": {...},
// "execution": {...}, ...}) and the flat legacy shape ({"action": "run",
// "command": "...", "args": [...], "cwd": ..., "session_id": ...}).
// Failures are PM_TERM errors (see errors.h): unknown action/alias ->
// INVALID_ACTION with a migration hint in details; field violations ->
// INVALID_PAYLOAD naming the field in details.field; bad mode -> INVALID_MODE.
absl::StatusOr<CanonicalRequest> Normalize(const nlohmann::json& arguments,
                                           DeprecationPhase phase = DeprecationPhase::kA);

// A new id with the given prefix, e.g. NewId("req_") -> "req_01J...". ULID-like:
// 26 Crockford base32 chars, time-ordered, random tail.
std::string NewId(std::string_view prefix);

}  // namespace termbridge::contract

#endif  // TERMBRIDGE_COMMON_CONTRACT_REQUEST_H_
