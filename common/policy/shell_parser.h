// Internals of the shell-aware parser, shared by shell_parser.cc (grammar and
// lexing), wrappers.cc (peeling sh -c, env, sudo, xargs, find -exec and
// interpreters off a simple command) and word_expansion.cc (brace expansion
// and resolving variables assigned earlier in the same line). Nothing here is
// part of the library's public interface.
#ifndef TERMBRIDGE_COMMON_POLICY_SHELL_PARSER_H_
#define TERMBRIDGE_COMMON_POLICY_SHELL_PARSER_H_

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"

namespace termbridge::policy::internal {

// What produced each byte of Word::text.
inline constexpr char kLiteral = 'u';    // unquoted literal: globs and braces apply
inline constexpr char kQuoted = 'q';     // quoted or escaped literal
inline constexpr char kExpStart = 'e';   // first byte of an unquoted expansion
inline constexpr char kExpRest = 'x';    // further bytes of an unquoted expansion
inline constexpr char kQExpStart = 'E';  // first byte of a quoted expansion ("$X")
inline constexpr char kQExpRest = 'X';   // further bytes of a quoted expansion

// One shell word after quote removal. Expansions ($X, $(...), `...`) keep
// their source text, marked so later steps know they are run-time values.
struct Word {
  std::string text;
  std::string marks;  // one mark per byte of text
  std::string raw;    // the word as written

  static Word Literal(std::string_view text);  // every byte quoted
  void Append(std::string_view s, char mark);
  void AppendExpansion(std::string_view s, bool quoted);
  bool Dynamic() const;  // contains an expansion
  bool HasGlob() const;  // unquoted * ? or [...]
  // Dynamic() or, where the shell globs the word (`glob`), HasGlob().
  bool Expands(bool glob) const { return Dynamic() || (glob && HasGlob()); }
  bool IsOneSubstitution() const;      // exactly one $(...) or `...`, nothing else
  bool IsProcessSubstitution() const;  // exactly one <(...) or >(...)
  Word Substr(size_t pos) const;
};

// $0, $1, ... of an sh -c string; nullopt where the value is dynamic.
using Positionals = std::vector<std::optional<std::string>>;

// What a wrapper hands down to the command it runs.
struct Invocation {
  std::vector<Word> words;
  std::vector<std::string> via;
  std::vector<std::string> writes;
  std::vector<std::string> reads;  // files opened by < and <>
  std::vector<std::string> env;
  bool stdin_piped = false;
  bool strip_assignments = true;  // false for literal argv (no shell)
  bool forced_dynamic = false;    // xargs, find -exec {}, a resolved variable
  std::string forced_note;
  bool is_variant = false;  // built by resolving a variable; never resolved again
  // The first word outside argv that the shell expands at run time (a
  // redirection target or source, a here-string, an assignment value), as
  // written; "" when none. It makes every command emitted from here dynamic.
  std::string hidden_expansion;
  std::shared_ptr<const Positionals> positionals;
  int depth = 0;
};

// Bounds on the work and memory one line may cost (docs/security.md, "Judging
// a line costs little"). Past one, the line is ParsedLine::limit.
inline constexpr size_t kMaxCommands = 512;         // simple commands found in one line
inline constexpr int kMaxDepth = 24;                // wrappers and code strings inside each other
inline constexpr int kMaxNesting = 64;              // ( { $( ${ " inside each other, whole line
inline constexpr size_t kMaxSteps = 4096;           // AnalyzeCommand calls per line
inline constexpr size_t kMaxBraceWords = 4096;      // words brace expansion makes, whole line
inline constexpr size_t kMaxBraceBytes = 1 << 20;   // bytes of the words it builds on the way
inline constexpr size_t kMaxArgvWords = 65536;      // words in all commands found, whole line
inline constexpr size_t kMaxArgvBytes = 512 << 10;  // bytes of those words

// State shared by one ParseLine call and every nested code string in it.
struct ParseState {
  ParsedLine* out = nullptr;
  // Literal values assigned to each variable anywhere in the line.
  std::map<std::string, std::set<std::string>> vars;
  // Emitted commands whose words reference variables, resolved at the end.
  std::vector<Invocation> pending;
  size_t steps = 0;
  int nesting = 0;         // open ( { $( ${ " right now, across nested parsers
  size_t brace_words = 0;  // words made by brace expansion so far
  size_t brace_bytes = 0;  // bytes of every word brace expansion built so far
  size_t argv_words = 0;   // words of the commands emitted so far
  size_t argv_bytes = 0;

  void Fail(std::string reason);  // the first error wins
  // A bound of the line's cost was reached: `limit` names it ("brace_words"),
  // `reason` says it to a person. The first error wins.
  void FailLimit(std::string_view limit, std::string reason);
  bool failed() const { return out->error.has_value(); }
};

// Parses `code` as shell code whose commands run in the context `base` (the
// wrappers around it). `label` prefixes error messages ("in `sh -c` code").
// Returns false when the code cannot be parsed (state->out->error is set).
bool ParseCode(std::string_view code, const Invocation& base, std::string_view label,
               ParseState* state);

// Peels wrappers off one simple command and appends the commands it runs.
void AnalyzeCommand(Invocation inv, ParseState* state);

// Brace expansion of unquoted {a,b} and {1..3}, appended to *out in the
// shell's order. Work is linear in the bytes built, and counted in
// state->brace_words and brace_bytes; returns false (state->FailLimit) when
// the line would pass kMaxBraceWords or kMaxBraceBytes.
bool ExpandBraces(const Word& word, ParseState* state, std::vector<Word>* out);

// A command rebuilt with values assigned earlier in the line (X=rm; $X ...).
struct Variant {
  std::vector<Word> words;
  std::string assumption;  // "$X is `rm`"
};
std::vector<Variant> ResolveVariables(const std::vector<Word>& words, const ParseState& state,
                                      const Positionals* positionals, size_t limit);

// NAME=value or NAME+=value with an unquoted NAME.
bool IsAssignment(const Word& word);
// Records a literal NAME=value in state->vars (no-op for dynamic values).
void RecordAssignment(const Word& word, ParseState* state);
std::string Basename(std::string_view path);

// A bare name (found through PATH) or a path in a system bin directory:
// allow rules trust the basename only for these, never for ./ls, and
// wrappers are peeled as themselves only then (./nice is not nice). git only
// by name (see shell_parser.cc).
bool IsTrustedProgramPath(std::string_view argv0);
// "`word` is only known at run time", with long words shortened.
std::string RunTimeNote(std::string_view word);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_SHELL_PARSER_H_
