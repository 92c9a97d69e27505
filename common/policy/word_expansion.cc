// Word-level expansions the parser performs itself because a shell would
// perform them before running anything: brace expansion ({rm,-rf,/} is
// `rm -rf /`), and resolving variables to the literal values this same line
// assigned them (X=rm; $X -rf /), so that deny rules see what would run.
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/policy/shell_parser.h"
#include "common/policy/text.h"

namespace termbridge::policy::internal {
namespace {

Word Slice(const Word& w, size_t begin, size_t end) {
  Word out;
  out.text = w.text.substr(begin, end - begin);
  out.marks = w.marks.substr(begin, end - begin);
  return out;
}

Word Concat(const Word& a, const Word& b, const Word& c) {
  Word out;
  out.text = a.text + b.text + c.text;
  out.marks = a.marks + b.marks + c.marks;
  return out;
}

bool ParseSequenceEnd(std::string_view s, long* value, bool* is_char) {
  if (s.size() == 1 && std::isalpha(static_cast<unsigned char>(s[0]))) {
    *value = s[0];
    *is_char = true;
    return true;
  }
  if (s.empty() || s.size() > 9) return false;
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t k = i; k < s.size(); ++k) {
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  }
  *value = std::strtol(std::string(s).c_str(), nullptr, 10);
  *is_char = false;
  return true;
}

// {1..5}, {a..e}, {0..10..2} parsed; nullopt when `body` is no sequence.
struct Sequence {
  long first = 0;
  long step = 1;  // signed: towards the last value
  long count = 0;
  bool chars = false;
};
std::optional<Sequence> ParseSequence(std::string_view body) {
  size_t dots = body.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  std::string_view first = body.substr(0, dots);
  std::string_view rest = body.substr(dots + 2);
  std::string_view last = rest;
  long step = 1;
  if (size_t more = rest.find(".."); more != std::string_view::npos) {
    last = rest.substr(0, more);
    bool step_char = false;
    if (!ParseSequenceEnd(rest.substr(more + 2), &step, &step_char) || step_char) {
      return std::nullopt;
    }
    step = std::labs(step);
    if (step == 0) step = 1;
  }
  long a = 0, b = 0;
  bool a_char = false, b_char = false;
  if (!ParseSequenceEnd(first, &a, &a_char) || !ParseSequenceEnd(last, &b, &b_char)) {
    return std::nullopt;
  }
  if (a_char != b_char) return std::nullopt;
  return Sequence{a, a <= b ? step : -step, std::labs(b - a) / step + 1, a_char};
}

std::vector<Word> SequenceWords(const Sequence& s) {
  std::vector<Word> out;
  for (long v = s.first, k = 0; k < s.count; ++k, v += s.step) {
    out.push_back(
        Word::Literal(s.chars ? std::string(1, static_cast<char>(v)) : std::to_string(v)));
  }
  return out;
}

// The extent of the expansion that starts at `i`.
size_t ExpansionEnd(const Word& w, size_t i) {
  char rest = w.marks[i] == kExpStart ? kExpRest : kQExpRest;
  size_t j = i + 1;
  while (j < w.marks.size() && w.marks[j] == rest) ++j;
  return j;
}

// "$NAME", "${NAME}", "$1", "${12}", "$@", "$*" -> the name, else nullopt.
std::optional<std::string> RefName(std::string_view e) {
  if (e.size() < 2 || e[0] != '$') return std::nullopt;
  std::string_view name = e.substr(1);
  if (name.size() >= 2 && name.front() == '{' && name.back() == '}') {
    name = name.substr(1, name.size() - 2);
  } else if (name[0] == '{') {
    return std::nullopt;
  }
  if (name == "@" || name == "*") return std::string(name);
  if (name.empty()) return std::nullopt;
  bool digits = true, ident = std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_';
  for (char c : name) {
    digits = digits && std::isdigit(static_cast<unsigned char>(c));
    ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  }
  if (!digits && !ident) return std::nullopt;
  return std::string(name);
}

std::vector<std::string> Candidates(const std::string& name, const ParseState& st,
                                    const Positionals* pos) {
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    size_t index = std::strtoul(name.c_str(), nullptr, 10);
    if (pos == nullptr || index >= pos->size() || !(*pos)[index]) return {};
    return {*(*pos)[index]};
  }
  if (name == "@" || name == "*") {
    if (pos == nullptr || pos->size() < 2) return {};
    std::vector<std::string> parts;
    for (size_t i = 1; i < pos->size(); ++i) {
      if (!(*pos)[i]) return {};
      parts.push_back(*(*pos)[i]);
    }
    return {Join(parts, " ")};
  }
  auto it = st.vars.find(name);
  if (it == st.vars.end()) return {};
  return {it->second.begin(), it->second.end()};
}

