// Accepts kebab-case flag spellings on top of absl flags.
#include "common/cli/flags.h"

#include "absl/flags/parse.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace termbridge::cli {

std::vector<std::string> NormalizeFlagSpelling(int argc, char** argv) {
  std::vector<std::string> out;
  bool flags_done = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && !flags_done && arg == "--") flags_done = true;
    if (i > 0 && !flags_done && arg.size() > 2 && arg[0] == '-') {
      size_t name_begin = arg[1] == '-' ? 2 : 1;
      size_t name_end = arg.find('=');
      if (name_end == std::string::npos) name_end = arg.size();
      for (size_t k = name_begin; k < name_end; ++k) {
        if (arg[k] == '-') arg[k] = '_';
      }
    }
    out.push_back(std::move(arg));
  }
  return out;
}

std::vector<std::string> ParseFlags(int argc, char** argv) {
  // --help lists the flags of every termbridge source file (absl's default
  // only lists those of a file named like the binary, and found none).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return !absl::StrContains(file, "absl/");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  std::vector<std::string> normalized = NormalizeFlagSpelling(argc, argv);
  std::vector<char*> args;
  for (auto& a : normalized) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(normalized.size()), args.data());
  return std::vector<std::string>(positional.begin(), positional.end());
}

}  // namespace termbridge::cli
