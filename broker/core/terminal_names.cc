// Cleaning and deriving terminal names (terminal_names.h).
#include "broker/core/terminal_names.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/text/utf8.h"
#include "common/text/visible.h"

namespace termbridge::core {
namespace {

bool Space(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x00A0 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000 || cp == 0x1680;
}

}  // namespace

std::string CleanTerminalName(std::string_view raw) {
  std::string out;
  bool pending_space = false;
  for (size_t i = 0; i < raw.size();) {
    size_t len = text::Utf8SequenceLength(raw, i);
    if (len == 0) {  // not UTF-8: dropped
      ++i;
      continue;
    }
    uint32_t cp = text::DecodeUtf8(raw, i, len);
    std::string_view piece = raw.substr(i, len);
    i += len;
    if (Space(cp)) {
      pending_space = !out.empty();
      continue;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || text::Invisible(cp)) continue;
    size_t needed = piece.size() + (pending_space ? 1 : 0);
    if (out.size() + needed > kMaxTerminalName) break;
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.append(piece);
  }
  return out;
}

std::string DerivedTerminalName(std::string_view cwd, std::string_view command) {
  while (cwd.size() > 1 && cwd.back() == '/') cwd.remove_suffix(1);
  size_t slash = cwd.rfind('/');
  std::string_view dir =
      slash == std::string_view::npos || cwd.size() == 1 ? cwd : cwd.substr(slash + 1);
  while (!command.empty() && absl::ascii_isspace(static_cast<unsigned char>(command.front()))) {
    command.remove_prefix(1);
  }
  std::string_view word = command.substr(0, command.find_first_of(" \t\n;|&()<>"));
  if (size_t last = word.rfind('/'); last != std::string_view::npos) word = word.substr(last + 1);
  std::string name = CleanTerminalName(dir);
  std::string program = CleanTerminalName(word);
  if (name.empty()) return CleanTerminalName(program);
  if (program.empty()) return name;
  return CleanTerminalName(absl::StrCat(name, ": ", program));
}

}  // namespace termbridge::core
