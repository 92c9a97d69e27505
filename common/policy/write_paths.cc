// Which files an allow rule may write: `write_paths` globs against the
// redirection and tee targets of a command, compared as text and then as
// the files they land on (symlinks and the line's cd followed). A target the
// shell only knows at run time ($VAR, `cmd`, an unquoted glob) or one that
// climbs with ".." is never covered, so such a write always asks.
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy_internal.h"
#include "common/policy/protected_paths.h"
#include "common/policy/read_scope.h"
#include "common/policy/text.h"
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
  // "DIR/": whatever lands below a directory (an archive's members, a
  // recursive copy), which no glob can pin.
  return !target.empty() && target.back() != '/' &&
         target.find_first_of("$`*?[") == std::string_view::npos && !Normalize(target).empty();
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
    // A relative glob covers paths under the cwd only, matched as "./path":
    // `**` covers every file below the cwd, and no absolute path.
    if (glob.empty() || glob[0] != '/') re.append("\\./");
    re.append(GlobToRegex(glob));
  }
  re.append(")$");
  return re;
}

bool WritePathCovered(const RE2& write_paths, std::string_view target) {
  if (!IsStaticWriteTarget(target)) return false;
  const std::string path = Normalize(target);
  return RE2::FullMatch(path[0] == '/' ? path : Cat("./", path), write_paths);
}

bool WriteCovered(const RE2& write_paths, const std::string& target, const ParsedLine& line,
                  const std::string& cwd, std::string* why) {
  why->clear();
  if (!IsStaticWriteTarget(target)) return false;
  const bool absolute = target[0] == '/';
  const bool cwd_known = !cwd.empty() && cwd[0] == '/';
  if (!absolute && !cwd_known) return WritePathCovered(write_paths, target);
  std::vector<std::string> under;  // cwd as written and resolved, with a trailing '/'
  if (cwd_known) {
    Parts visited;
    const std::string lexical = JoinAbs(Lexical(cwd));
    for (const std::string& dir : {lexical, Physical(lexical, &visited)}) {
      under.push_back(dir == "/" ? dir : dir + "/");
    }
  }
  auto covered = [&](const std::string& abs) {
    if (RE2::FullMatch(abs, write_paths)) return true;
    for (const std::string& dir : under) {
      if (abs.size() > dir.size() && StartsWith(abs, dir) &&
          RE2::FullMatch(Cat("./", abs.substr(dir.size())), write_paths)) {
        return true;
      }
    }
    return false;
  };
  Parts bases = {"/"};
  if (!absolute) {
    if (std::string moved = UnknownDirectoryChange(line); !moved.empty()) {
      *why = Cat("the line changes directory with ", moved, ", which cannot be followed");
      return false;
    }
    bases = Bases(line, cwd);
    if (bases.size() >= kMaxBases) {
      *why = "the line changes directory too often to follow";
      return false;
    }
  }
  for (const std::string& base : bases) {
    const std::string lexical = JoinAbs(Lexical(absolute ? target : Cat(base, "/", target)));
    if (!covered(lexical)) {
      if (!absolute && base != bases.front()) *why = Cat("it is ", lexical, " after a cd");
      return false;
    }
    Parts visited;
    std::string magic;
    const std::string physical = Physical(lexical, &visited, &magic);
    if (!magic.empty()) {
      *why = Cat("it goes through ", magic);
      return false;
    }
    if (physical != lexical && !covered(physical)) {
      *why = Cat("a symlink leads it to ", physical);
      return false;
    }
  }
  return true;
}

}  // namespace termbridge::policy::internal
