// The part of the shell language that bash, dash, zsh, ksh and fish read
// alike, whatever their options. The policy's parser reads code as bash;
// code another shell runs (a terminal whose shell is zsh, `sh -c CODE` where
// sh is dash, `watch CMD`) is judged by that parse only inside this part.
#ifndef TERMBRIDGE_COMMON_POLICY_PORTABLE_LINE_H_
#define TERMBRIDGE_COMMON_POLICY_PORTABLE_LINE_H_

#include <optional>
#include <string>
#include <string_view>

namespace termbridge::policy {

// Why a shell other than bash (zsh, dash, fish...) may read `line` otherwise
// than the policy's parser, which reads it as bash: nullopt when the line is
// in the part of the language they all read alike, whatever their options.
// That part: words of letters, digits and _ @ % + = : , . / - ('=' and '%'
// not first; '~' only first, alone or before '/'), '...' (without '\'
// unless `posix_quotes`: zsh and sh take every byte in it literally), "..."
// without $ ` \ !, separated by blanks, ;, |, && and ||, and the
// redirections >, >>, N>, N>> and N>&M. Anything else (globs, $, `, \,
// parentheses, braces, <, #, !, ^, a lone &, non-ASCII or control bytes)
// is named in the answer.
std::optional<std::string> PortableLineProblem(std::string_view line, bool posix_quotes);

}  // namespace termbridge::policy

#endif  // TERMBRIDGE_COMMON_POLICY_PORTABLE_LINE_H_
