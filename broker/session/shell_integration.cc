// Shell integration: the per-terminal rc files that make bash, zsh and sh
// print signed OSC 133 marks and take commands from a command file, and how
// each shell is started so that it loads only that file (docs/security.md).
#include "broker/session/shell_integration.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "broker/session/mark_filter.h"

namespace termbridge::session {
namespace {

// The private key sequence the bash and zsh bindings load a command on. No
// terminal sends it for a key.
constexpr char kTriggerKeys[] = "\x1b[7700~";

// Every rc file below is written per terminal into the terminal's private
// directory. It starts by reading what only this shell may know (the mark
// secret and the directory) into unexported variables and deleting itself, so
// no program the shell later runs can read the secret from a file or from
// its environment. Marks are signed ";tb=<secret>" (see mark_filter.h).
//
// Commands never pass through the line editor as keystrokes: the broker
// writes the command into <dir>/cmd and types a private key sequence
// (kTriggerKeys) that a key binding turns into "load <dir>/cmd into the
// editor's buffer, then accept it". After a command, the shell prints its
// D mark and waits (up to 2 s) on the FIFO <dir>/ack until the broker has
// discarded input the command did not read, so leftover input never reaches
// the prompt. The broker's ack line is "<seq>", or "<seq> nl" when the
// command's output left text on the cursor's line: the shell then prints a
// newline first, so the line editor's redraw of the prompt line (every loaded
// command causes one) does not erase that text from the screen.

// bash hooks, also used by the sh file when sh is bash. Written in syntax a
// POSIX sh can parse, because shrc holds them in a branch dash never runs.
// PROMPT_COMMAND prints D (only after a command ran) and PS1 prints A and B;
// PS0 (bash >= 4.4) prints C and, through an array subscript evaluated during
// its expansion, records that a command ran. Older bash has no PS0: it gets D
// at every prompt, like sh. @S@ is replaced by the secret.
constexpr char kBashHooks[] = R"(HISTFILE=/dev/null
unset MAILCHECK
set +o histexpand
shopt -s promptvars
__tb_ran=0
__tb_loaded=0
__tb_seq=0
__tb_every_prompt=0
case "$BASH_VERSION" in [123].*|4.[0-3].*) __tb_every_prompt=1 ;; esac
__tb_precmd() {
  # __tb_ec: the command's status, taken first thing in PROMPT_COMMAND.
  # What the shell has become, for the broker's gate (broker/core/shell_state.h):
  # as it was at the first prompt (state0) and after the last command (state).
  if builtin [ "$__tb_fresh" = 1 ]; then __tb_state state0; __tb_fresh=0; fi
  __tb_state state
  # A loaded line that ran nothing (empty, a comment) ends too, exit 0.
  if [ "$__tb_ran" != 1 ] && [ "$__tb_loaded" = 1 ]; then __tb_ec=0; fi
  if [ "$__tb_ran" = 1 ] || [ "$__tb_loaded" = 1 ] || [ "$__tb_every_prompt" = 1 ]; then
    __tb_seq=$((__tb_seq + 1))
    # The FIFO is open while the mark is printed: the broker takes a D only
    # from a shell that holds it (a program printing one does not).
    {
      builtin printf '\033]133;D;%s;n=%s;tb=%s\007' "$__tb_ec" "$__tb_seq" "$__tb_secret"
      while IFS= read -r -t 2 __tb_ack; do
        [ "$__tb_ack" = "$__tb_seq" ] && break
        [ "$__tb_ack" = "$__tb_seq nl" ] && { builtin printf '\n'; break; }
      done
    } < "$__tb_dir/ack"
  fi
  __tb_ran=0
  __tb_loaded=0
}
__tb_load() {
  __tb_loaded=1
  if [ -s "$__tb_dir/cmd" ]; then
    IFS= read -r -d '' READLINE_LINE < "$__tb_dir/cmd"
    : > "$__tb_dir/cmd"
    # bash runs each line of a buffer as a command of its own (PS0 and
    # PROMPT_COMMAND each time); a group makes several lines one command.
    case "$READLINE_LINE" in *"
"*) READLINE_LINE="{ $READLINE_LINE
}" ;; esac
  else
    READLINE_LINE=
  fi
  READLINE_POINT=${#READLINE_LINE}
}
__tb_state() {
  {
    builtin printf 'path %s\nopts %s %s\n' "$PATH" "$SHELLOPTS" "$BASHOPTS"
    builtin printf 'vars %q %q %q\n' "$IFS" "${CDPATH-}" "${GLOBIGNORE-}"
    builtin alias -p
    builtin declare -f
    builtin export -p
    builtin bind -X
    builtin bind -s
    builtin enable -a
    builtin hash -l
    while IFS= builtin read -r __tb_l; do builtin printf '%s\n' "$__tb_l"; done < "$__tb_dir/traps"
  } > "$__tb_dir/$1" 2>/dev/null
}
__tb_fresh=1
# trap -p runs outside any function: there a DEBUG or RETURN trap is not shown.
# The words are quoted (\builtin, \__tb_precmd): no alias set later replaces the hook.
PROMPT_COMMAND='__tb_ec=$?; \builtin trap -p > "$__tb_dir/traps" 2>/dev/null; \__tb_precmd'
PS0='\e]133;C;tb=@S@\a${__tb_nop[__tb_ran=1]:-}'
PS1='\[\e]133;A;tb=@S@\a\]$ \[\e]133;B;tb=@S@\a\]'
PS2='> '
for __tb_map in emacs vi-insert vi-command; do
  bind -m "$__tb_map" -x '"\e[7701~": __tb_load'
  bind -m "$__tb_map" '"\e[7700~": "\e[7701~\C-m"'
done
unset __tb_map
)";

constexpr char kBashRcHeader[] =
    "# termbridge shell integration for bash (generated per terminal; loaded with --rcfile\n"
    "# instead of ~/.bashrc, and deleted once read). OSC 133 marks: A prompt start, B input\n"
    "# start, C output start (PS0), D;<exit> command end (PROMPT_COMMAND).\n";

constexpr char kZshRc[] =
    R"(# termbridge shell integration for zsh (generated per terminal; ZDOTDIR points here
# instead of the user's, deleted once read). OSC 133 marks: A prompt start, B input
# start, C output start (preexec), D;<exit> command end (precmd, after a command ran).
unset ZDOTDIR
HISTFILE=/dev/null
SAVEHIST=0
unsetopt prompt_sp prompt_cr prompt_subst bang_hist
# '#' starts a comment as it does in bash (the gate still asks for any line
# zsh may read otherwise: common/policy/portable_line.h, PortableLineProblem).
setopt interactive_comments
typeset -gi __tb_ran=0 __tb_loaded=0 __tb_seq=0
__tb_precmd() {
  local ec=$? ack
  # A loaded line that ran nothing (empty, a comment) ends too, exit 0.
  (( __tb_ran || ! __tb_loaded )) || ec=0
  if (( __tb_ran || __tb_loaded )); then
    (( ++__tb_seq ))
    {
      builtin printf '\033]133;D;%s;n=%s;tb=%s\007' "$ec" "$__tb_seq" "$__tb_secret"
      while IFS= read -r -t 2 ack; do
        [[ $ack == $__tb_seq ]] && break
        [[ $ack == "$__tb_seq nl" ]] && { builtin printf '\n'; break; }
      done
    } < "$__tb_dir/ack"
  fi
  __tb_ran=0
  __tb_loaded=0
}
__tb_preexec() {
  __tb_ran=1
  builtin printf '\033]133;C;tb=%s\007' "$__tb_secret"
}
__tb_load() {
  local f="$__tb_dir/cmd"
  __tb_loaded=1
  if [[ -s $f ]]; then
    IFS= read -r -d '' BUFFER < "$f"
    : >| "$f"
  else
    BUFFER=
  fi
  zle accept-line
}
zle -N __tb_load
bindkey -M emacs '\e[7700~' __tb_load
bindkey -M viins '\e[7700~' __tb_load
bindkey -M vicmd '\e[7700~' __tb_load
typeset -ga precmd_functions preexec_functions
precmd_functions=(__tb_precmd $precmd_functions)
preexec_functions=($preexec_functions __tb_preexec)
PS1=$'%{\e]133;A;tb=@S@\a%}$ %{\e]133;B;tb=@S@\a%}'
PS2='> '
RPS1=''
)";

