#include "agent/mcp/id_scanner.h"

#include <cctype>

namespace termbridge::mcp {
namespace {

// A longer id is not kept: no client numbers its requests like that.
constexpr size_t kMaxIdBytes = 1024;

bool NumberByte(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.' ||
         c == 'e' || c == 'E';
}

}  // namespace

void IdScanner::Feed(std::string_view bytes) {
  for (char c : bytes) Byte(c);
}

nlohmann::json IdScanner::id() const {
  if (id_.empty()) return nullptr;
  nlohmann::json id = nlohmann::json::parse(id_, nullptr, /*allow_exceptions=*/false);
  if (id.is_string() || id.is_number()) return id;
  return nullptr;
}

void IdScanner::Byte(char c) {
  if (capturing_) {
    if (value_.front() == '"') {  // a string id: up to its closing quote
      if (value_.size() >= kMaxIdBytes) {
        capturing_ = false;
        value_.clear();
        in_string_ = true;  // the rest of the string is skipped as any other
      } else {
        value_.push_back(c);
        if (escaped_) {
          escaped_ = false;
        } else if (c == '\\') {
          escaped_ = true;
        } else if (c == '"') {
          id_ = std::move(value_);
          value_.clear();
          capturing_ = false;
        }
      }
      return;
    }
    if (NumberByte(c) && value_.size() < kMaxIdBytes) {
      value_.push_back(c);
      return;
    }
    id_ = std::move(value_);  // the number ended; `c` is read as usual below
    value_.clear();
    capturing_ = false;
  }
  if (in_string_) {
    const bool reading_key = depth_ == 1 && expect_ == Expect::kKey;
    if (escaped_) {
      escaped_ = false;
    } else if (c == '\\') {
      escaped_ = true;
      if (reading_key) key_.push_back('\\');  // an escaped key is never taken for "id"
    } else if (c == '"') {
      in_string_ = false;
      EndOfString();
    } else if (reading_key && key_.size() < 3) {
      key_.push_back(c);
    }
    return;
  }
  switch (c) {
    case '"':
      if (depth_ == 1 && expect_ == Expect::kValue && key_is_id_) {
        capturing_ = true;
        value_.assign(1, c);
        expect_ = Expect::kOther;
        return;
      }
      in_string_ = true;
      key_.clear();
      return;
    case '{':
    case '[':
      ++depth_;
      if (depth_ == 1) expect_ = c == '{' ? Expect::kKey : Expect::kOther;
      if (depth_ == 2) expect_ = Expect::kOther;  // a top-level value that nests
      return;
    case '}':
    case ']':
      if (depth_ > 0) --depth_;
      return;
    case ':':
      if (depth_ == 1 && expect_ == Expect::kColon) expect_ = Expect::kValue;
      return;
    case ',':
      if (depth_ == 1) expect_ = Expect::kKey;
      return;
    default:
      if (depth_ != 1 || expect_ != Expect::kValue) return;
      if (std::isspace(static_cast<unsigned char>(c))) return;
      if (key_is_id_ && (c == '-' || std::isdigit(static_cast<unsigned char>(c)))) {
        capturing_ = true;
        value_.assign(1, c);
      }
      expect_ = Expect::kOther;  // true, false, null or another key's number
      return;
  }
}

void IdScanner::EndOfString() {
  if (depth_ != 1) return;
  if (expect_ == Expect::kKey) {
    key_is_id_ = key_ == "id";
    expect_ = Expect::kColon;
  } else if (expect_ == Expect::kValue) {
    expect_ = Expect::kOther;  // a string value of another key
  }
}

}  // namespace termbridge::mcp
