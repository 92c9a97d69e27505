// Which environment variables an agent may set without a person looking:
// the locale and display ones, which change how programs print, not what
// they run or load; and which values of them are sound. Everything else
// (PATH, LD_PRELOAD, GIT_*, PAGER, ...) can make a harmless command run
// other code.
#include <langinfo.h>
#include <locale.h>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"
#include "common/policy/text.h"

namespace termbridge::policy {

using internal::Cat;
using internal::StartsWith;

namespace {

constexpr size_t kMaxEnvValue = 4096;
constexpr std::string_view kZoneinfo = "/usr/share/zoneinfo/";

bool IsLocaleName(std::string_view name) {
  return name == "LANG" || name == "LANGUAGE" || StartsWith(name, "LC_");
}

// Names that move the repository git reads, or its config (which can set
// core.worktree): the read scope judges git by the repository it finds from
// its cwd, so these stay unseen by it whatever an operator allows.
bool MovesGitRepository(std::string_view name) {
  for (std::string_view n : {"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                             "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_INDEX_FILE"}) {
    if (name == n) return true;
  }
  return StartsWith(name, "GIT_CONFIG");
}

// Whether the locale `value` names reads as UTF-8 or ASCII: "", C, POSIX,
// or language[_territory].codeset[@modifier] with the codeset spelled UTF-8
// (utf8, UTF-8, ...), as glibc splits it (a '.' after the '@' is part of
// the modifier: zh_TW@x.utf8 is zh_TW). In Big5, GBK, GB18030 or Shift JIS
// the second byte of a character can be a backslash, a backtick or a pipe,
// so bash would not read a line as the policy's parser did; a name with no
// codeset, like zh_TW, can be one of those. When this host has the locale,
// glibc's own answer decides too (it must say UTF-8 or ASCII).
bool ReadsAsUtf8(std::string_view value) {
  if (value.empty() || value == "C" || value == "POSIX") return true;
  std::string_view name = value.substr(0, value.find('@'));
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return false;
  std::string folded;
  for (char c : name.substr(dot + 1)) {
    if (c != '-' && c != '_')
      folded += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (folded != "utf8") return false;
  const std::string locale_name(value);
  locale_t loaded = newlocale(LC_CTYPE_MASK, locale_name.c_str(), static_cast<locale_t>(0));
  if (loaded == static_cast<locale_t>(0)) return true;  // not here: the shell gets C
  const std::string codeset = nl_langinfo_l(CODESET, loaded);
  freelocale(loaded);
  return codeset == "UTF-8" || codeset == "ANSI_X3.4-1968";
}

bool HasDotDotComponent(std::string_view path) {
  for (std::string_view part : internal::SplitAny(path, "/", false)) {
    if (part == "..") return true;
  }
  return false;
}

}  // namespace

bool EnvNameHarmless(std::string_view name, const std::vector<std::string>& operator_allowed) {
  if (name.empty() || MovesGitRepository(name)) return false;
  if (IsLocaleName(name) || name == "TZ" || name == "NO_COLOR" || name == "COLUMNS" ||
      name == "LINES") {
    return true;
  }
  for (const std::string& allowed : operator_allowed) {
    if (!allowed.empty() && allowed.back() == '*') {
      if (StartsWith(name, std::string_view(allowed).substr(0, allowed.size() - 1))) return true;
    } else if (name == allowed) {
      return true;
    }
  }
  return false;
}

std::optional<std::string> EnvValueProblem(std::string_view name, std::string_view value) {
  if (value.size() > kMaxEnvValue) {
    return Cat(name, " is ", value.size(), " bytes long (at most ", kMaxEnvValue, ")");
  }
  for (size_t i = 0; i < value.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(value[i]);
    if (c == 0) return Cat(name, " holds a NUL byte at offset ", i);
    if (c < 0x20 || c == 0x7f) return Cat(name, " holds a control character at offset ", i);
  }
  // bash expands a `~` after the `=` and after each `:` of an assignment
  // (TZ=~/.ssh/id_rsa reads a key as a zone file); the text judged here is
  // the text before that.
  if (value.find('~') != std::string_view::npos) {
    return Cat(name, " holds a '~', which bash expands to a home directory");
  }
  if (IsLocaleName(name) && value.find('/') != std::string_view::npos) {
    return Cat(name, " names a path (glibc would load locale files from it)");
  }
  if (IsLocaleName(name) && name != "LANGUAGE" && !ReadsAsUtf8(value)) {
    return Cat(name, "=", value,
               " is not a UTF-8 locale: in some multibyte encodings (Big5, GBK, Shift JIS) a "
               "backslash or backtick can be part of a character, and the shell would read "
               "lines otherwise than they were judged; use C, POSIX or a .UTF-8 locale");
  }
  if (name == "TZ") {
    // glibc reads the zone file named by TZ, with or without the ':', from
    // TZDIR unless it is absolute.
    std::string_view file = value.substr(0, 1) == ":" ? value.substr(1) : value;
    if (HasDotDotComponent(file)) return Cat("TZ climbs with \"..\"");
    if (StartsWith(file, "/") && !StartsWith(file, kZoneinfo)) {
      return Cat("TZ names a file outside ", kZoneinfo);
    }
  }
  return std::nullopt;
}

}  // namespace termbridge::policy
