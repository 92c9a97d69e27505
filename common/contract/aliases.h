// Internal to common/contract: the legacy alias table (docs/CONTRACT.md, 'Flat
// legacy shape and aliases') and the name tables of the canonical enums, shared
// by request.cc and response.cc. Nothing outside this folder includes it.
#ifndef TERMBRIDGE_COMMON_CONTRACT_ALIASES_H_
#define TERMBRIDGE_COMMON_CONTRACT_ALIASES_H_

#include <optional>
#include <string>
#include <string_view>

#include "common/contract/request.h"
#include "nlohmann/json.hpp"

namespace termbridge::contract::internal {

// One row of the alias table: the canonical action a legacy action maps to and
// the transform that mapping imposes on the request.
struct AliasRule {
  std::string_view legacy_action;  // "run"
  Action action;                   // Action::kExecute
  std::optional<Mode> mode;        // imposed mode, if any
  std::optional<Intent> intent;    // imposed intent, if any
  bool requires_terminal_id;       // send and close act on an existing terminal
  bool is_alias;                   // false only for "list", which maps to itself
  std::string_view hint;           // the canonical migration, in words
};

// The row for `legacy_action` ("run", "kill", "send", "close", "create" or
// "list"), or null when it is not a known legacy action.
const AliasRule* FindAlias(std::string_view legacy_action);

// The canonical request fragment a caller should send instead, e.g.
// {"action": "execute", "invocation": {"intent": "execute_command"}}.
nlohmann::json MigrationExample(const AliasRule& rule);

// {"run": "execute", ...}: every alias and its canonical action.
nlohmann::json AliasMap();

// ["execute", "read_output", "terminate", "list"]
nlohmann::json CanonicalActionNames();

std::optional<Action> ParseAction(std::string_view name);
std::optional<Mode> ParseMode(std::string_view name);
std::optional<Intent> ParseIntent(std::string_view name);

}  // namespace termbridge::contract::internal

#endif  // TERMBRIDGE_COMMON_CONTRACT_ALIASES_H_
