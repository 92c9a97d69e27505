// Log levels and JSON-RPC message builders.
#include "agent/mcp/protocol.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "agent/mcp/json_writer.h"

namespace termbridge::mcp {

int LogLevelRank(std::string_view level) {
  static constexpr std::array<std::string_view, 8> kLevels = {
      "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};
  for (size_t i = 0; i < kLevels.size(); ++i) {
    if (kLevels[i] == level) return static_cast<int>(i);
  }
  return -1;
}

nlohmann::json ErrorReply(const nlohmann::json& id, int code, std::string_view message,
                          const nlohmann::json& data) {
  nlohmann::json error = {{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

nlohmann::json UnsupportedVersionReply(const nlohmann::json& id, std::string_view requested,
                                       Transport transport) {
  return ErrorReply(
      id, kUnsupportedProtocolVersion,
      absl::StrCat("Unsupported protocol version: ", std::string(requested)),
      {{"supported", SupportedProtocolVersions(transport)}, {"requested", requested}});
}

nlohmann::json ResultReply(const nlohmann::json& id, nlohmann::json result) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

nlohmann::json Notification(std::string_view method, nlohmann::json params) {
  return {{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}};
}

std::string Dump(const nlohmann::json& message) {
  std::string out;
  AppendJson(message, &out);
  return out;
}

std::string StringField(const nlohmann::json& object, std::string_view key, std::string fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return fallback;
  return it->get<std::string>();
}

nlohmann::json ObjectField(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nlohmann::json::object();
  auto it = object.find(key);
  if (it == object.end() || !it->is_object()) return nlohmann::json::object();
  return *it;
}

nlohmann::json AnyField(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nlohmann::json() : *it;
}

}  // namespace termbridge::mcp
