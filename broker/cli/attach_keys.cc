// Key names and the keystroke filter of `termbridge attach`.
#include "broker/cli/attach_keys.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace termbridge::cli {
namespace {

// The control byte for "]" in Ctrl-], or nullopt.
std::optional<int> ControlOf(char c) {
  if (c == '?') return 0x7f;
  char upper = absl::ascii_toupper(static_cast<unsigned char>(c));
  if (upper >= '@' && upper <= '_') return upper & 0x1f;
  return std::nullopt;
}

}  // namespace

std::optional<int> ParseKey(std::string_view text) {
  std::string lower = absl::AsciiStrToLower(std::string(text));
  if (lower.empty() || lower == "none") return -1;
  for (std::string prefix : {"^", "ctrl-", "ctrl+", "c-"}) {
    if (lower.size() == prefix.size() + 1 && absl::StartsWith(lower, prefix)) {
      return ControlOf(text.back());
    }
  }
  if (text.size() == 1) return static_cast<unsigned char>(text[0]);
  return std::nullopt;
}

std::string KeyName(int key) {
  if (key < 0) return "none";
  if (key == 0x7f) return "Ctrl-?";
  if (key < 0x20) return absl::StrCat("Ctrl-", std::string(1, static_cast<char>(key | 0x40)));
  return std::string(1, static_cast<char>(key));
}

KeyAction KeyFilter::Feed(std::string_view typed, std::string* forward) {
  for (char c : typed) {
    int byte = static_cast<unsigned char>(c);
    if (after_command_) {
      after_command_ = false;
      if (byte == 'k' || byte == 'K') return KeyAction::kClose;
      if (byte == 'd' || byte == 'D') return KeyAction::kDetach;
      if (byte == 'u' || byte == 'U') return KeyAction::kLockUser;
      if (byte == 'a' || byte == 'A') return KeyAction::kLockAgent;
      if (byte == 's' || byte == 'S') return KeyAction::kLockShared;
      forward->push_back(static_cast<char>(command_));
      if (byte != command_) forward->push_back(c);
      continue;
    }
    if (byte == detach_) return KeyAction::kDetach;
    if (byte == command_) {
      after_command_ = true;
      continue;
    }
    forward->push_back(c);
  }
  return KeyAction::kNone;
}

}  // namespace termbridge::cli
