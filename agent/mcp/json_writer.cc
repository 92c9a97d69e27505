// A JSON serializer with nlohmann's compact output and a fast path for strings.
#include "agent/mcp/json_writer.h"

#include <string_view>

#include "common/text/utf8.h"

namespace termbridge::mcp {
namespace {

// What nlohmann writes for a byte below 0x20 or a quote or backslash.
void AppendEscape(unsigned char c, std::string* out) {
  switch (c) {
    case '"':
      *out += "\\\"";
      return;
    case '\\':
      *out += "\\\\";
      return;
    case '\b':
      *out += "\\b";
      return;
    case '\t':
      *out += "\\t";
      return;
    case '\n':
      *out += "\\n";
      return;
    case '\f':
      *out += "\\f";
      return;
    case '\r':
      *out += "\\r";
      return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char escape[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 0xF]};
      out->append(escape, sizeof(escape));
    }
  }
}

// A quoted string: bytes that need no escape are copied a run at a time;
// well-formed UTF-8 sequences are such bytes. A string that is not
// well-formed UTF-8 is left to nlohmann, whose replacement rules decide.
void AppendString(std::string_view s, std::string* out) {
  const size_t mark = out->size();
  out->reserve(mark + s.size() + s.size() / 8 + 2);
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') continue;
    if (c >= 0x80) {
      const size_t length = text::Utf8SequenceLength(s, i);
      if (length == 0) {
        out->resize(mark);
        *out += nlohmann::json(std::string(s))
                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return;
      }
      i += length - 1;
      continue;
    }
    out->append(s.data() + run, i - run);
    AppendEscape(c, out);
    run = i + 1;
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

}  // namespace

void AppendJson(const nlohmann::json& value, std::string* out) {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      AppendString(value.get_ref<const std::string&>(), out);
      return;
    case nlohmann::json::value_t::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, member] : value.items()) {
        if (!first) out->push_back(',');
        first = false;
        AppendString(key, out);
        out->push_back(':');
        AppendJson(member, out);
      }
      out->push_back('}');
      return;
    }
    case nlohmann::json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const nlohmann::json& element : value) {
        if (!first) out->push_back(',');
        first = false;
        AppendJson(element, out);
      }
      out->push_back(']');
      return;
    }
    default:  // null, booleans, numbers, binary: short, and nlohmann's own formats
      *out += value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace termbridge::mcp