// Builds words from `words` with each resolvable reference replaced by its
// value in `values`; unquoted values are split into fields.
class WordBuilder {
 public:
  void Literal(std::string_view s, std::string_view marks) {
    cur_.text.append(s);
    cur_.marks.append(marks);
    started_ = true;
  }
  void Quoted(std::string_view v) {
    cur_.Append(v, kQuoted);
    started_ = true;
  }
  void Split(std::string_view v) {
    size_t i = 0;
    while (i < v.size()) {
      if (std::isspace(static_cast<unsigned char>(v[i]))) {
        Flush();
        ++i;
        continue;
      }
      size_t j = i;
      while (j < v.size() && !std::isspace(static_cast<unsigned char>(v[j]))) ++j;
      Quoted(v.substr(i, j - i));
      i = j;
    }
  }
  void Flush() {
    if (!started_) return;
    cur_.raw = cur_.text;
    out_.push_back(std::move(cur_));
    cur_ = Word();
    started_ = false;
  }
  std::vector<Word> Take() {
    Flush();
    return std::move(out_);
  }

 private:
  Word cur_;
  bool started_ = false;
  std::vector<Word> out_;
};

std::vector<Word> Substitute(const std::vector<Word>& words,
                             const std::vector<std::pair<std::string, std::string>>& values) {
  WordBuilder b;
  for (const Word& w : words) {
    size_t i = 0;
    while (i < w.text.size()) {
      if (w.marks[i] != kExpStart && w.marks[i] != kQExpStart) {
        b.Literal(w.text.substr(i, 1), w.marks.substr(i, 1));
        ++i;
        continue;
      }
      size_t end = ExpansionEnd(w, i);
      std::string_view exp = std::string_view(w.text).substr(i, end - i);
      std::optional<std::string> name = RefName(exp);
      const std::string* value = nullptr;
      for (const auto& [n, v] : values) {
        if (name && n == *name) value = &v;
      }
      bool quoted = w.marks[i] == kQExpStart;
      if (value == nullptr) {
        b.Literal(exp, std::string_view(w.marks).substr(i, end - i));
      } else if (quoted && *name != "@") {
        b.Quoted(*value);
      } else {
        b.Split(*value);
      }
      i = end;
    }
    if (w.text.empty()) b.Quoted("");
    b.Flush();
  }
  return b.Take();
}

}  // namespace

namespace {

// The first unquoted {...} brace expansion acts on in `w`: a matched pair
// with a comma at its own level, or a valid sequence ({1..3}, {a..e}).
struct BraceSpan {
  size_t open = 0;
  size_t close = 0;
  std::vector<size_t> commas;  // at the pair's own level
};

// One pass with a stack: a '{' pairs with the first '}' that closes more
// than it opens after it, as a scan from that '{' would find. O(size).
std::optional<BraceSpan> FirstExpandable(const Word& w) {
  struct Open {
    size_t at;
    std::vector<size_t> commas;
  };
  std::vector<Open> stack;
  std::optional<BraceSpan> best;
  for (size_t j = 0; j < w.text.size(); ++j) {
    if (w.marks[j] != kLiteral) continue;
    char c = w.text[j];
    if (c == '{') {
      stack.push_back({j, {}});
    } else if (c == ',' && !stack.empty()) {
      stack.back().commas.push_back(j);
    } else if (c == '}' && !stack.empty()) {
      Open o = std::move(stack.back());
      stack.pop_back();
      if (best && best->open < o.at) continue;  // an earlier pair already acts
      bool acts = !o.commas.empty();
      if (!acts && j - o.at - 1 <= 32) {  // a sequence body is short: O(1) to try
        acts = ParseSequence(std::string_view(w.text).substr(o.at + 1, j - o.at - 1)).has_value();
      }
      if (acts) best = BraceSpan{o.at, j, std::move(o.commas)};
    }
  }
  return best;
}

}  // namespace

