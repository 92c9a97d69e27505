// Which files an allow rule may write: `write_paths` globs against the
// redirection and tee targets of a command, compared as text. A target the
// shell only knows at run time ($VAR, `cmd`, an unquoted glob) or one that
// climbs with ".." is never covered, so such a write always asks.
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy_internal.h"
#include "re2/re2.h"

namespace termbridge::policy::internal {
namespace {

// "./a//b/./c" -> "a/b/c". Empty when the path climbs ("..") or is empty.
std::string Normalize(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::string out = absolute ? "/" : "";
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view part = path.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return "";
    if (!out.empty() && out.back() != '/') out.push_back('/');
    out.append(part);
  }
  return out == "/" && !absolute ? "" : out;
}

// A glob as RE2 syntax: `**` crosses directories, `*` and `?` stay within
// one name, a backslash makes the next character literal.
std::string GlobToRegex(std::string_view glob) {
  std::string re;
  for (size_t i = 0; i < glob.size(); ++i) {
    char c = glob[i];
    if (c == '*' && i + 1 < glob.size() && glob[i + 1] == '*') {
      re.append(".*");
      ++i;
    } else if (c == '*') {
      re.append("[^/]*");
    } else if (c == '?') {
      re.append("[^/]");
    } else {
      if (c == '\\' && i + 1 < glob.size()) c = glob[++i];
      re.append(RE2::QuoteMeta(std::string_view(&c, 1)));
    }
  }
  return re;
}

}  // namespace

bool IsStaticWriteTarget(std::string_view target) {
  return !target.empty() && target.find_first_of("$`*?[") == std::string_view::npos &&
         !Normalize(target).empty();
}

std::string EscapeGlob(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string WritePathsRegex(const std::vector<std::string>& globs) {
  std::string re = "^(?:";
  for (size_t i = 0; i < globs.size(); ++i) {
    // The glob is normalized like a path: "./build/**" covers "build/x".
    std::string_view glob = globs[i];
    while (glob.substr(0, 2) == "./") glob.remove_prefix(2);
    if (i > 0) re.push_back('|');
    re.append(GlobToRegex(glob));
  }
  re.append(")$");
  return re;
}

bool WritePathCovered(const RE2& write_paths, std::string_view target) {
  return IsStaticWriteTarget(target) && RE2::FullMatch(Normalize(target), write_paths);
}

}  // namespace termbridge::policy::internal
