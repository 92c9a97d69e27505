// Fuzzes the canonical-contract normalizer (common/contract: Normalize and
// the alias table): the input is the JSON arguments of a
// memory_terminal_interactive call, normalized in each deprecation phase.
// Besides crashes, it checks the contract's promises: a refusal is a
// PM_TERM_INVALID_* error carried as a Status payload, and its error
// response (and an accepted request's success response) serializes; phase C
// never applies an alias and phase B warns whenever it does.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/contract/errors.h"
#include "common/contract/request.h"
#include "common/contract/response.h"
#include "nlohmann/json.hpp"

namespace {

using nlohmann::json;
namespace contract = termbridge::contract;

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "contract: %s\ninput: %.*s\n", what, static_cast<int>(input.size()),
               input.data());
  std::abort();
}

// Serializes like the agent does (invalid UTF-8 replaced, never thrown on).
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Deeper nesting than the agent lets through (agent/mcp/json_depth.h) is
// refused before any tool sees it; nlohmann's recursive destructor would
// otherwise be what is tested.
bool TooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '[' || c == '{') && ++depth > 128) {
      return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (TooDeep(input)) return 0;
  json arguments = json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (arguments.is_discarded()) return 0;

  for (contract::DeprecationPhase phase :
       {contract::DeprecationPhase::kA, contract::DeprecationPhase::kB,
        contract::DeprecationPhase::kC}) {
    absl::StatusOr<contract::CanonicalRequest> request = contract::Normalize(arguments, phase);
    if (!request.ok()) {
      if (!request.status().GetPayload(absl::string_view(contract::kPayloadTypeUrl.data(),
                                                         contract::kPayloadTypeUrl.size()))) {
        Fail("a refusal without a PM_TERM payload", input);
      }
      contract::PmTermError error = contract::FromStatus(request.status());
      if (error.code != contract::ErrorCode::kInvalidAction &&
          error.code != contract::ErrorCode::kInvalidPayload &&
          error.code != contract::ErrorCode::kInvalidMode) {
        Fail("a refusal that is not INVALID_ACTION, INVALID_PAYLOAD or INVALID_MODE", input);
      }
      json response = contract::ErrorResponseForArguments(arguments, error);
      if (response.value("success", true) != false || !response.contains("error")) {
        Fail("an error response that does not say it failed", input);
      }
      Dump(response);
      continue;
    }
    if (phase == contract::DeprecationPhase::kC && request->alias_applied) {
      Fail("phase C applied a legacy alias", input);
    }
    if (phase == contract::DeprecationPhase::kB && request->alias_applied &&
        request->deprecation_warning.empty()) {
      Fail("phase B applied a legacy alias without a warning", input);
    }
    if (request->correlation.request_id.empty() || request->correlation.trace_id.empty()) {
      Fail("an accepted request without correlation ids", input);
    }
    Dump(contract::SuccessResponse(*request, "completed", "s_1", "t_1", json::object()));
  }
  return 0;
}
