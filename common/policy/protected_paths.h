// The built-ins that keep an agent's commands away from the broker's own
// files (its state dir, policy file, audit log, socket, credentials) and
// from other processes' /proc entries. A command is checked by every path
// it could name: argv words, option values (--file=P, -fP, if=P), `<` and
// `>` targets and VAR=P values, with ~ and $HOME expanded, relative words
// resolved against the shell's cwd and the line's own cd targets, symlinks
// resolved as far as they exist, and globs matched component by component.
// mv, cp, tar, rsync and the like are also denied an ancestor of one, which
// they would carry along.
#ifndef TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_
#define TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_

#include <string>
#include <vector>

#include "common/policy/builtin_rules.h"
#include "common/policy/policy.h"

namespace termbridge::policy::internal {

// The forms a protected path is compared in: ~ and $HOME expanded, made
// absolute against the process cwd, normalized (., .., //), and the same
// with symlinks resolved. Empty entries are dropped.
std::vector<std::string> ProtectedForms(const std::vector<std::string>& paths);

// builtin.broker-state: the command names a path at or under a protected one.
bool TouchesProtectedPath(const SimpleCommand& command, const ParsedLine& line,
                          const BuiltinContext& context);

// builtin.process-files: the command names /proc/<pid>/{cwd,root,fd,fdinfo,
// environ,mem,map_files,maps,pagemap} (or the same under task/<tid>/).
bool TouchesProcessFiles(const SimpleCommand& command, const ParsedLine& line,
                         const BuiltinContext& context);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_PROTECTED_PATHS_H_
