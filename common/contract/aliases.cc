// The legacy alias table and the canonical name tables. One row per legacy
// action, as docs/CONTRACT.md lists them in 'Flat legacy shape and aliases'.
#include "common/contract/aliases.h"

#include <array>
#include <string>

namespace termbridge::contract {

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kExecute:
      return "execute";
    case Action::kReadOutput:
      return "read_output";
    case Action::kTerminate:
      return "terminate";
    case Action::kList:
      return "list";
  }
  return "list";
}

std::string_view ModeName(Mode mode) {
  return mode == Mode::kHeadless ? "headless" : "interactive";
}

std::string_view IntentName(Intent intent) {
  return intent == Intent::kOpenOnly ? "open_only" : "execute_command";
}

namespace internal {
namespace {

// run:    execute + intent execute_command; command fields move under execution.*
// kill:   terminate; session_id (or terminal_id) passes through as the target
// send:   execute + interactive + execute_command into an existing target.terminal_id
// close:  terminate + target.terminal_id (closes the terminal)
// create: execute + interactive + open_only; no command
// list:   list, unchanged (not an alias; accepted as compat.legacy_action)
constexpr std::array<AliasRule, 6> kAliases = {{
    {"run", Action::kExecute, std::nullopt, Intent::kExecuteCommand, false, true,
     "use action \"execute\" with invocation.intent \"execute_command\"; command fields move "
     "under execution.*"},
    {"kill", Action::kTerminate, std::nullopt, std::nullopt, false, true,
     "use action \"terminate\" with target.session_id (or target.terminal_id)"},
    {"send", Action::kExecute, Mode::kInteractive, Intent::kExecuteCommand, true, true,
     "use action \"execute\" with invocation.mode \"interactive\", invocation.intent "
     "\"execute_command\" and target.terminal_id"},
    {"close", Action::kTerminate, std::nullopt, std::nullopt, true, true,
     "use action \"terminate\" with target.terminal_id"},
    {"create", Action::kExecute, Mode::kInteractive, Intent::kOpenOnly, false, true,
     "use action \"execute\" with invocation.mode \"interactive\" and invocation.intent "
     "\"open_only\", without execution.command"},
    {"list", Action::kList, std::nullopt, std::nullopt, false, false, "use action \"list\""},
}};

}  // namespace

const AliasRule* FindAlias(std::string_view legacy_action) {
  for (const AliasRule& rule : kAliases) {
    if (rule.legacy_action == legacy_action) return &rule;
  }
  return nullptr;
}

nlohmann::json MigrationExample(const AliasRule& rule) {
  nlohmann::json example = {{"action", std::string(ActionName(rule.action))}};
  if (rule.mode || rule.intent) {
    nlohmann::json invocation = nlohmann::json::object();
    if (rule.mode) invocation["mode"] = std::string(ModeName(*rule.mode));
    if (rule.intent) invocation["intent"] = std::string(IntentName(*rule.intent));
    example["invocation"] = std::move(invocation);
  }
  if (rule.intent == Intent::kExecuteCommand) {
    example["execution"] = {{"command", "<command>"}};
  }
  if (rule.requires_terminal_id) {
    example["target"] = {{"terminal_id", "<terminal_id>"}};
  } else if (rule.action == Action::kTerminate) {
    example["target"] = {{"session_id", "<session_id>"}};
  }
  return example;
}

nlohmann::json AliasMap() {
  nlohmann::json map = nlohmann::json::object();
  for (const AliasRule& rule : kAliases) {
    if (rule.is_alias) map[std::string(rule.legacy_action)] = std::string(ActionName(rule.action));
  }
  return map;
}

nlohmann::json CanonicalActionNames() { return {"execute", "read_output", "terminate", "list"}; }

std::optional<Action> ParseAction(std::string_view name) {
  for (Action action : {Action::kExecute, Action::kReadOutput, Action::kTerminate, Action::kList}) {
    if (ActionName(action) == name) return action;
  }
  return std::nullopt;
}

std::optional<Mode> ParseMode(std::string_view name) {
  if (name == "interactive") return Mode::kInteractive;
  if (name == "headless") return Mode::kHeadless;
  return std::nullopt;
}

std::optional<Intent> ParseIntent(std::string_view name) {
  if (name == "open_only") return Intent::kOpenOnly;
  if (name == "execute_command") return Intent::kExecuteCommand;
  return std::nullopt;
}

}  // namespace internal
}  // namespace termbridge::contract