bool ExpandBraces(const Word& w, ParseState* st, std::vector<Word>* out) {
  // Depth first with an explicit stack, alternatives pushed in reverse, so
  // words come out in the shell's order and no recursion grows with the
  // number of braces.
  std::vector<Word> todo = {w};
  bool expanded = false;
  while (!todo.empty()) {
    Word cur = std::move(todo.back());
    todo.pop_back();
    std::optional<BraceSpan> span = FirstExpandable(cur);
    if (!span) {
      if (expanded && ++st->brace_words > kMaxBraceWords) {
        st->FailLimit("brace_words",
                      Cat("brace expansion would produce more than ", kMaxBraceWords, " words"));
        return false;
      }
      out->push_back(std::move(cur));
      continue;
    }
    expanded = true;
    std::vector<Word> alternatives;
    if (!span->commas.empty()) {
      size_t begin = span->open + 1;
      span->commas.push_back(span->close);
      for (size_t c : span->commas) {
        alternatives.push_back(Slice(cur, begin, c));
        begin = c + 1;
      }
    } else {
      std::optional<Sequence> seq = ParseSequence(
          std::string_view(cur.text).substr(span->open + 1, span->close - span->open - 1));
      if (seq->count > static_cast<long>(kMaxBraceWords)) {
        st->FailLimit("brace_words",
                      Cat("brace expansion would produce more than ", kMaxBraceWords, " words"));
        return false;
      }
      alternatives = SequenceWords(*seq);
    }
    Word prefix = Slice(cur, 0, span->open);
    Word suffix = Slice(cur, span->close + 1, cur.text.size());
    for (size_t k = alternatives.size(); k-- > 0;) {
      size_t bytes = prefix.text.size() + alternatives[k].text.size() + suffix.text.size();
      st->brace_bytes += bytes;
      if (st->brace_bytes > kMaxBraceBytes) {
        st->FailLimit("brace_bytes", Cat("brace expansion would build more than ",
                                         kMaxBraceBytes >> 10, " KiB of words"));
        return false;
      }
      Word combined = Concat(prefix, alternatives[k], suffix);
      combined.raw = w.raw;
      todo.push_back(std::move(combined));
    }
  }
  return true;
}

std::vector<Variant> ResolveVariables(const std::vector<Word>& words, const ParseState& state,
                                      const Positionals* positionals, size_t limit) {
  std::vector<std::pair<std::string, std::vector<std::string>>> refs;
  for (const Word& w : words) {
    for (size_t i = 0; i < w.text.size(); ++i) {
      if (w.marks[i] != kExpStart && w.marks[i] != kQExpStart) continue;
      size_t end = ExpansionEnd(w, i);
      std::optional<std::string> name = RefName(std::string_view(w.text).substr(i, end - i));
      i = end - 1;
      if (!name) continue;
      bool seen = false;
      for (const auto& r : refs) seen = seen || r.first == *name;
      if (seen) continue;
      std::vector<std::string> values = Candidates(*name, state, positionals);
      if (!values.empty()) refs.emplace_back(*name, std::move(values));
    }
  }
  std::vector<Variant> out;
  if (refs.empty()) return out;
  std::vector<size_t> choice(refs.size(), 0);
  while (out.size() < limit) {
    std::vector<std::pair<std::string, std::string>> values;
    std::vector<std::string> said;
    for (size_t k = 0; k < refs.size(); ++k) {
      values.emplace_back(refs[k].first, refs[k].second[choice[k]]);
      said.push_back(Cat("$", refs[k].first, " is `", refs[k].second[choice[k]], "`"));
    }
    out.push_back({Substitute(words, values), Join(said, ", ")});
    size_t k = 0;
    while (k < refs.size() && ++choice[k] == refs[k].second.size()) choice[k++] = 0;
    if (k == refs.size()) break;
  }
  return out;
}

bool IsAssignment(const Word& w) {
  size_t i = 0;
  const std::string& t = w.text;
  if (t.empty() || w.marks[0] != kLiteral ||
      !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) {
    return false;
  }
  while (i < t.size() && w.marks[i] == kLiteral &&
         (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) {
    ++i;
  }
  if (i < t.size() && t[i] == '+' && w.marks[i] == kLiteral) ++i;
  return i < t.size() && t[i] == '=' && w.marks[i] == kLiteral;
}

void RecordAssignment(const Word& w, ParseState* state) {
  size_t eq = w.text.find('=');
  if (eq == std::string::npos || eq == 0 || w.text[eq - 1] == '+') return;
  Word value = w.Substr(eq + 1);
  if (value.Dynamic()) return;
  auto& values = state->vars[w.text.substr(0, eq)];
  if (values.size() < 16) values.insert(value.text);
}

}  // namespace termbridge::policy::internal
