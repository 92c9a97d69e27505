// The grammar half of the shell-aware parser: a hand-written recursive
// descent over a POSIX sh subset. It splits a line into simple commands at
// ; && || | |& & and newlines, descends into $(...), backticks, <(...),
// >(...), ( ) and { }, removes quotes and escapes, records redirections, and
// hands each simple command to AnalyzeCommand (wrappers.cc). What it does not
// understand (here-documents, functions, if/for/while/case, arithmetic,
// history expansion, control characters) is an error, never a guess.
#include "common/policy/shell_parser.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/policy/policy.h"
#include "common/policy/text.h"
#include "common/text/utf8.h"

namespace termbridge::policy {

std::string SimpleCommand::Text() const {
  if (argv.empty()) return "";
  std::string text = program;
  for (size_t i = 1; i < argv.size(); ++i) internal::Append(&text, " ", argv[i]);
  return text;
}

namespace internal {

Word Word::Literal(std::string_view text) {
  Word w;
  w.Append(text, kQuoted);
  w.raw = std::string(text);
  return w;
}

void Word::Append(std::string_view s, char mark) {
  text.append(s);
  marks.append(s.size(), mark);
}

void Word::AppendExpansion(std::string_view s, bool quoted) {
  if (s.empty()) return;
  text.append(s);
  marks.push_back(quoted ? kQExpStart : kExpStart);
  marks.append(s.size() - 1, quoted ? kQExpRest : kExpRest);
}

bool Word::Dynamic() const { return marks.find_first_of("exEX") != std::string::npos; }

bool Word::HasGlob() const {
  bool open = false;  // an unquoted [ seen: a later unquoted ] closes a class
  for (size_t i = 0; i < text.size(); ++i) {
    if (marks[i] != kLiteral) continue;
    if (text[i] == '*' || text[i] == '?' || (open && text[i] == ']')) return true;
    if (text[i] == '[') open = true;
  }
  return false;
}

bool Word::IsOneSubstitution() const {
  if (marks.empty() || (marks[0] != kExpStart && marks[0] != kQExpStart)) return false;
  if (marks.find_first_not_of("xX", 1) != std::string::npos) return false;
  return text.rfind("$(", 0) == 0 || text[0] == '`';
}

bool Word::IsProcessSubstitution() const {
  if (marks.empty() || marks[0] != kExpStart) return false;
  if (marks.find_first_not_of('x', 1) != std::string::npos) return false;
  return text.rfind("<(", 0) == 0 || text.rfind(">(", 0) == 0;
}

Word Word::Substr(size_t pos) const {
  Word w;
  if (pos >= text.size()) return w;
  w.text = text.substr(pos);
  w.marks = marks.substr(pos);
  if (w.marks[0] == kExpRest) w.marks[0] = kExpStart;
  if (w.marks[0] == kQExpRest) w.marks[0] = kQExpStart;
  w.raw = w.text;
  return w;
}

void ParseState::Fail(std::string reason) {
  if (!out->error) out->error = std::move(reason);
}

void ParseState::FailLimit(std::string_view limit, std::string reason) {
  if (out->error) return;
  out->error = std::move(reason);
  out->limit = std::string(limit);
}

// A bare name (found through PATH) or a path in a system bin directory:
// allow rules trust the basename only for these, never for ./ls. git only
// by name: a broker terminal's PATH finds termbridge-git first, which runs
// read-only commands with the repository's config reduced to data
// (broker/git_guard/git_guard.h); /usr/bin/git would read it as it is.
bool IsTrustedProgramPath(std::string_view argv0) {
  size_t slash = argv0.rfind('/');
  if (slash == std::string_view::npos) return true;
  if (argv0.substr(slash + 1) == "git") return false;
  std::string_view dir = argv0.substr(0, slash);
  for (std::string_view d :
       {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}) {
    if (dir == d) return true;
  }
  return false;
}

std::string Basename(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos || path.size() == 1) return std::string(path);
  return std::string(path.substr(slash + 1));
}

std::string RunTimeNote(std::string_view word) {
  std::string shown = word.size() <= 48 ? std::string(word) : Cat(word.substr(0, 45), "...");
  return Cat("`", shown, "` is only known at run time");
}

namespace {

// One more level of ( { $( ${ " or `, counted across every parser of the
// line; too_deep() past kMaxNesting.
class NestingGuard {
 public:
  explicit NestingGuard(ParseState* st) : st_(st) { ++st_->nesting; }
  ~NestingGuard() { --st_->nesting; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;
  bool too_deep() const { return st_->nesting > kMaxNesting; }

 private:
  ParseState* st_;
};

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsMeta(char c) {
  return IsBlank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
         c == '(' || c == ')';
}
bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsUnsupportedKeyword(std::string_view w) {
  static constexpr std::string_view kWords[] = {
      "if",  "then",  "else",  "elif",   "fi",       "do",     "done", "case", "esac",
      "for", "while", "until", "select", "function", "coproc", "[[",   "]]",   "}"};
  for (std::string_view k : kWords) {
    if (w == k) return true;
  }
  return false;
}

// Redirections of one simple command or group.
struct Redirections {
  std::vector<std::string> writes;
  std::vector<std::string> reads;
  bool stdin_piped = false;
  // The first target, source or here-string word the shell expands at run
  // time, as written; "" when every word is literal.
  std::string expansion;
};

// {NAME} or {NAME[...]} written right before a redirection operator: bash
// opens a new fd and assigns its number to NAME.
bool IsFdVariable(const Word& w) {
  const std::string& t = w.text;
  if (t.size() < 3 || t.front() != '{' || t.back() != '}' || w.marks[0] != kLiteral) return false;
  if (!IsNameStart(t[1])) return false;
  size_t i = 1;
  while (i < t.size() && IsNameChar(t[i])) ++i;
  return t[i] == '}' || t[i] == '[';
}

// NAME[...]=value or NAME[...]+=value with an unquoted NAME: the shell takes
// it as an array element assignment, and the subscript is arithmetic.
bool IsElementAssignment(const Word& w) {
  const std::string& t = w.text;
  size_t i = 0;
  while (i < t.size() && w.marks[i] == kLiteral && IsNameChar(t[i])) ++i;
  if (i == 0 || !IsNameStart(t[0]) || i == t.size() || t[i] != '[') return false;
  size_t close = t.find(']', i);
  if (close == std::string::npos) return false;
  std::string_view rest = std::string_view(t).substr(close + 1);
  return rest.rfind('=', 0) == 0 || rest.rfind("+=", 0) == 0;
}

bool IsIgnoredTarget(std::string_view t) {
  return t == "/dev/null" || t == "/dev/stdout" || t == "/dev/stderr" || t == "/dev/tty" ||
         t == "/dev/fd/1" || t == "/dev/fd/2";
}

bool IsFdDup(std::string_view t) {
  if (t == "-") return true;
  if (!t.empty() && t.back() == '-') t.remove_suffix(1);
  if (t.empty()) return false;
  for (char c : t) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, const Invocation& base, std::string_view label, ParseState* st)
      : text_(text), base_(base), label_(label), st_(st) {}

