// Parsing the shell's own listings (alias -p, declare -F, trap -p, enable -a,
// hash -l) and comparing two of them; PATH lookups as bash makes them.
#include "broker/core/shell_state.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/policy/policy.h"

namespace termbridge::core {
namespace {

// Reserved words never looked up in PATH.
bool IsKeyword(const std::string& word) {
  static const std::set<std::string> kKeywords = {
      "if", "then", "else", "elif",     "fi",   "case", "esac", "for", "select", "while", "until",
      "do", "done", "in",   "function", "time", "{",    "}",    "!",   "[[",     "]]",    "coproc"};
  return kKeywords.count(word) > 0;
}

// The file bash runs for `name` under `path` (relative entries from `cwd`,
// an empty one is the cwd), resolved; "" when none is found.
std::string Lookup(const std::string& name, const std::string& path, const std::string& cwd) {
  for (absl::string_view entry : absl::StrSplit(path, ':')) {
    std::string dir(entry.empty() ? "." : entry);
    if (dir[0] != '/') dir = absl::StrCat(cwd, "/", dir);
    const std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        access(candidate.c_str(), X_OK) != 0) {
      continue;
    }
    char real[PATH_MAX];
    return realpath(candidate.c_str(), real) != nullptr ? std::string(real) : candidate;
  }
  return "";
}

std::string Resolved(const std::string& file) {
  char real[PATH_MAX];
  return realpath(file.c_str(), real) != nullptr ? std::string(real) : file;
}

// "+a, -b": the words of `now` missing from `before` and the reverse.
std::string OptionChanges(const std::string& before, const std::string& now) {
  auto words = [](const std::string& s) {
    std::set<std::string> out;
    for (absl::string_view w : absl::StrSplit(s, absl::ByAnyChar(": "), absl::SkipEmpty())) {
      out.emplace(w);
    }
    return out;
  };
  const std::set<std::string> b = words(before), n = words(now);
  std::vector<std::string> changes;
  for (const std::string& w : n) {
    if (b.count(w) == 0) changes.push_back("+" + w);
  }
  for (const std::string& w : b) {
    if (n.count(w) == 0) changes.push_back("-" + w);
  }
  return absl::StrJoin(changes, ", ");
}

template <typename Set>
std::string FirstNew(const Set& before, const Set& now) {
  for (const auto& item : now) {
    if (before.count(item) == 0) return item;
  }
  for (const auto& item : before) {
    if (now.count(item) == 0) return item;
  }
  return "";
}

// An `export -p` line of a variable that changes on its own (PWD, OLDPWD)
// or that no program runs code from (policy::EnvNameHarmless).
bool VolatileExport(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "declare -x ")) return false;
  const std::string name(line.substr(0, line.find('=')));
  // PATH is judged by what it finds (ShellStateProblem).
  return name == "PWD" || name == "OLDPWD" || name == "PATH" || policy::EnvNameHarmless(name, {});
}

}  // namespace

absl::StatusOr<ShellState> ParseShellState(absl::string_view text) {
  ShellState state;
  bool have_path = false, have_options = false;
  std::string* function = nullptr;  // the body being read (`declare -f`)
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    // `declare -f` prints "name () ", then "{ ", the body indented, "}".
    if (absl::EndsWith(line, " () ") && line.find(' ') == line.size() - 4) {
      function = &state.functions[std::string(line.substr(0, line.size() - 4))];
      continue;
    }
    if (function != nullptr && (line == "{ " || line == "}" || absl::StartsWith(line, "    "))) {
      absl::StrAppend(function, line, "\n");
      continue;
    }
    function = nullptr;
    // The first path and opts lines are the shell's; a later one would be
    // an alias value's or a trap's text, which adds only more to compare.
    if (!have_path && absl::ConsumePrefix(&line, "path ")) {
      state.path = std::string(line);
      have_path = true;
    } else if (!have_options && absl::ConsumePrefix(&line, "opts ")) {
      state.options = std::string(line);
      have_options = true;
    } else if (absl::StartsWith(line, "alias ")) {
      absl::string_view rest = line.substr(6);
      state.aliases[std::string(rest.substr(0, rest.find('=')))] = std::string(line);
    } else if (absl::StartsWith(line, "trap ")) {
      state.traps.emplace(line);
    } else if (absl::StartsWith(line, "enable ")) {
      state.builtins.emplace(line);
    } else if (absl::ConsumePrefix(&line, "builtin hash -p ")) {
      const size_t space = line.rfind(' ');
      if (space != absl::string_view::npos) {
        state.hashed[std::string(line.substr(space + 1))] = std::string(line.substr(0, space));
      }
    } else if (!VolatileExport(line)) {
      state.rest.emplace_back(line);
    }
  }
  if (!have_path || !have_options) {
    return absl::InvalidArgumentError("the shell's state is incomplete");
  }
  return state;
}

