// Shell integration: the rc files that make bash, zsh and sh print OSC 133
// marks, how each shell is started so that it loads only that file, and the
// streaming parser that finds the marks in PTY output. The rc files are fixed
// text (nothing per terminal), written atomically into a private directory, so
// concurrent PrepareShell calls may share one runtime_dir.
#include "broker/session/shell_integration.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace termbridge::session {
namespace {

// bash hooks, also used by the sh file when sh is bash. Written in syntax a
// POSIX sh can parse, because shrc holds them in a branch dash never runs.
// PROMPT_COMMAND prints D (only after a command ran) and PS1 prints A and B;
// PS0 (bash >= 4.4) prints C and, through an array subscript evaluated during
// its expansion, records that a command ran. Older bash has no PS0: it gets D
// at every prompt, like sh.
constexpr char kBashHooks[] = R"(HISTFILE=/dev/null
unset MAILCHECK
set +o histexpand
shopt -s promptvars
__tb_ran=0
__tb_every_prompt=0
case "$BASH_VERSION" in [123].*|4.[0-3].*) __tb_every_prompt=1 ;; esac
__tb_precmd() {
  __tb_ec=$?
  if [ "$__tb_ran" = 1 ] || [ "$__tb_every_prompt" = 1 ]; then
    builtin printf '\033]133;D;%s\007' "$__tb_ec"
  fi
  __tb_ran=0
}
PROMPT_COMMAND=__tb_precmd
PS0='\e]133;C\a${__tb_nop[__tb_ran=1]:-}'
PS1='\[\e]133;A\a\]$ \[\e]133;B\a\]'
PS2='> '
)";

constexpr char kBashRcHeader[] =
    "# termbridge shell integration for bash (generated; loaded with --rcfile instead of\n"
    "# ~/.bashrc). OSC 133 marks: A prompt start, B input start, C output start (PS0),\n"
    "# D;<exit> command end (PROMPT_COMMAND).\n";

constexpr char kZshRc[] =
    R"(# termbridge shell integration for zsh (generated; ZDOTDIR points here instead of
# the user's). OSC 133 marks: A prompt start, B input start, C output start
# (preexec), D;<exit> command end (precmd, only after a command ran).
unset ZDOTDIR
HISTFILE=/dev/null
SAVEHIST=0
unsetopt prompt_sp prompt_cr prompt_subst bang_hist
typeset -gi __tb_ran=0
__tb_precmd() {
  local ec=$?
  if (( __tb_ran )); then builtin printf '\033]133;D;%s\007' "$ec"; fi
  __tb_ran=0
}
__tb_preexec() {
  __tb_ran=1
  builtin printf '\033]133;C\007'
}
typeset -ga precmd_functions preexec_functions
precmd_functions=(__tb_precmd $precmd_functions)
preexec_functions=($preexec_functions __tb_preexec)
PS1=$'%{\e]133;A\a%}$ %{\e]133;B\a%}'
PS2='> '
RPS1=''
)";

constexpr char kShRcHeader[] =
    R"(# termbridge shell integration for POSIX sh (generated; loaded through ENV).
# A plain sh has no pre-exec hook: PS1 prints D;$? (the last status), A and B at
# every prompt, and there is no C. When sh is bash, the bash hooks run instead.
unset ENV
HISTFILE=/dev/null
case "${BASH_VERSION-}" in
'')
  __tb_esc=$(printf '\033')
  __tb_bel=$(printf '\007')
  PS1="${__tb_esc}]133;D;\$?${__tb_bel}${__tb_esc}]133;A${__tb_bel}\$ ${__tb_esc}]133;B${__tb_bel}"
  PS2='> '
  unset __tb_esc __tb_bel
  ;;
*)
)";

constexpr char kShRcFooter[] = "  ;;\nesac\n";

std::string Basename(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

absl::Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " ", path));
}

// Creates `dir` (and missing parents) with mode 0700, then checks that it is
// a real directory we own that no one else can write to.
absl::Status EnsurePrivateDir(const std::string& dir) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus("mkdir", prefix, errno);
    }
  }
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return ErrnoStatus("lstat", dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("not a directory: ", dir));
  }
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("runtime dir must be ours and not group/world-writable: ", dir));
  }
  return absl::OkStatus();
}

