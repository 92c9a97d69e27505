// What a sed script does beyond editing its input: GNU sed runs commands
// (the e command, the e flag of s), writes files (w, W, the w flag of s) and
// reads files (r, R) its script names, which no rule about `sed` sees. A
// rule allowing `sed -n` allowed `sed -n '1e touch x' f`.
#ifndef TERMBRIDGE_COMMON_POLICY_SED_SCRIPT_H_
#define TERMBRIDGE_COMMON_POLICY_SED_SCRIPT_H_

#include <optional>
#include <string>
#include <string_view>

namespace termbridge::policy {

// Why `script` is not a plain edit, as a phrase ("runs a command (e)");
// nullopt when it only reads its input and prints. It is read as GNU sed
// reads it: addresses (numbers, $, /re/, \cREc, first~step, ranges, !),
// commands separated by ; or newlines, { } blocks, labels, a/i/c text to the
// end of the line, s and y with any delimiter and backslash escapes, s
// flags. What this reading cannot follow (an unknown command, an s that does
// not end) is a problem too: sed could read it otherwise.
std::optional<std::string> SedScriptProblem(std::string_view script);

}  // namespace termbridge::policy

#endif  // TERMBRIDGE_COMMON_POLICY_SED_SCRIPT_H_