  bool ParseProgram() { return ParseList(0, base_.stdin_piped); }

 private:
  bool ParseList(char close, bool stdin_piped);
  bool ParseSeparator();
  bool ParseAndOr(bool stdin_piped);
  bool ParsePipeline(bool stdin_piped);
  bool ParseCommand(bool stdin_piped);
  bool ParseGroup(char close, bool stdin_piped);
  bool ParseSimpleCommand(bool stdin_piped);
  void EmitSimpleCommand(std::vector<Word> words, const Redirections& r, bool stdin_piped);
  bool TryRedirection(Redirections* r, bool* handled);
  bool ParseWord(Word* w);
  bool ParseDoubleQuoted(Word* w);
  bool ParseDollar(Word* w, bool quoted);
  bool ParseSubstitution(Word* w, bool quoted);
  bool ParseBraceParameter(Word* w, bool quoted);
  bool CheckParameterForm();
  bool ParseBacktick(Word* w, bool quoted);
  bool ParseProcessSubstitution(Word* w);
  bool ParseAnsiC(Word* w);
  bool CheckHistory(bool quoted);

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void SkipBlanks();
  void SkipBlanksAndNewlines();
  std::string PeekPlainWord() const;
  void MarkOperators() { st_->out->has_operators = true; }
  bool Fail(std::string_view message);
  bool FailTooDeep();