// Writes `content` to dir/name with mode 0600 through a temporary file and a
// rename, so a shell starting concurrently never reads a half-written file.
absl::Status WriteFileAtomically(const std::string& dir, const std::string& name,
                                 const std::string& content) {
  std::string tmp = absl::StrCat(dir, "/.", name, ".XXXXXX");
  int fd = mkstemp(tmp.data());  // creates the file 0600
  if (fd < 0) return ErrnoStatus("mkstemp", tmp, errno);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      unlink(tmp.c_str());
      return ErrnoStatus("write", tmp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (fchmod(fd, 0600) != 0 || close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus("close", tmp, err);
  }
  std::string path = absl::StrCat(dir, "/", name);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus("rename", path, err);
  }
  return absl::OkStatus();
}

// The file `shell_path` runs, with symlinks resolved ("/bin/sh" -> "/usr/bin/dash");
// a name without '/' is looked up in PATH. Empty if it cannot be found.
std::string ResolveExecutable(const std::string& shell_path) {
  std::vector<std::string> candidates;
  if (shell_path.find('/') != std::string::npos) {
    candidates.push_back(shell_path);
  } else {
    const char* path_env = getenv("PATH");
    std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    while (start <= path.size()) {
      size_t colon = path.find(':', start);
      if (colon == std::string::npos) colon = path.size();
      std::string dir = path.substr(start, colon - start);
      candidates.push_back(absl::StrCat(dir.empty() ? "." : dir, "/", shell_path));
      start = colon + 1;
    }
  }
  for (const std::string& candidate : candidates) {
    if (access(candidate.c_str(), X_OK) != 0) continue;
    char resolved[PATH_MAX];
    if (realpath(candidate.c_str(), resolved) != nullptr) return resolved;
  }
  return "";
}

absl::StatusOr<ShellLaunch> PrepareBash(const std::string& shell_path, const std::string& dir) {
  absl::Status s = WriteFileAtomically(dir, "bashrc", absl::StrCat(kBashRcHeader, kBashHooks));
  if (!s.ok()) return s;
  ShellLaunch launch;
  launch.argv = {shell_path, "--noprofile", "--rcfile", absl::StrCat(dir, "/bashrc"), "-i"};
  launch.integrated = true;
  return launch;
}

absl::StatusOr<ShellLaunch> PrepareZsh(const std::string& shell_path, const std::string& dir) {
  std::string zdotdir = absl::StrCat(dir, "/zsh");
  absl::Status s = EnsurePrivateDir(zdotdir);
  if (s.ok()) s = WriteFileAtomically(zdotdir, ".zshrc", kZshRc);
  if (!s.ok()) return s;
  ShellLaunch launch;
  // -d: skip the global zprofile/zshrc/zlogin; only /etc/zsh/zshenv and our .zshrc run.
  launch.argv = {shell_path, "-d", "-i"};
  launch.extra_env = {{"ZDOTDIR", zdotdir}};
  launch.integrated = true;
  return launch;
}

absl::StatusOr<ShellLaunch> PrepareSh(const std::string& shell_path, const std::string& dir) {
  absl::Status s =
      WriteFileAtomically(dir, "shrc", absl::StrCat(kShRcHeader, kBashHooks, kShRcFooter));
  if (!s.ok()) return s;
  ShellLaunch launch;
  launch.argv = {shell_path, "-i"};
  launch.extra_env = {{"ENV", absl::StrCat(dir, "/shrc")}};
  launch.integrated = Basename(ResolveExecutable(shell_path)) == "bash";
  return launch;
}

}  // namespace

ShellKind DetectShell(const std::string& path) {
  std::string name = Basename(path);
  if (name == "bash") return ShellKind::kBash;
  if (name == "zsh") return ShellKind::kZsh;
  if (name == "sh" || name == "dash" || name == "ash") return ShellKind::kSh;
  return ShellKind::kOther;
}

absl::StatusOr<ShellLaunch> PrepareShell(const std::string& shell_path,
                                         const std::string& runtime_dir) {
  if (shell_path.empty()) return absl::InvalidArgumentError("empty shell path");
  ShellKind kind = DetectShell(shell_path);
  if (kind == ShellKind::kOther) {
    ShellLaunch launch;
    launch.argv = {shell_path, "-i"};
    return launch;
  }
  if (runtime_dir.empty() || runtime_dir[0] != '/') {
    // The shell may start in another cwd, so a relative rc path would not resolve.
    return absl::InvalidArgumentError(
        absl::StrCat("runtime dir must be an absolute path: '", runtime_dir, "'"));
  }
  if (kind == ShellKind::kSh && runtime_dir.find_first_of("$`\\") != std::string::npos) {
    // sh applies parameter expansion to ENV before reading the file.
    return absl::InvalidArgumentError(
        absl::StrCat("runtime dir unusable as sh ENV (contains $, ` or \\): ", runtime_dir));
  }
  std::string dir = runtime_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  absl::Status s = EnsurePrivateDir(dir);
  if (!s.ok()) return s;
  switch (kind) {
    case ShellKind::kBash:
      return PrepareBash(shell_path, dir);
    case ShellKind::kZsh:
      return PrepareZsh(shell_path, dir);
    default:
      return PrepareSh(shell_path, dir);
  }
}

