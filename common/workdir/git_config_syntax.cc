// A port of the reading half of git's config.c (git_parse_source,
// get_base_var, get_value, parse_value) over a string. It follows git
// character by character so that a file git accepts is read with the same
// sections and keys, and a file git refuses is refused here too.
#include "common/workdir/git_config_syntax.h"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace termbridge::workdir {
namespace {

// Reads characters as git's get_next_char does: CRLF reads as '\n', and the
// end of the text reads as '\n' with eof set.
class ConfigCursor {
 public:
  explicit ConfigCursor(std::string_view text) : text_(text) {
    if (text_.substr(0, 3) == "\xef\xbb\xbf") pos_ = 3;  // git skips a UTF-8 BOM
  }

  int Next() {
    if (pos_ >= text_.size()) {
      eof_ = true;
      return '\n';
    }
    char c = text_[pos_++];
    if (c == '\r' && pos_ < text_.size() && text_[pos_] == '\n') c = text_[pos_++];
    if (c == '\n') ++line_;
    return static_cast<unsigned char>(c);
  }

  bool eof() const { return eof_; }
  int line() const { return line_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  bool eof_ = false;
};

bool IsKeyChar(int c) { return std::isalnum(c) || c == '-'; }
bool IsSpace(int c) { return c != 0 && std::isspace(c); }

// After "[name" and one whitespace: ` "subsection"]`. Appends ".subsection".
bool ReadQuotedSubsection(ConfigCursor& in, int c, std::string& name) {
  while (IsSpace(c)) {
    if (c == '\n') return false;
    c = in.Next();
  }
  if (c != '"') return false;
  name.push_back('.');
  for (;;) {
    c = in.Next();
    if (c == '\n' || c == 0) return false;
    if (c == '"') break;
    if (c == '\\') {
      c = in.Next();
      if (c == '\n' || c == 0) return false;
    }
    name.push_back(static_cast<char>(c));
  }
  return in.Next() == ']';
}

// After '[': the section name up to ']' ("remote.origin" or "core").
bool ReadSectionHeader(ConfigCursor& in, std::string& name) {
  for (;;) {
    int c = in.Next();
    if (in.eof()) return false;
    if (c == ']') return !name.empty();
    if (IsSpace(c)) return !name.empty() && ReadQuotedSubsection(in, c, name);
    if (!IsKeyChar(c) && c != '.') return false;
    name.push_back(static_cast<char>(std::tolower(c)));
  }
}

// After '=': the value up to the end of the line, as git's parse_value.
bool ReadValue(ConfigCursor& in, std::string& value) {
  bool quote = false;
  bool comment = false;
  size_t trim_len = 0;
  for (;;) {
    int c = in.Next();
    if (c == '\n') {
      if (quote) return false;
      if (trim_len) value.resize(trim_len);
      return true;
    }
    if (c == 0) return false;
    if (comment) continue;
    if (IsSpace(c) && !quote) {
      if (!trim_len && !value.empty()) trim_len = value.size();
      if (!value.empty()) value.push_back(static_cast<char>(c));
      continue;
    }
    if (!quote && (c == ';' || c == '#')) {
      comment = true;
      continue;
    }
    trim_len = 0;
    if (c == '\\') {
      c = in.Next();
      switch (c) {
        case '\n':
          continue;  // line continuation (at the end of the text, git ends the value)
        case 't':
          c = '\t';
          break;
        case 'b':
          c = '\b';
          break;
        case 'n':
          c = '\n';
          break;
        case '\\':
        case '"':
          break;
        default:
          return false;
      }
      value.push_back(static_cast<char>(c));
      continue;
    }
    if (c == '"') {
      quote = !quote;
      continue;
    }
    value.push_back(static_cast<char>(c));
  }
}

// Splits "section.sub.sec.key" the way git does: section up to the first dot,
// key after the last, subsection between.
GitConfigEntry SplitName(std::string_view base, std::string key) {
  GitConfigEntry entry;
  entry.key = std::move(key);
  size_t dot = base.find('.');
  entry.section = std::string(base.substr(0, dot));
  if (dot != std::string_view::npos) {
    entry.has_subsection = true;
    entry.subsection = std::string(base.substr(dot + 1));
  }
  return entry;
}

// After the key's first character `first`: the rest of the key and its value.
bool ReadEntry(ConfigCursor& in, int first, std::string_view base, GitConfigEntry& out) {
  int line = in.line();
  std::string key(1, static_cast<char>(std::tolower(first)));
  int c;
  for (;;) {
    c = in.Next();
    if (in.eof() || !IsKeyChar(c)) break;
    key.push_back(static_cast<char>(std::tolower(c)));
  }
  while (c == ' ' || c == '\t') c = in.Next();
  out = SplitName(base, std::move(key));
  out.line = line;
  if (c == '\n') {
    out.bare = true;
    return true;
  }
  return c == '=' && ReadValue(in, out.value);
}

}  // namespace

std::string GitConfigEntry::Name() const {
  if (section.empty()) return key;
  if (!has_subsection) return absl::StrCat(section, ".", key);
  return absl::StrCat(section, ".", subsection, ".", key);
}

absl::StatusOr<std::vector<GitConfigEntry>> ParseGitConfig(std::string_view text) {
  ConfigCursor in(text);
  std::vector<GitConfigEntry> entries;
  std::string base;
  bool comment = false;
  for (;;) {
    int line = in.line();
    int c = in.Next();
    if (in.eof()) return entries;
    if (c == '\n') {
      comment = false;
      continue;
    }
    if (comment) continue;
    if (IsSpace(c)) continue;
    if (c == '#' || c == ';') {
      comment = true;
      continue;
    }
    if (c == '[') {
      base.clear();
      if (!ReadSectionHeader(in, base)) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line, ": bad section header"));
      }
      continue;
    }
    GitConfigEntry entry;
    if (!std::isalpha(c) || !ReadEntry(in, c, base, entry)) {
      return absl::InvalidArgumentError(absl::StrCat("line ", line, ": bad config line"));
    }
    entries.push_back(std::move(entry));
  }
}

}  // namespace termbridge::workdir
