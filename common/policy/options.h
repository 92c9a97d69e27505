// Finding options in an argv the way GNU getopt_long finds them: short
// options cluster (-us = -u -s) and take attached values (-s2020), long
// options may be abbreviated to any unambiguous prefix (--se = --set) and
// take =values, options may follow operands (GNU permutes), and `--` ends
// them. Internal to the policy library; HasOption in policy.h is the public
// over-approximating form.
#ifndef TERMBRIDGE_COMMON_POLICY_OPTIONS_H_
#define TERMBRIDGE_COMMON_POLICY_OPTIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"

namespace termbridge::policy::internal {

// Whether `option` ("-x" or "--name") is well formed for a rule's options.
bool IsOptionName(std::string_view option);

// The index of the `--` that ends the options of `argv` (argv[0] is the
// program), or argv.size(). A `--` right after a word that may take the next
// word as its value (`-o --`, `--output --`) is that value, not the end.
size_t OptionsEnd(const std::vector<std::string>& argv);

// For exemptions (options that make a dangerous program harmless, like
// `wipefs --no-act`): true only when the program surely sees `option`. The
// word equals the option (a long one may carry `=value`), or is a short
// cluster that starts with its letter, before the first `--`. Abbreviations
// do not count: a prefix can name another option of the program.
bool HasOptionSurely(const SimpleCommand& command, std::string_view option);
bool HasOptionSurely(const std::vector<std::string>& argv, std::string_view option);

// HasOption (policy.h) over a bare argv (argv[0] is the program), for the
// parser's own tables, which have words rather than a SimpleCommand.
bool HasOption(const std::vector<std::string>& argv, std::string_view option);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_OPTIONS_H_