constexpr char kShRcHeader[] =
    R"(# termbridge shell integration for POSIX sh (generated per terminal; loaded through
# ENV, deleted once read). A plain sh has no pre-exec hook and no line editor to
# bind: PS1 prints D;$? (the last status), A and B at every prompt, there is no
# C, and commands arrive as the typed line ". <dir>/cmd". When sh is bash, the
# bash hooks run instead.
unset ENV
HISTFILE=/dev/null
case "${BASH_VERSION-}" in
'')
  __tb_esc=$(printf '\033')
  __tb_bel=$(printf '\007')
  PS1="${__tb_esc}]133;D;\$?;tb=@S@${__tb_bel}${__tb_esc}]133;A;tb=@S@${__tb_bel}\$ ${__tb_esc}]133;B;tb=@S@${__tb_bel}"
  PS2='> '
  unset __tb_esc __tb_bel
  ;;
*)
)";

constexpr char kShRcFooter[] = "  ;;\nesac\n";

}  // namespace

std::string ShellQuote(std::string_view word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

namespace {

// The lines every rc starts with: the secret and directory into unexported
// variables, then the file removes itself.
std::string RcPreamble(const std::string& secret, const std::string& dir,
                       const std::string& rc_path) {
  return absl::StrCat("__tb_secret=", secret, "\n__tb_dir=", ShellQuote(dir), "\ncommand rm -f -- ",
                      ShellQuote(rc_path), "\n");
}

std::string WithSecret(const char* text, const std::string& secret) {
  return absl::StrReplaceAll(text, {{"@S@", secret}});
}

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

// What every integrated launch shares: the secret, the command file, the
// key sequence that loads it and the FIFO the shell waits on.
ShellLaunch BaseLaunch(const std::string& dir, const std::string& secret) {
  ShellLaunch launch;
  launch.secret = secret;
  launch.command_file = absl::StrCat(dir, "/cmd");
  launch.trigger = kTriggerKeys;
  launch.ack_fifo = absl::StrCat(dir, "/ack");
  return launch;
}

// The bash hooks write the shell's state (__tb_state) here.
void SetStateFiles(const std::string& dir, ShellLaunch* launch) {
  launch->state_file = absl::StrCat(dir, "/state");
  launch->initial_state_file = absl::StrCat(dir, "/state0");
}

absl::StatusOr<ShellLaunch> PrepareBash(const std::string& shell_path, const std::string& dir,
                                        const std::string& secret) {
  const std::string rc = absl::StrCat(dir, "/bashrc");
  absl::Status s = WriteFileAtomically(
      dir, "bashrc",
      absl::StrCat(kBashRcHeader, RcPreamble(secret, dir, rc), WithSecret(kBashHooks, secret)));
  if (!s.ok()) return s;
  ShellLaunch launch = BaseLaunch(dir, secret);
  launch.argv = {shell_path, "--noprofile", "--rcfile", rc, "-i"};
  launch.integrated = true;
  SetStateFiles(dir, &launch);
  return launch;
}

absl::StatusOr<ShellLaunch> PrepareZsh(const std::string& shell_path, const std::string& dir,
                                       const std::string& secret) {
  std::string zdotdir = absl::StrCat(dir, "/zsh");
  absl::Status s = EnsurePrivateDir(zdotdir);
  const std::string rc = absl::StrCat(zdotdir, "/.zshrc");
  if (s.ok()) {
    s = WriteFileAtomically(zdotdir, ".zshrc",
                            absl::StrCat(RcPreamble(secret, dir, rc), WithSecret(kZshRc, secret)));
  }
  if (!s.ok()) return s;
  ShellLaunch launch = BaseLaunch(dir, secret);
  // -d: skip the global zprofile/zshrc/zlogin; only /etc/zsh/zshenv and our .zshrc run.
  launch.argv = {shell_path, "-d", "-i"};
  launch.extra_env = {{"ZDOTDIR", zdotdir}};
  launch.integrated = true;
  return launch;
}

absl::StatusOr<ShellLaunch> PrepareSh(const std::string& shell_path, const std::string& dir,
                                      const std::string& secret) {
  const std::string rc = absl::StrCat(dir, "/shrc");
  absl::Status s =
      WriteFileAtomically(dir, "shrc",
                          absl::StrCat(RcPreamble(secret, dir, rc), WithSecret(kShRcHeader, secret),
                                       WithSecret(kBashHooks, secret), kShRcFooter));
  if (!s.ok()) return s;
  ShellLaunch launch = BaseLaunch(dir, secret);
  launch.argv = {shell_path, "-i"};
  launch.extra_env = {{"ENV", rc}};
  launch.integrated = Basename(ResolveExecutable(shell_path)) == "bash";
  if (launch.integrated) SetStateFiles(dir, &launch);
  if (!launch.integrated) {
    // No line editor to bind and no hook to wait in: the command arrives as
    // a fixed line that sources the command file.
    // ^U (the tty's line kill) first: a line a person left unfinished at the
    // prompt is erased, not run with the command appended.
    launch.trigger = absl::StrCat("\x15. ", ShellQuote(launch.command_file), "\n");
    launch.ack_fifo.clear();
  }
  return launch;
}

// The terminal's own directory under the runtime dir, created empty and
// private, with the FIFO the shell waits on.
absl::StatusOr<std::string> MakeTerminalDir(const std::string& runtime_dir,
                                            const std::string& terminal_id) {
  if (terminal_id.empty() ||
      terminal_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789_-") != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("unusable terminal id: '", terminal_id, "'"));
  }
  std::string dir = absl::StrCat(runtime_dir, "/", terminal_id);
  if (mkdir(dir.c_str(), 0700) != 0) return ErrnoStatus("mkdir", dir, errno);
  std::string fifo = absl::StrCat(dir, "/ack");
  if (mkfifo(fifo.c_str(), 0600) != 0) return ErrnoStatus("mkfifo", fifo, errno);
  return dir;
}

}  // namespace

ShellKind DetectShell(const std::string& path) {
  std::string name = Basename(path);
  if (name == "bash") return ShellKind::kBash;
  if (name == "zsh") return ShellKind::kZsh;
  if (name == "sh" || name == "dash" || name == "ash") return ShellKind::kSh;
  return ShellKind::kOther;
}

ShellKind ResolvedShellKind(const std::string& shell_path) {
  return DetectShell(ResolveExecutable(shell_path));
}

absl::StatusOr<ShellLaunch> PrepareShell(const std::string& shell_path,
                                         const std::string& runtime_dir,
                                         const std::string& terminal_id) {
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
  if (runtime_dir.find_first_of("$`\\\n\r\t\x1b") != std::string::npos) {
    // sh applies parameter expansion to ENV before reading the file, and a
    // plain sh gets the command file's path typed on its command line.
    return absl::InvalidArgumentError(
        absl::StrCat("runtime dir unusable for shell integration (contains $, `, \\ or a control "
                     "character): ",
                     runtime_dir));
  }
  std::string root = runtime_dir;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  absl::Status s = EnsurePrivateDir(root);
  if (!s.ok()) return s;
  absl::StatusOr<std::string> dir = MakeTerminalDir(root, terminal_id);
  if (!dir.ok()) return dir.status();
  const std::string secret = NewMarkSecret();
  switch (kind) {
    case ShellKind::kBash:
      return PrepareBash(shell_path, *dir, secret);
    case ShellKind::kZsh:
      return PrepareZsh(shell_path, *dir, secret);
    default:
      return PrepareSh(shell_path, *dir, secret);
  }
}

absl::Status WriteCommandFile(const ShellLaunch& launch, std::string_view command) {
  if (command.find('\0') != std::string_view::npos) {
    return absl::InvalidArgumentError("the command holds a NUL byte, which no shell can take");
  }
  size_t slash = launch.command_file.rfind('/');
  if (launch.command_file.empty() || slash == std::string::npos) {
    return absl::FailedPreconditionError("this terminal takes no commands from a file");
  }
  return WriteFileAtomically(launch.command_file.substr(0, slash),
                             launch.command_file.substr(slash + 1), std::string(command));
}

void RemoveTerminalDir(const std::string& runtime_dir, const std::string& terminal_id) {
  if (runtime_dir.empty() || terminal_id.empty() || terminal_id.find('/') != std::string::npos ||
      terminal_id[0] == '.') {
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(absl::StrCat(runtime_dir, "/", terminal_id), ec);
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

}  // namespace termbridge::session
