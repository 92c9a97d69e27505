// Command-line parsing shared by the termbridge binaries. Flags are defined
// with absl (snake_case names) and accepted in the documented kebab-case
// spelling too: --ready-file and --ready_file mean the same flag.
#ifndef TERMBRIDGE_COMMON_CLI_FLAGS_H_
#define TERMBRIDGE_COMMON_CLI_FLAGS_H_

#include <string>
#include <vector>

namespace termbridge::cli {

// Rewrites "--some-flag[=value]" to "--some_flag[=value]"; leaves values,
// positional arguments and everything after "--" untouched.
std::vector<std::string> NormalizeFlagSpelling(int argc, char** argv);

// NormalizeFlagSpelling, then absl::ParseCommandLine. Returns the positional
// arguments (argv[0] first).
std::vector<std::string> ParseFlags(int argc, char** argv);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_COMMON_CLI_FLAGS_H_
