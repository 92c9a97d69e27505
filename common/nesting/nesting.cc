// JsonNestsDeeperThan and TomlNestsDeeperThan: one pass over the text each,
// tracking strings, escapes and (TOML) comments, keys and containers.
#include "common/nesting/nesting.h"

#include <vector>

namespace termbridge::nesting {
namespace {

bool IsBareKeyChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

void SkipBlanks(std::string_view text, size_t* i) {
  while (*i < text.size() && (text[*i] == ' ' || text[*i] == '\t')) ++*i;
}

// Skips the TOML string opening at text[*i] (basic, literal, or either's
// multi-line form). An unterminated one-line string ends at the newline.
void SkipTomlString(std::string_view text, size_t* i) {
  const char quote = text[*i];
  const bool basic = quote == '"';
  const std::string_view triple = basic ? std::string_view("\"\"\"") : std::string_view("'''");
  if (text.substr(*i, 3) == triple) {
    *i += 3;
    while (*i < text.size()) {
      if (basic && text[*i] == '\\') {
        *i += 2;
      } else if (text.substr(*i, 3) == triple) {
        *i += 3;
        while (*i < text.size() && text[*i] == quote) ++*i;  // """a"""" ends with a quote
        return;
      } else {
        ++*i;
      }
    }
    return;
  }
  ++*i;
  while (*i < text.size() && text[*i] != '\n') {
    if (basic && text[*i] == '\\') {
      *i += 2;
    } else if (text[*i] == quote) {
      ++*i;
      return;
    } else {
      ++*i;
    }
  }
}

// Reads the (dotted) key at text[*i] and returns how many parts it has,
// leaving *i after it; 0 when no key starts there.
size_t KeyParts(std::string_view text, size_t* i) {
  size_t parts = 0;
  while (true) {
    SkipBlanks(text, i);
    if (*i >= text.size()) return parts;
    char c = text[*i];
    if (c == '"' || c == '\'') {
      SkipTomlString(text, i);
    } else if (IsBareKeyChar(c)) {
      while (*i < text.size() && IsBareKeyChar(text[*i])) ++*i;
    } else {
      return parts;
    }
    ++parts;
    SkipBlanks(text, i);
    if (*i >= text.size() || text[*i] != '.') return parts;
    ++*i;
  }
}

}  // namespace

bool JsonNestsDeeperThan(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

bool TomlNestsDeeperThan(std::string_view text, size_t max_depth) {
  struct Container {
    bool inline_table;  // else an array
    size_t depth;       // its own depth
  };
  std::vector<Container> open;  // at most max_depth + 1 entries: deeper returns at once
  size_t header_depth = 0;      // the current [table]'s depth
  size_t slot = 0;              // the depth of the value after the last key
  bool expect_key = true;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '\n') {
      if (open.empty()) expect_key = true;
      ++i;
      continue;
    }
    if (expect_key) {
      if (open.empty() && c == '[') {  // [table] or [[array of tables]]
        const bool array = i + 1 < text.size() && text[i + 1] == '[';
        i += array ? 2 : 1;
        header_depth = KeyParts(text, &i) + (array ? 1 : 0);
        if (header_depth > max_depth) return true;
        while (i < text.size() && (text[i] == ']' || text[i] == ' ' || text[i] == '\t')) ++i;
        continue;
      }
      if (c == '}' && !open.empty() && open.back().inline_table) {  // {} or a trailing comma
        open.pop_back();
        expect_key = false;
        ++i;
        continue;
      }
      const size_t parts = KeyParts(text, &i);
      if (parts == 0) {
        ++i;  // not a key: the parser says what it is
        continue;
      }
      slot = (open.empty() ? header_depth : open.back().depth) + parts;
      if (slot > max_depth) return true;
      expect_key = false;
      continue;
    }
    switch (c) {
      case '"':
      case '\'':
        SkipTomlString(text, &i);
        continue;
      case '[':
      case '{': {
        const size_t depth =
            open.empty() || open.back().inline_table ? slot : open.back().depth + 1;
        if (depth > max_depth) return true;
        open.push_back({c == '{', depth});
        expect_key = c == '{';
        break;
      }
      case ']':
        if (!open.empty() && !open.back().inline_table) open.pop_back();
        break;
      case '}':
        if (!open.empty() && open.back().inline_table) open.pop_back();
        break;
      case ',':
        if (!open.empty() && open.back().inline_table) expect_key = true;
        break;
      default:
        break;
    }
    ++i;
  }
  return false;
}

}  // namespace termbridge::nesting
