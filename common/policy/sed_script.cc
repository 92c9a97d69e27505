// A reader of GNU sed scripts that finds the commands and flags that run,
// write or read (sed/compile.c's grammar, without compiling anything).
#include "common/policy/sed_script.h"

#include <cctype>

namespace termbridge::policy {
namespace {

class SedReader {
 public:
  explicit SedReader(std::string_view s) : s_(s) {}

  std::optional<std::string> Problem() {
    for (;;) {
      while (i_ < s_.size() && (IsBlank(s_[i_]) || s_[i_] == ';' || s_[i_] == '\n')) ++i_;
      if (i_ >= s_.size()) return std::nullopt;
      if (Address()) {
        SkipBlanks();
        if (Peek() == ',') {
          ++i_;
          SkipBlanks();
          if (Peek() == '+' || Peek() == '~') ++i_;
          if (!Address()) return "has an address sed may read otherwise";
        }
      } else if (failed_) {
        return "has an address sed may read otherwise";
      }
      SkipBlanks();
      while (Peek() == '!') {
        ++i_;
        SkipBlanks();
      }
      if (i_ >= s_.size()) return "ends without a command";
      const char command = s_[i_++];
      switch (command) {
        case '{':
        case '}':
          continue;  // a block opens or closes; the next command may follow at once
        case '#':
          SkipTo("\n");  // a comment
          continue;
        case ':':
        case 'b':
        case 't':
        case 'T':
        case 'v':
          // A label (or version) ends where GNU sed ends it: at ;, a blank
          // or the line's end; what follows is read as commands.
          SkipBlanks();
          SkipTo("; \t\n");
          continue;
        case '=':
        case 'd':
        case 'D':
        case 'g':
        case 'G':
        case 'h':
        case 'H':
        case 'n':
        case 'N':
        case 'p':
        case 'P':
        case 'x':
        case 'z':
        case 'F':
          break;
        case 'l':
        case 'L':
        case 'q':
        case 'Q':
          SkipBlanks();
          while (std::isdigit(static_cast<unsigned char>(Peek()))) ++i_;
          break;
        case 'a':
        case 'i':
        case 'c':
          Text();
          continue;
        case 'y':
          if (!Delimited(2)) return "has a y command sed may read otherwise";
          break;
        case 's': {
          if (!Delimited(2)) return "has an s command sed may read otherwise";
          for (; i_ < s_.size(); ++i_) {
            const char flag = s_[i_];
            if (flag == 'e') return "runs the pattern space as a command (the e flag of s)";
            if (flag == 'w') return "writes a file (the w flag of s)";
            if (flag != 'g' && flag != 'p' && flag != 'i' && flag != 'I' && flag != 'm' &&
                flag != 'M' && !std::isdigit(static_cast<unsigned char>(flag))) {
              break;
            }
          }
          break;
        }
        case 'e':
          return "runs a command (e)";
        case 'w':
        case 'W':
          return "writes a file (w)";
        case 'r':
        case 'R':
          return "reads a file (r)";
        default:
          return std::string("has a command sed may read otherwise (") + command + ")";
      }
      SkipBlanks();
      if (i_ < s_.size() && s_[i_] != ';' && s_[i_] != '\n' && s_[i_] != '}' && s_[i_] != '#') {
        return "has a command sed may read otherwise";
      }
    }
  }

 private:
  static bool IsBlank(char c) { return c == ' ' || c == '\t'; }
  char Peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void SkipBlanks() {
    while (i_ < s_.size() && IsBlank(s_[i_])) ++i_;
  }
  void SkipTo(std::string_view ends) {
    while (i_ < s_.size() && ends.find(s_[i_]) == std::string_view::npos) ++i_;
  }
  // a, i, c: the text runs to an unescaped newline.
  void Text() {
    while (i_ < s_.size() && s_[i_] != '\n') i_ += s_[i_] == '\\' ? 2 : 1;
  }
  // Reads `parts` parts ended by the delimiter at i_ (s and y); false when
  // they do not end. A backslash escapes the next character.
  bool Delimited(int parts) {
    if (i_ >= s_.size()) return false;
    const char delim = s_[i_++];
    if (delim == '\n' || delim == '\\') return false;
    for (int part = 0; part < parts; ++part) {
      for (;;) {
        if (i_ >= s_.size()) return false;
        if (s_[i_] == '\\') {
          i_ += 2;
          continue;
        }
        if (s_[i_++] == delim) break;
      }
    }
    return true;
  }
  // One address at i_; false when there is none (failed_ when one started
  // and did not end).
  bool Address() {
    const char c = Peek();
    if (std::isdigit(static_cast<unsigned char>(c))) {
      while (std::isdigit(static_cast<unsigned char>(Peek())) || Peek() == '~') ++i_;
      return true;
    }
    if (c == '$') {
      ++i_;
      return true;
    }
    if (c == '/' || c == '\\') {
      if (c == '\\') ++i_;  // \cREc: the next character delimits
      if (!Delimited(1)) {
        failed_ = true;
        return false;
      }
      while (Peek() == 'I' || Peek() == 'M') ++i_;
      return true;
    }
    return false;
  }

  std::string_view s_;
  size_t i_ = 0;
  bool failed_ = false;
};

}  // namespace

std::optional<std::string> SedScriptProblem(std::string_view script) {
  return SedReader(script).Problem();
}

}  // namespace termbridge::policy
