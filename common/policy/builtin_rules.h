// The built-in deny set: destructive command classes (formatting disks,
// deleting system roots, fork bombs, shutdown, raw device writes, privilege
// escalation, remote code into a shell, ...) written as predicates in code,
// because argv patterns cannot express them. Each has a stable id
// ("builtin.rm-root") that an operator can switch off in the policy file.
#ifndef TERMBRIDGE_COMMON_POLICY_BUILTIN_RULES_H_
#define TERMBRIDGE_COMMON_POLICY_BUILTIN_RULES_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"

namespace termbridge::policy::internal {

// What a built-in may know beyond the line: where the shell is and which
// paths belong to the broker.
struct BuiltinContext {
  // ProtectedForms() of Policy::protected_paths(): absolute, normalized,
  // each also with its symlinks resolved. Never null.
  const std::vector<std::string>* protected_paths = nullptr;
  std::string cwd;  // CheckContext::cwd; "" when unknown
};

struct BuiltinSpec {
  std::string_view id;
  std::string_view reason;  // what the class is, for Decision::reason
  // Whether one simple command of `line` belongs to the class; may be null.
  bool (*command)(const SimpleCommand& command, const ParsedLine& line,
                  const BuiltinContext& context);
  // Whether the raw line belongs to the class; may be null.
  bool (*line)(std::string_view raw);
  // Switched off only by its own id in disable_builtin, not by "*"
  // (builtin_deny = false): it protects the broker, not the host.
  bool survives_all_off = false;
};

// Every built-in, in the order they are checked.
const std::vector<BuiltinSpec>& BuiltinSpecs();
const BuiltinSpec* FindBuiltin(std::string_view id);

// Program names the built-ins look for. A command word that is a glob
// (/bin/r?) is checked as each of these names it matches.
const std::vector<std::string>& BuiltinProgramNames();

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_BUILTIN_RULES_H_