std::optional<std::string> ShellStateProblem(const ShellState& initial, const ShellState& now,
                                             const std::vector<std::string>& programs,
                                             const std::string& cwd) {
  if (now.options != initial.options) {
    return absl::StrCat("its options were changed (", OptionChanges(initial.options, now.options),
                        "), and the line was judged as a fresh shell runs it");
  }
  if (now.traps != initial.traps) {
    return absl::StrCat("a trap was set or cleared (", FirstNew(initial.traps, now.traps),
                        "), which can run code with every command");
  }
  if (now.builtins != initial.builtins) {
    return absl::StrCat("its builtins were changed (", FirstNew(initial.builtins, now.builtins),
                        ")");
  }
  if (now.aliases != initial.aliases) {
    for (const std::string& program : programs) {
      auto alias = now.aliases.find(program);
      if (alias != now.aliases.end()) {
        return absl::StrCat("`", program, "` is an alias in it (", alias->second, ")");
      }
    }
    std::set<std::string> before, after;
    for (const auto& [name, line] : initial.aliases) before.insert(line);
    for (const auto& [name, line] : now.aliases) after.insert(line);
    return absl::StrCat("an alias was set or changed (", FirstNew(before, after), ")");
  }
  // A function matters when the line runs it, when it takes a builtin's
  // name (the line's or the shell's own hooks'), when it is one of the
  // hooks, or command_not_found_handle; a venv's `deactivate` does not.
  for (const auto& [name, body] : initial.functions) {
    if (now.functions.count(name) == 0)
      return absl::StrCat("its function `", name, "` was removed");
  }
  for (const auto& [name, body] : now.functions) {
    auto before = initial.functions.find(name);
    if (before != initial.functions.end() && before->second == body) continue;
    if (std::find(programs.begin(), programs.end(), name) != programs.end()) {
      return absl::StrCat("`", name, "` is a shell function in it");
    }
    if (absl::StartsWith(name, "__tb_") || name == "command_not_found_handle" ||
        now.builtins.count("enable " + name) > 0 || now.builtins.count("enable -n " + name) > 0 ||
        IsKeyword(name)) {
      return absl::StrCat("a function `", name, "` was defined, which the shell runs instead of ",
                          absl::StartsWith(name, "__tb_") ? "its own hook" : "what it names");
    }
  }
  if (now.rest != initial.rest) {
    const std::set<std::string> before(initial.rest.begin(), initial.rest.end());
    const std::set<std::string> after(now.rest.begin(), now.rest.end());
    std::string changed = FirstNew(before, after);
    if (changed.size() > 120) changed = absl::StrCat(changed.substr(0, 120), "...");
    return absl::StrCat("it was changed since its first prompt (",
                        changed.empty() ? "order" : changed, ")");
  }
  const bool path_changed = now.path != initial.path;
  for (const std::string& program : programs) {
    if (program.empty()) continue;
    if (program.find('/') != std::string::npos || IsKeyword(program) ||
        now.builtins.count("enable " + program) > 0) {
      continue;  // not looked up in PATH
    }
    const std::string found = Lookup(program, now.path, cwd);
    auto hashed = now.hashed.find(program);
    if (hashed != now.hashed.end() && Resolved(hashed->second) != found) {
      return absl::StrCat("`", program, "` is hashed to ", hashed->second, " in it");
    }
    if (path_changed) {
      const std::string before = Lookup(program, initial.path, cwd);
      if (found != before) {
        return absl::StrCat("its PATH was changed, and `", program, "` runs ",
                            found.empty() ? "nothing found" : found, " there, not ",
                            before.empty() ? "nothing" : before);
      }
    }
  }
  return std::nullopt;
}

std::string ProgramOf(absl::string_view command_text) {
  for (absl::string_view word : absl::StrSplit(command_text, ' ', absl::SkipEmpty())) {
    const size_t eq = word.find('=');
    if (eq != absl::string_view::npos && eq > 0 &&
        word.substr(0, eq).find_first_not_of(
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
            absl::string_view::npos) {
      continue;  // an assignment before the program
    }
    std::string program;
    for (char c : word) {
      if (c != '\'' && c != '"' && c != '\\') program.push_back(c);
    }
    return program;
  }
  return "";
}

}  // namespace termbridge::core
