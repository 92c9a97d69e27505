// MarkFilter: signed OSC 133 marks out of raw PTY output, secret removed.
#include "broker/session/mark_filter.h"

#include <sys/random.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace termbridge::session {
namespace {

constexpr std::string_view kIntro = "\x1b]133;";

// The kind letter of a mark body "133;X..." or nullopt.
std::optional<ShellMark::Kind> KindOf(char c) {
  switch (c) {
    case 'A':
      return ShellMark::kPromptStart;
    case 'B':
      return ShellMark::kCommandStart;
    case 'C':
      return ShellMark::kOutputStart;
    case 'D':
      return ShellMark::kCommandEnd;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::string NewMarkSecret() {
  unsigned char raw[16];
  size_t got = 0;
  while (got < sizeof raw) {
    ssize_t n = getrandom(raw + got, sizeof raw - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : raw) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

MarkFilter::MarkFilter(std::string secret) : suffix_(absl::StrCat(";tb=", secret)) {}

bool MarkFilter::Signed(std::string_view body, ShellMark* mark) const {
  // body: "133;<kind>[;param...];tb=<secret>"
  if (body.size() < 5 + suffix_.size() || body.substr(body.size() - suffix_.size()) != suffix_) {
    return false;
  }
  body.remove_prefix(4);
  body.remove_suffix(suffix_.size());
  std::optional<ShellMark::Kind> kind = KindOf(body[0]);
  if (!kind || (body.size() > 1 && body[1] != ';')) return false;
  mark->kind = *kind;
  if (body.size() > 2) {
    bool first = true;
    for (absl::string_view param :
         absl::StrSplit(absl::string_view(body.data() + 2, body.size() - 2), ';')) {
      int code;
      uint64_t seq;
      if (first && *kind == ShellMark::kCommandEnd && absl::SimpleAtoi(param, &code)) {
        mark->exit_code = code;
      } else if (param.substr(0, 2) == "n=" && absl::SimpleAtoi(param.substr(2), &seq)) {
        mark->seq = seq;
      }
      first = false;
    }
  }
  return true;
}

bool MarkFilter::Feed(std::string_view bytes, std::string* out, std::vector<ShellMark>* marks) {
  if (held_.empty() && memchr(bytes.data(), '\x1b', bytes.size()) == nullptr) return true;
  std::string joined;
  std::string_view data = bytes;
  const bool had_held = !held_.empty();
  if (had_held) {
    joined = std::move(held_);
    held_.clear();
    joined.append(bytes);
    data = joined;
    out->clear();
  }
  size_t emit_from = 0;  // data[emit_from, i) is output not yet copied to *out
  size_t hold_at = data.size();
  bool changed = had_held;
  size_t i = 0;
  while (i < data.size()) {
    const void* esc = memchr(data.data() + i, '\x1b', data.size() - i);
    if (esc == nullptr) break;
    i = static_cast<size_t>(static_cast<const char*>(esc) - data.data());
    std::string_view rest = data.substr(i);
    if (rest.size() < kIntro.size()) {
      if (kIntro.substr(0, rest.size()) == rest) {
        hold_at = i;
        break;
      }
      ++i;
      continue;
    }
    if (rest.substr(0, kIntro.size()) != kIntro) {
      ++i;
      continue;
    }
    // The terminator: BEL or ESC '\'. CAN, SUB or another ESC abort the OSC.
    size_t j = kIntro.size();
    size_t term = 0;
    bool need_more = false;
    for (; j < rest.size() && j < kMaxMarkBytes; ++j) {
      const char c = rest[j];
      if (c == '\x07') {
        term = 1;
        break;
      }
      if (c == '\x1b') {
        if (j + 1 >= rest.size()) need_more = true;
        if (j + 1 < rest.size() && rest[j + 1] == '\\') term = 2;
        break;
      }
      if (c == '\x18' || c == '\x1a') break;
    }
    if (term == 0) {
      if ((need_more || j >= rest.size()) && rest.size() < kMaxMarkBytes) {
        hold_at = i;
        break;
      }
      ++i;  // not a mark we can read: it stays output
      continue;
    }
    ShellMark mark;
    if (!Signed(rest.substr(2, j - 2), &mark)) {
      ++i;  // unsigned: output like any other
      continue;
    }
    if (!changed) out->clear();
    changed = true;
    out->append(data.substr(emit_from, i - emit_from));
    mark.offset = out->size();
    absl::StrAppend(out, "\x1b]133;", std::string(1, "ABCD"[mark.kind]));
    if (mark.kind == ShellMark::kCommandEnd && mark.exit_code) {
      absl::StrAppend(out, ";", *mark.exit_code);
    }
    out->push_back('\x07');
    mark.end_offset = out->size();
    marks->push_back(mark);
    i += j + term;
    emit_from = i;
  }
  if (hold_at < data.size()) {
    held_ = std::string(data.substr(hold_at));
    if (!changed) out->clear();
    changed = true;
  }
  if (!changed) return true;
  out->append(data.substr(emit_from, hold_at - emit_from));
  return false;
}

std::string MarkFilter::Flush() {
  std::string out;
  out.swap(held_);
  return out;
}

}  // namespace termbridge::session
