// SEP-2243 header decoding and header/body agreement.
#include "agent/mcp/http_headers.h"

#include <cmath>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/mcp/protocol.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

constexpr std::string_view kBase64Prefix = "=?base64?";
constexpr std::string_view kBase64Suffix = "?=";

bool IsHeaderSafe(std::string_view value) {
  for (unsigned char c : value) {
    if (c == '\t') continue;
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

bool IsStrictBase64(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return false;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/';
    if (c == '=') {
      ++padding;
      continue;
    }
    if (!alphabet || padding > 0) return false;  // padding only at the end
  }
  return padding <= 2;
}

// One x-mcp-header annotation: the header name suffix and the property path.
struct MirroredParam {
  std::string header;
  std::vector<std::string> path;
  std::string type;
};

void CollectMirroredParams(const json& schema, std::vector<std::string>& path,
                           std::vector<MirroredParam>& out) {
  if (!schema.is_object()) return;
  auto properties = schema.find("properties");
  if (properties == schema.end() || !properties->is_object()) return;
  for (const auto& [key, property] : properties->items()) {
    if (!property.is_object()) continue;
    path.push_back(key);
    if (auto header = property.find("x-mcp-header");
        header != property.end() && header->is_string()) {
      out.push_back({header->get<std::string>(), path, property.value("type", "string")});
    }
    CollectMirroredParams(property, path, out);  // reachable through `properties` only
    path.pop_back();
  }
}

const json* ValueAt(const json& root, const std::vector<std::string>& path) {
  const json* node = &root;
  for (const std::string& key : path) {
    if (!node->is_object()) return nullptr;
    auto it = node->find(key);
    if (it == node->end()) return nullptr;
    node = &*it;
  }
  return node;
}

bool SameValue(const json& body, const std::string& header) {
  if (body.is_string()) return body.get<std::string>() == header;
  if (body.is_boolean()) return header == (body.get<bool>() ? "true" : "false");
  if (body.is_number()) {
    double parsed = 0;
    return absl::SimpleAtod(header, &parsed) && parsed == body.get<double>();
  }
  return false;
}

std::optional<std::string> CheckMirroredParams(const HeaderLookup& header, const json& arguments,
                                               const json& input_schema) {
  std::vector<MirroredParam> params;
  std::vector<std::string> path;
  CollectMirroredParams(input_schema, path, params);
  for (const MirroredParam& param : params) {
    const std::string name = absl::StrCat("Mcp-Param-", param.header);
    const json* value = ValueAt(arguments, param.path);
    std::optional<std::string> raw = header(name);
    if (value == nullptr || value->is_null()) continue;  // header not expected
    if (!raw) return absl::StrCat("Header mismatch: ", name, " is required");
    std::optional<std::string> decoded = DecodeHeaderValue(*raw);
    if (!decoded) return absl::StrCat("Header mismatch: ", name, " has an invalid value");
    if (!SameValue(*value, *decoded)) {
      return absl::StrCat("Header mismatch: ", name, " does not match the body value");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> DecodeHeaderValue(std::string_view value) {
  if (!IsHeaderSafe(value)) return std::nullopt;
  if (value.size() < kBase64Prefix.size() + kBase64Suffix.size() ||
      value.substr(0, kBase64Prefix.size()) != kBase64Prefix ||
      value.substr(value.size() - kBase64Suffix.size()) != kBase64Suffix) {
    return std::string(value);
  }
  std::string_view encoded = value.substr(
      kBase64Prefix.size(), value.size() - kBase64Prefix.size() - kBase64Suffix.size());
  std::string decoded;
  if (!IsStrictBase64(encoded) || !absl::Base64Unescape(std::string(encoded), &decoded)) {
    return std::nullopt;
  }
  return decoded;
}

std::optional<std::string> CheckMirroredHeaders(const HeaderLookup& header, const json& message,
                                                const json* input_schema) {
  const std::string method = StringField(message, "method");
  std::optional<std::string> method_header = header("Mcp-Method");
  if (!method_header) return "Header mismatch: Mcp-Method is required";
  if (*method_header != method) {
    return absl::StrCat("Header mismatch: Mcp-Method '", *method_header,
                        "' does not match the body method '", method, "'");
  }
  const json params = message.value("params", json::object());
  const char* name_field = method == "tools/call" || method == "prompts/get" ? "name"
                           : method == "resources/read"                      ? "uri"
                                                                             : nullptr;
  if (name_field == nullptr || !params.is_object() || !params.contains(name_field)) {
    return std::nullopt;
  }
  std::optional<std::string> name_header = header("Mcp-Name");
  if (!name_header) return "Header mismatch: Mcp-Name is required";
  std::optional<std::string> name = DecodeHeaderValue(*name_header);
  if (!name) return "Header mismatch: Mcp-Name has an invalid value";
  if (!params[name_field].is_string() || *name != params[name_field].get<std::string>()) {
    return absl::StrCat("Header mismatch: Mcp-Name does not match the body's params.", name_field);
  }
  if (method == "tools/call" && input_schema != nullptr) {
    return CheckMirroredParams(header, params.value("arguments", json::object()), *input_schema);
  }
  return std::nullopt;
}

}  // namespace termbridge::mcp