  std::string_view text_;
  size_t pos_ = 0;
  const Invocation& base_;
  std::string label_;
  ParseState* st_;
};

bool Parser::FailTooDeep() {
  st_->FailLimit("nesting",
                 Cat("the line nests ( { $( ${ \" and ` more than ", kMaxNesting, " deep"));
  return false;
}

bool Parser::Fail(std::string_view message) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  std::string where = line > 1 ? Cat("line ", line, ", column ", column) : Cat("column ", column);
  std::string prefix = label_.empty() ? "" : Cat(label_, ": ");
  st_->Fail(Cat(prefix, message, " (", where, ")"));
  return false;
}

void Parser::SkipBlanks() {
  while (!AtEnd()) {
    char c = Peek();
    if (IsBlank(c)) {
      ++pos_;
    } else if (c == '\\' && Peek(1) == '\n') {
      pos_ += 2;
    } else if (c == '#') {
      while (!AtEnd() && Peek() != '\n') ++pos_;
    } else {
      return;
    }
  }
}

void Parser::SkipBlanksAndNewlines() {
  SkipBlanks();
  while (Peek() == '\n') {
    ++pos_;
    SkipBlanks();
  }
}

std::string Parser::PeekPlainWord() const {
  size_t p = pos_;
  while (p < text_.size() && !IsMeta(text_[p])) {
    char c = text_[p];
    if (c == '\'' || c == '"' || c == '\\' || c == '$' || c == '`') return "";
    ++p;
  }
  return std::string(text_.substr(pos_, p - pos_));
}

bool Parser::ParseList(char close, bool stdin_piped) {
  NestingGuard guard(st_);
  if (guard.too_deep()) return FailTooDeep();
  bool newline_pending = false;
  int parsed = 0;
  while (true) {
    SkipBlanks();
    if (AtEnd()) {
      if (close != 0) return Fail(Cat("missing `", std::string(1, close), "`"));
      return true;
    }
    char c = Peek();
    if (c == '\n') {
      ++pos_;
      newline_pending = parsed > 0;
      continue;
    }
    if (c == ')' || PeekPlainWord() == "}") {
      if (c == close || (close == '}' && c == '}')) {
        ++pos_;
        return true;
      }
      return Fail(Cat("unexpected `", std::string(1, c), "`"));
    }
    if (newline_pending) MarkOperators();
    if (!ParseAndOr(stdin_piped)) return false;
    ++parsed;
    if (!ParseSeparator()) return false;
  }
}

bool Parser::ParseSeparator() {
  SkipBlanks();
  if (AtEnd()) return true;
  char c = Peek();
  if (c == ';') {
    if (Peek(1) == ';') return Fail("unexpected `;;`");
    ++pos_;
    MarkOperators();
    return true;
  }
  if (c == '&') {
    ++pos_;
    MarkOperators();
    return true;
  }
  if (c == '\n' || c == ')' || c == '}') return true;
  return Fail(Cat("unexpected `", std::string(1, c), "`"));
}

bool Parser::ParseAndOr(bool stdin_piped) {
  if (!ParsePipeline(stdin_piped)) return false;
  while (true) {
    SkipBlanks();
    bool and_or = (Peek() == '&' && Peek(1) == '&') || (Peek() == '|' && Peek(1) == '|');
    if (!and_or) return true;
    pos_ += 2;
    MarkOperators();
    SkipBlanksAndNewlines();
    if (!ParsePipeline(stdin_piped)) return false;
  }
}

bool Parser::ParsePipeline(bool stdin_piped) {
  SkipBlanks();
  if (PeekPlainWord() == "!") {
    ++pos_;
    SkipBlanks();
  }
  if (!ParseCommand(stdin_piped)) return false;
  while (true) {
    SkipBlanks();
    if (Peek() != '|' || Peek(1) == '|') return true;
    ++pos_;
    if (Peek() == '&') ++pos_;
    MarkOperators();
    SkipBlanksAndNewlines();
    if (!ParseCommand(true)) return false;
  }
}

bool Parser::ParseCommand(bool stdin_piped) {
  SkipBlanks();
  bool lone_amp = Peek() == '&' && Peek(1) != '>';
  if (AtEnd() || Peek() == '\n' || Peek() == ';' || lone_amp || Peek() == '|' || Peek() == ')') {
    return Fail("missing command");
  }
  if (Peek() == '(') {
    if (Peek(1) == '(') return Fail("arithmetic `(( ))` is not supported");
    ++pos_;
    return ParseGroup(')', stdin_piped);
  }
  std::string word = PeekPlainWord();
  if (word == "{") {
    ++pos_;
    return ParseGroup('}', stdin_piped);
  }
  if (IsUnsupportedKeyword(word)) {
    if (word == "}") return Fail("unexpected `}`");
    return Fail(Cat("`", word, "` compound commands are not supported"));
  }
  return ParseSimpleCommand(stdin_piped);
}

bool Parser::ParseGroup(char close, bool stdin_piped) {
  MarkOperators();
  size_t first = st_->out->commands.size();
  if (!ParseList(close, stdin_piped)) return false;
  Redirections r;
  while (true) {
    SkipBlanks();
    bool handled = false;
    if (!TryRedirection(&r, &handled)) return false;
    if (!handled) break;
  }
  if (!AtEnd() && !IsMeta(Peek()) && Peek() != '}') {
    return Fail(Cat("unexpected word after `", std::string(1, close), "`"));
  }
  auto& commands = st_->out->commands;
  for (size_t i = first; i < commands.size(); ++i) {
    commands[i].write_targets.insert(commands[i].write_targets.end(), r.writes.begin(),
                                     r.writes.end());
    commands[i].read_sources.insert(commands[i].read_sources.end(), r.reads.begin(), r.reads.end());
    if (!r.expansion.empty()) {
      SimpleCommand& c = commands[i];
      c.dynamic = true;
      c.note =
          c.note.empty() ? RunTimeNote(r.expansion) : Cat(c.note, "; ", RunTimeNote(r.expansion));
    }
  }
  return true;
}

bool Parser::ParseSimpleCommand(bool stdin_piped) {
  std::vector<Word> words;
  Redirections r;
  while (true) {
    SkipBlanks();
    if (AtEnd()) break;
    char c = Peek();
    if (c == '\n' || c == ';' || c == ')' || c == '|') break;
    if (c == '&' && Peek(1) != '>') break;
    if (c == '(') {
      if (words.size() == 1 && IsAssignment(words[0]) && words[0].text.back() == '=') {
        return Fail("array assignments are not supported");
      }
      if (words.size() == 1) return Fail("function definitions are not supported");
      return Fail("unexpected `(`");
    }
    bool handled = false;
    if (!TryRedirection(&r, &handled)) {
      EmitSimpleCommand(std::move(words), r, stdin_piped);
      return false;
    }
    if (handled) continue;
    Word w;
    if (!ParseWord(&w)) {
      EmitSimpleCommand(std::move(words), r, stdin_piped);
      return false;
    }
    bool fd_variable = (Peek() == '<' || Peek() == '>') && IsFdVariable(w);
    words.push_back(std::move(w));
    if (fd_variable) {
      Fail("`{var}>` redirections are not supported (they assign var)");
      EmitSimpleCommand(std::move(words), r, stdin_piped);  // deny rules still see the rest
      return false;
    }
  }
  EmitSimpleCommand(std::move(words), r, stdin_piped);
  return !st_->failed();
}

void Parser::EmitSimpleCommand(std::vector<Word> words, const Redirections& r, bool stdin_piped) {
  if (words.empty() && r.writes.empty() && r.expansion.empty()) return;
  Invocation inv = base_;
  inv.words.clear();
  if (inv.hidden_expansion.empty()) inv.hidden_expansion = r.expansion;
  size_t i = 0;
  for (; i < words.size(); ++i) {
    if (IsElementAssignment(words[i])) {
      // Refused; the command after it is still analyzed so deny rules see it.
      Fail(
          "array element assignments (`a[i]=v`) are not supported (the subscript is "
          "arithmetic, which can run commands)");
    } else if (IsAssignment(words[i])) {
      inv.words.push_back(words[i]);
    } else {
      break;
    }
  }
  for (; i < words.size(); ++i) {
    std::vector<Word> expanded;
    if (!ExpandBraces(words[i], st_, &expanded)) return;
    for (Word& w : expanded) inv.words.push_back(std::move(w));
  }
  inv.writes.insert(inv.writes.end(), r.writes.begin(), r.writes.end());
  inv.reads.insert(inv.reads.end(), r.reads.begin(), r.reads.end());
  inv.stdin_piped = stdin_piped || r.stdin_piped;
  inv.strip_assignments = true;
  AnalyzeCommand(std::move(inv), st_);
}

bool Parser::TryRedirection(Redirections* r, bool* handled) {
  *handled = false;
  size_t p = pos_;
  while (p < text_.size() && std::isdigit(static_cast<unsigned char>(text_[p]))) ++p;
  bool has_fd = p > pos_;
  std::string_view rest = text_.substr(p);
  std::string op;
  if (!has_fd && (rest.rfind("&>>", 0) == 0)) {
    op = "&>>";
  } else if (!has_fd && rest.rfind("&>", 0) == 0) {
    op = "&>";
  } else if (rest.empty() || (rest[0] != '<' && rest[0] != '>')) {
    return true;
  } else if (rest.size() > 1 && rest[1] == '(') {
    if (has_fd) return Fail("a file descriptor before a process substitution is not supported");
    return true;  // <(...) or >(...): a word
  } else {
    static constexpr std::string_view kOps[] = {"<<<", "<<-", "<<", "<>", "<&",
                                                ">>",  ">|",  ">&", "<",  ">"};
    for (std::string_view k : kOps) {
      if (rest.rfind(k, 0) == 0) {
        op = std::string(k);
        break;
      }
    }
  }
  *handled = true;
  pos_ = p + op.size();
  MarkOperators();
  if (op == "<<" || op == "<<-") return Fail("here-documents (<<) are not supported");
  SkipBlanks();
  bool procsub = (Peek() == '<' || Peek() == '>') && Peek(1) == '(';
  if (AtEnd() || (IsMeta(Peek()) && !procsub)) {
    return Fail(Cat("missing file name after `", op, "`"));
  }
  Word target;
  if (!ParseWord(&target)) return false;
  // A here-string is not globbed; file names are (bash, with one match).
  if (r->expansion.empty() && target.Expands(/*glob=*/op != "<<<")) r->expansion = target.raw;
  if (op == "<<<") {
    r->stdin_piped = true;
  } else if (op == "<" || op == "<&") {
    if (target.IsProcessSubstitution()) {
      r->stdin_piped = true;
    } else if (op == "<" || !IsFdDup(target.text)) {
      r->reads.push_back(target.text);
    }
  } else if ((op == ">&" && IsFdDup(target.text)) || target.IsProcessSubstitution() ||
             IsIgnoredTarget(target.text)) {
    // fd duplication, a process, or a harmless device
  } else {
    r->writes.push_back(target.text);
    if (op == "<>") r->reads.push_back(target.text);
  }
  return true;
}

bool Parser::CheckHistory(bool quoted) {
  char n = Peek(1);
  bool safe = n == '\0' || IsBlank(n) || n == '\n' || n == '=' || n == '(' || (quoted && n == '"');
  if (safe) return true;
  return Fail("history expansion (`!`) is not supported");
}

bool Parser::ParseWord(Word* w) {
  size_t start = pos_;
  while (!AtEnd()) {
    char c = Peek();
    if (IsMeta(c)) {
      bool procsub = pos_ == start && (c == '<' || c == '>') && Peek(1) == '(';
      if (!procsub) break;
      if (!ParseProcessSubstitution(w)) return false;
      continue;
    }
    if (c == '\\') {
      if (Peek(1) == '\n') {
        pos_ += 2;
        continue;
      }
      if (pos_ + 1 >= text_.size()) return Fail("the line ends with a backslash");
      w->Append(text_.substr(pos_ + 1, 1), kQuoted);
      pos_ += 2;
    } else if (c == '\'') {
      size_t end = text_.find('\'', pos_ + 1);
      if (end == std::string_view::npos) return Fail("unterminated single quote");
      w->Append(text_.substr(pos_ + 1, end - pos_ - 1), kQuoted);
      pos_ = end + 1;
    } else if (c == '"') {
      if (!ParseDoubleQuoted(w)) return false;
    } else if (c == '$') {
      if (!ParseDollar(w, false)) return false;
    } else if (c == '`') {
      if (!ParseBacktick(w, false)) return false;
    } else {
      if (c == '!' && !CheckHistory(false)) return false;
      w->Append(text_.substr(pos_, 1), kLiteral);
      ++pos_;
    }
  }
  w->raw = std::string(text_.substr(start, pos_ - start));
  if (w->raw.empty()) return Fail("expected a word");
  return true;
}

bool Parser::ParseDoubleQuoted(Word* w) {
  NestingGuard guard(st_);
  if (guard.too_deep()) return FailTooDeep();
  ++pos_;
  while (true) {
    if (AtEnd()) return Fail("unterminated double quote");
    char c = Peek();
    if (c == '"') {
      ++pos_;
      return true;
    }
    if (c == '\\') {
      char n = Peek(1);
      if (n == '\n') {
        pos_ += 2;
      } else if (n == '$' || n == '`' || n == '"' || n == '\\') {
        w->Append(text_.substr(pos_ + 1, 1), kQuoted);
        pos_ += 2;
      } else {
        w->Append("\\", kQuoted);
        ++pos_;
      }
    } else if (c == '$') {
      if (!ParseDollar(w, true)) return false;
    } else if (c == '`') {
      if (!ParseBacktick(w, true)) return false;
    } else {
      if (c == '!' && !CheckHistory(true)) return false;
      w->Append(text_.substr(pos_, 1), kQuoted);
      ++pos_;
    }
  }
}

bool Parser::ParseDollar(Word* w, bool quoted) {
  char n = Peek(1);
  if (n == '(') return ParseSubstitution(w, quoted);
  if (n == '{') return ParseBraceParameter(w, quoted);
  if (n == '[') return Fail("arithmetic `$[ ]` is not supported");
  if (n == '\'' && !quoted) return ParseAnsiC(w);
  if (n == '"' && !quoted) {
    ++pos_;
    return ParseDoubleQuoted(w);
  }
  if (IsNameStart(n)) {
    size_t end = pos_ + 1;
    while (end < text_.size() && IsNameChar(text_[end])) ++end;
    w->AppendExpansion(text_.substr(pos_, end - pos_), quoted);
    pos_ = end;
    return true;
  }
  bool special = n != '\0' && std::string_view("@*#?-$!").find(n) != std::string_view::npos;
  if (std::isdigit(static_cast<unsigned char>(n)) || special) {
    w->AppendExpansion(text_.substr(pos_, 2), quoted);
    pos_ += 2;
    return true;
  }
  w->Append("$", quoted ? kQuoted : kLiteral);
  ++pos_;
  return true;
}

bool Parser::ParseSubstitution(Word* w, bool quoted) {
  if (Peek(2) == '(') return Fail("arithmetic `$(( ))` is not supported");
  size_t start = pos_;
  pos_ += 2;
  MarkOperators();
  if (!ParseList(')', base_.stdin_piped)) return false;
  w->AppendExpansion(text_.substr(start, pos_ - start), quoted);
  return true;
}

// Refuses the ${...} forms that assign, evaluate, or reach a variable through
// another: ${x=w} and ${x:=w}; ${x@op} other than @Q @U @u @L @a (@P and @E
// expand their value as a prompt or escapes and can run code, @A and @K print
// declarations); ${!x} (indirection; ${!} alone is $!); subscripts other than
// [@], [*] and numbers, and ${x:offset:length} with offsets other than
// numbers, because both are arithmetic and arithmetic can run commands.
bool Parser::CheckParameterForm() {
  auto at = [this](size_t k) { return k < text_.size() ? text_[k] : '\0'; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  size_t p = pos_ + 2;
  if (text_.find('}', p) == std::string_view::npos) return true;  // unterminated: said later
  if (at(p) == '!' && at(p + 1) != '}') {
    return Fail("indirect parameter expansion (`${!x}`) is not supported");
  }
  if (at(p) == '#' && at(p + 1) != '}') ++p;  // ${#x}: the length of x
  size_t name = p;
  if (IsNameStart(at(p))) {
    while (IsNameChar(at(p))) ++p;
  } else if (digit(at(p))) {
    while (digit(at(p))) ++p;
  } else if (at(p) != '\0' && std::string_view("@*#?-$!").find(at(p)) != std::string_view::npos) {
    ++p;
  }
  if (p == name) return Fail("unsupported parameter expansion `${`");
  if (at(p) == '[') {
    size_t close = text_.find(']', p);
    std::string_view sub =
        close == std::string_view::npos ? "" : text_.substr(p + 1, close - p - 1);
    bool number = !sub.empty();
    for (char c : sub) number = number && digit(c);
    if (sub != "@" && sub != "*" && !number) {
      return Fail(
          "array subscripts other than [@], [*] and numbers are not supported (a "
          "subscript is arithmetic, which can run commands)");
    }
    p = close + 1;
  }
  char op = at(p);
  if (op == '}') return true;
  if (op == '=' || (op == ':' && at(p + 1) == '=')) {
    return Fail("assigning parameter expansions (`${x=w}`, `${x:=w}`) are not supported");
  }
  if (op == '@') {
    char t = at(p + 1);
    if (t == '\0' || std::string_view("QULua").find(t) == std::string_view::npos ||
        at(p + 2) != '}') {
      return Fail(
          "`${x@op}` other than @Q, @U, @u, @L and @a is not supported (@P and @E "
          "expand the value and can run commands)");
    }
    return true;
  }
  if (op == ':' && std::string_view("-+?").find(at(p + 1)) == std::string_view::npos) {
    size_t k = p + 1;
    while (digit(at(k)) || at(k) == ' ' || at(k) == '-' || at(k) == ':') ++k;
    if (at(k) != '}') {
      return Fail(
          "substring offsets other than numbers (`${x:off:len}`) are not supported "
          "(they are arithmetic, which can run commands)");
    }
    return true;
  }
  if (op != '\0' && std::string_view("-+?#%/^,~:").find(op) != std::string_view::npos) {
    return true;
  }
  return Fail("unsupported parameter expansion `${`");
}

bool Parser::ParseBraceParameter(Word* w, bool quoted) {
  NestingGuard guard(st_);
  if (guard.too_deep()) return FailTooDeep();
  if (!CheckParameterForm()) return false;
  size_t start = pos_;
  pos_ += 2;
  while (true) {
    if (AtEnd()) return Fail("unterminated `${`");
    char c = Peek();
    Word scratch;
    if (c == '}') {
      ++pos_;
      break;
    } else if (c == '\\') {
      pos_ += 2;
    } else if (c == '\'' && !quoted) {
      size_t end = text_.find('\'', pos_ + 1);
      if (end == std::string_view::npos) return Fail("unterminated single quote");
      pos_ = end + 1;
    } else if (c == '"') {
      if (!ParseDoubleQuoted(&scratch)) return false;
    } else if (c == '$') {
      if (Peek(1) == '(' || Peek(1) == '{' || Peek(1) == '[') {
        if (!ParseDollar(&scratch, quoted)) return false;
      } else {
        ++pos_;
      }
    } else if (c == '`') {
      if (!ParseBacktick(&scratch, quoted)) return false;
    } else {
      ++pos_;
    }
  }
  w->AppendExpansion(text_.substr(start, pos_ - start), quoted);
  return true;
}

bool Parser::ParseBacktick(Word* w, bool quoted) {
  NestingGuard guard(st_);
  if (guard.too_deep()) return FailTooDeep();
  size_t start = pos_;
  ++pos_;
  std::string inner;
  while (true) {
    if (AtEnd()) return Fail("unterminated backtick");
    char c = Peek();
    if (c == '`') {
      ++pos_;
      break;
    }
    if (c == '\\') {
      char n = Peek(1);
      if (n == '$' || n == '`' || n == '\\' || (quoted && n == '"')) {
        inner.push_back(n);
        pos_ += 2;
        continue;
      }
      if (n == '\n') {
        pos_ += 2;
        continue;
      }
    }
    inner.push_back(c);
    ++pos_;
  }
  MarkOperators();
  Invocation nested = base_;
  nested.depth++;
  if (nested.depth > kMaxDepth) return FailTooDeep();
  std::string label =
      label_.empty() ? "in a backtick substitution" : Cat(label_, ", in a backtick substitution");
  if (!ParseCode(inner, nested, label, st_)) return false;
  w->AppendExpansion(text_.substr(start, pos_ - start), quoted);
  return true;
}

bool Parser::ParseProcessSubstitution(Word* w) {
  size_t start = pos_;
  bool feeds_command = Peek() == '>';  // >(cmd): cmd reads what we write
  pos_ += 2;
  MarkOperators();
  if (!ParseList(')', feeds_command)) return false;
  w->AppendExpansion(text_.substr(start, pos_ - start), false);
  return true;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes the escape at s[i] (just after the backslash) of $'...'; returns
// the number of bytes consumed, or 0 for an escape it does not know.
size_t DecodeAnsiEscape(std::string_view s, size_t i, std::string* out) {
  char c = s[i];
  static constexpr std::string_view kFrom = "abeEfnrtv\\'\"?";
  static constexpr std::string_view kTo = "\a\b\x1b\x1b\f\n\r\t\v\\'\"?";
  if (size_t k = kFrom.find(c); k != std::string_view::npos) {
    out->push_back(kTo[k]);
    return 1;
  }
  if (c >= '0' && c <= '7') {
    int v = 0;
    size_t n = 0;
    while (n < 3 && i + n < s.size() && s[i + n] >= '0' && s[i + n] <= '7') {
      v = v * 8 + (s[i + n] - '0');
      ++n;
    }
    out->push_back(static_cast<char>(v & 0xFF));
    return n;
  }
  size_t max_digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
  if (max_digits == 0) return 0;
  uint32_t v = 0;
  size_t n = 0;
  while (n < max_digits && i + 1 + n < s.size() && HexValue(s[i + 1 + n]) >= 0) {
    v = v * 16 + static_cast<uint32_t>(HexValue(s[i + 1 + n]));
    ++n;
  }
  if (n == 0 || v > 0x10FFFF) return 0;
  // bash writes a character past ASCII in the shell's locale: UTF-8, or the
  // escape itself as text (`\u00E9`) where the locale has no such character
  // (C, POSIX). The word depends on the terminal's locale, so it is unknown.
  if (c != 'x' && v > 0x7F) return 0;
  if (c == 'x') {
    out->push_back(static_cast<char>(v));
  } else {
    text::AppendUtf8(v, out);
  }
  return 1 + n;
}

bool Parser::ParseAnsiC(Word* w) {
  pos_ += 2;
  std::string decoded;
  while (true) {
    if (AtEnd()) return Fail("unterminated `$'` quote");
    char c = Peek();
    if (c == '\'') {
      ++pos_;
      break;
    }
    if (c != '\\') {
      decoded.push_back(c);
      ++pos_;
      continue;
    }
    if (pos_ + 1 >= text_.size()) return Fail("unterminated `$'` quote");
    size_t used = DecodeAnsiEscape(text_, pos_ + 1, &decoded);
    if (used == 0) return Fail("unsupported escape in `$'...'`");
    pos_ += 1 + used;
  }
  // bash keeps a $'...' quote as a C string: a NUL it decodes (\0, \x00,
  // \c@, \u0000, ...) ends it there, and the rest of the quote is dropped
  // ($'--output\0'=f is --output=f).
  if (size_t nul = decoded.find('\0'); nul != std::string::npos) decoded.resize(nul);
  w->Append(decoded, kQuoted);
  return true;
}

void ResolvePending(ParseState* st) {
  for (size_t k = 0; k < st->pending.size() && k < 64 && !st->failed(); ++k) {
    Invocation inv = st->pending[k];
    // No more variants than the argv bound has room for, and one more, so
    // that a line past it is refused rather than judged without them.
    size_t room = (kMaxArgvWords - std::min(kMaxArgvWords, st->argv_words)) /
                      std::max<size_t>(1, inv.words.size()) +
                  1;
    std::vector<Variant> variants =
        ResolveVariables(inv.words, *st, inv.positionals.get(), std::min<size_t>(16, room));
    for (Variant& v : variants) {
      Invocation vi = inv;
      vi.words = std::move(v.words);
      vi.is_variant = true;
      vi.forced_dynamic = true;
      vi.forced_note = Cat("assumes ", v.assumption, ", as assigned in this line");
      vi.strip_assignments = true;
      AnalyzeCommand(std::move(vi), st);
    }
  }
}

}  // namespace

bool ParseCode(std::string_view code, const Invocation& base, std::string_view label,
               ParseState* state) {
  if (base.depth > kMaxDepth) {
    state->FailLimit(
        "depth", Cat("the line nests wrappers and code strings more than ", kMaxDepth, " deep"));
    return false;
  }
  Parser parser(code, base, label, state);
  return parser.ParseProgram();
}

}  // namespace internal

// A PTY's line editor acts on control characters (\r submits the line, ^U
// erases it, ESC starts sequences), so what runs could differ from what the
// parser saw. \r\n and lone \r are taken as newlines; the rest is refused.
std::optional<std::string> NormalizeCommandLine(std::string_view line, std::string* out) {
  out->clear();
  out->reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(line[i]);
    if (c == '\r') {
      if (i + 1 < line.size() && line[i + 1] == '\n') continue;
      out->push_back('\n');
    } else if (c == 0) {
      out->clear();
      return internal::Cat("NUL byte at column ", i + 1);
    } else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      char hex[8];
      snprintf(hex, sizeof(hex), "0x%02x", c);
      out->clear();
      return internal::Cat("control character ", hex, " at column ", i + 1,
                           " (a terminal would act on it)");
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  return std::nullopt;
}

ParsedLine ParseLine(std::string_view line) {
  ParsedLine out;
  internal::ParseState st;
  st.out = &out;
  if (line.size() > kMaxLineBytes) {
    st.FailLimit("line_bytes", internal::Cat("the line is ", line.size(), " bytes, more than the ",
                                             kMaxLineBytes, " a line may have to be judged"));
    return out;
  }
  std::string text;
  if (auto bad = NormalizeCommandLine(line, &text)) {
    out.error = *bad;
    return out;
  }
  size_t first = text.find_first_not_of(" \t\n");
  if (first != std::string::npos && text[first] == '^') {
    out.error = "history substitution (`^old^new`) is not supported (column 1)";
    return out;
  }
  internal::Invocation base;
  internal::ParseCode(text, base, "", &st);
  internal::ResolvePending(&st);
  return out;
}

ParsedLine ParseArgv(const std::vector<std::string>& argv) {
  ParsedLine out;
  internal::ParseState st;
  st.out = &out;
  size_t bytes = 0;
  for (const std::string& a : argv) bytes += a.size() + 1;
  if (bytes > kMaxLineBytes) {
    st.FailLimit("line_bytes", internal::Cat("the command is ", bytes, " bytes, more than the ",
                                             kMaxLineBytes, " a command may have to be judged"));
    return out;
  }
  internal::Invocation inv;
  for (const std::string& a : argv) inv.words.push_back(internal::Word::Literal(a));
  inv.strip_assignments = false;
  if (!inv.words.empty()) internal::AnalyzeCommand(std::move(inv), &st);
  internal::ResolvePending(&st);
  return out;
}

}  // namespace termbridge::policy