const char* ShellMarkName(ShellMark::Kind kind) {
  switch (kind) {
    case ShellMark::kPromptStart:
      return "A";
    case ShellMark::kCommandStart:
      return "B";
    case ShellMark::kOutputStart:
      return "C";
    case ShellMark::kCommandEnd:
      return "D";
  }
  return "?";
}

void Osc133Parser::Feed(uint64_t offset, std::string_view bytes) {
  if (offset < next_offset_) {  // overlap: skip what was already parsed
    uint64_t seen = next_offset_ - offset;
    if (seen >= bytes.size()) return;
    bytes.remove_prefix(static_cast<size_t>(seen));
    offset = next_offset_;
  } else if (offset > next_offset_) {  // gap: a sequence cannot span it
    state_ = State::kGround;
    body_.clear();
    next_offset_ = offset;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (state_ == State::kGround) {
      // Most output holds no escape at all: skip to the next ESC in one scan.
      const void* esc = memchr(bytes.data() + i, '\x1b', bytes.size() - i);
      if (esc == nullptr) break;
      i = static_cast<size_t>(static_cast<const char*>(esc) - bytes.data());
    }
    const uint64_t at = offset + i;
    const char c = bytes[i];
    switch (state_) {
      case State::kGround:
        if (c == '\x1b') {
          esc_offset_ = at;
          state_ = State::kEscape;
        }
        break;
      case State::kEscape:
        if (c == ']') {
          StartOsc(esc_offset_);
        } else if (c == '\x1b') {
          esc_offset_ = at;
        } else {
          state_ = State::kGround;
        }
        break;
      case State::kOsc:
        if (c == '\x07') {
          FinishOsc(at + 1);
        } else if (c == '\x1b') {
          state_ = State::kOscEscape;
        } else if (c == '\x18' || c == '\x1a') {  // CAN, SUB: abort the sequence
          state_ = State::kGround;
        } else if (body_.size() < kMaxOscBytes) {
          body_.push_back(c);
        } else {
          oversized_ = true;
        }
        break;
      case State::kOscEscape:
        // ESC \ ends the OSC; any other ESC sequence aborts it, and a new
        // "ESC ]" starts the next one (so an unterminated OSC cannot hide a mark).
        if (c == '\\') {
          FinishOsc(at + 1);
        } else if (c == ']') {
          StartOsc(at - 1);
        } else if (c == '\x1b') {
          esc_offset_ = at;
          state_ = State::kEscape;
        } else {
          state_ = State::kGround;
        }
        break;
    }
  }
  next_offset_ = offset + bytes.size();
}

std::vector<ShellMark> Osc133Parser::TakeMarks() {
  std::vector<ShellMark> out;
  out.swap(marks_);
  return out;
}

void Osc133Parser::StartOsc(uint64_t esc_offset) {
  esc_offset_ = esc_offset;
  body_.clear();
  oversized_ = false;
  state_ = State::kOsc;
}

void Osc133Parser::FinishOsc(uint64_t end_offset) {
  state_ = State::kGround;
  if (oversized_) return;
  std::string_view body(body_);
  constexpr std::string_view kPrefix = "133;";
  if (body.substr(0, kPrefix.size()) != kPrefix || body.size() == kPrefix.size()) return;
  body.remove_prefix(kPrefix.size());
  // The kind letter, then nothing or ";" and parameters (shells may add key=value options).
  if (body.size() > 1 && body[1] != ';') return;
  ShellMark mark;
  switch (body[0]) {
    case 'A':
      mark.kind = ShellMark::kPromptStart;
      break;
    case 'B':
      mark.kind = ShellMark::kCommandStart;
      break;
    case 'C':
      mark.kind = ShellMark::kOutputStart;
      break;
    case 'D': {
      mark.kind = ShellMark::kCommandEnd;
      if (body.size() > 2) {
        std::string_view param = body.substr(2);
        param = param.substr(0, param.find(';'));
        int code;
        if (absl::SimpleAtoi(std::string(param), &code)) mark.exit_code = code;
      }
      break;
    }
    default:
      return;
  }
  mark.offset = esc_offset_;
  mark.end_offset = end_offset;
  marks_.push_back(mark);
}

}  // namespace termbridge::session
