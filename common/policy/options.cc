// Option spotting for rules and built-in predicates. HasOption errs towards
// "present": it does not know which letters of a cluster take values, so
// `-fs` counts as carrying -s, and any prefix of a long option counts, so an
// ask or deny rule fires at least whenever the program would see the option.
// HasOptionSurely errs the other way, for exemptions.
#include "common/policy/options.h"

#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"
#include "common/policy/text.h"

namespace termbridge::policy {

using internal::StartsWith;

namespace internal {
namespace {

bool IsShortCluster(std::string_view a) { return a.size() > 1 && a[0] == '-' && a[1] != '-'; }

// `-o` or `--output` may take the following word as its value.
bool MayTakeNextWord(std::string_view a) {
  if (IsShortCluster(a)) return true;
  return a.size() > 2 && StartsWith(a, "--") && a.find('=') == std::string_view::npos;
}

}  // namespace

bool IsOptionName(std::string_view option) {
  if (option.size() == 2) return option[0] == '-' && option[1] != '-' && option[1] != '=';
  return option.size() > 2 && StartsWith(option, "--") &&
         option.find_first_of("= \t") == std::string_view::npos;
}

size_t OptionsEnd(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "--" && (i == 1 || !MayTakeNextWord(argv[i - 1]))) return i;
  }
  return argv.size();
}

bool HasOptionSurely(const std::vector<std::string>& argv, std::string_view option) {
  if (!IsOptionName(option)) return false;
  bool is_long = option[1] == '-';
  for (size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == option) return true;
    if (is_long && StartsWith(a, option) && a[option.size()] == '=') return true;
    if (!is_long && IsShortCluster(a) && a[1] == option[1]) return true;
  }
  return false;
}

bool HasOptionSurely(const SimpleCommand& c, std::string_view option) {
  return HasOptionSurely(c.argv, option);
}

bool HasOption(const std::vector<std::string>& argv, std::string_view option) {
  if (!IsOptionName(option)) return false;
  bool is_long = option[1] == '-';
  std::string_view name = option.substr(is_long ? 2 : 1);
  size_t end = OptionsEnd(argv);
  for (size_t i = 1; i < end; ++i) {
    std::string_view a = argv[i];
    if (a.size() < 2 || a[0] != '-') continue;
    if (a[1] != '-') {
      if (!is_long && a.find(name[0], 1) != std::string_view::npos) return true;
      continue;
    }
    if (!is_long) continue;
    std::string_view given = a.substr(2);
    given = given.substr(0, given.find('='));
    if (!given.empty() && StartsWith(name, given)) return true;
  }
  return false;
}

}  // namespace internal

bool HasOption(const SimpleCommand& c, std::string_view option) {
  return internal::HasOption(c.argv, option);
}

}  // namespace termbridge::policy
