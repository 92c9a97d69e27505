// The JSON Schema subset checker for tool arguments.
#include "agent/mcp/argument_check.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

bool HasType(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // 2020-12: a number with a zero fractional part is an integer.
    return value.is_number_float() &&
           value.get<double>() == static_cast<int64_t>(value.get<double>());
  }
  if (type == "number") return value.is_number();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "null") return value.is_null();
  return true;  // unknown type names are not ours to judge
}

std::string Article(const std::string& type) {
  return (type == "integer" || type == "object" || type == "array") ? "an " : "a ";
}

std::optional<std::string> CheckType(const json& schema, const json& value) {
  auto it = schema.find("type");
  if (it == schema.end()) return std::nullopt;
  std::vector<std::string> types;
  if (it->is_string()) types.push_back(*it);
  if (it->is_array()) {
    for (const json& t : *it) {
      if (t.is_string()) types.push_back(t);
    }
  }
  if (types.empty()) return std::nullopt;
  for (const std::string& type : types) {
    if (HasType(value, type)) return std::nullopt;
  }
  if (types.size() == 1) return absl::StrCat("must be ", Article(types[0]), types[0]);
  return absl::StrCat("must be one of the types ", absl::StrJoin(types, ", "));
}

std::optional<std::string> CheckEnumAndConst(const json& schema, const json& value) {
  if (auto it = schema.find("const"); it != schema.end() && *it != value) {
    return absl::StrCat("must be ", it->dump());
  }
  auto it = schema.find("enum");
  if (it == schema.end() || !it->is_array()) return std::nullopt;
  for (const json& allowed : *it) {
    if (allowed == value) return std::nullopt;
  }
  std::vector<std::string> names;
  for (const json& allowed : *it) names.push_back(allowed.dump());
  return absl::StrCat("must be one of ", absl::StrJoin(names, ", "));
}

std::optional<std::string> CheckBounds(const json& schema, const json& value) {
  auto number = [&](const char* key) -> std::optional<double> {
    auto it = schema.find(key);
    if (it == schema.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  if (value.is_number()) {
    double v = value.get<double>();
    if (auto min = number("minimum"); min && v < *min) return absl::StrCat("must be >= ", *min);
    if (auto max = number("maximum"); max && v > *max) return absl::StrCat("must be <= ", *max);
  }
  if (value.is_string()) {
    double length = static_cast<double>(value.get_ref<const std::string&>().size());
    if (auto min = number("minLength"); min && length < *min) {
      return absl::StrCat("must be at least ", *min, " characters long");
    }
    if (auto max = number("maxLength"); max && length > *max) {
      return absl::StrCat("must be at most ", *max, " characters long");
    }
  }
  if (value.is_array()) {
    double size = static_cast<double>(value.size());
    if (auto min = number("minItems"); min && size < *min) {
      return absl::StrCat("must have at least ", *min, " items");
    }
    if (auto max = number("maxItems"); max && size > *max) {
      return absl::StrCat("must have at most ", *max, " items");
    }
  }
  return std::nullopt;
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

std::optional<ArgumentViolation> Check(const json& schema, const json& value,
                                       const std::string& path);

std::optional<ArgumentViolation> CheckObject(const json& schema, const json& value,
                                             const std::string& path) {
  const json* properties = nullptr;
  if (auto it = schema.find("properties"); it != schema.end() && it->is_object()) {
    properties = &*it;
  }
  if (auto it = schema.find("required"); it != schema.end() && it->is_array()) {
    for (const json& name : *it) {
      if (name.is_string() && !value.contains(name.get<std::string>())) {
        return ArgumentViolation{Join(path, name), "is required"};
      }
    }
  }
  const json* extra = nullptr;
  if (auto it = schema.find("additionalProperties"); it != schema.end()) extra = &*it;
  for (const auto& [key, item] : value.items()) {
    if (properties != nullptr && properties->contains(key)) {
      if (auto violation = Check((*properties)[key], item, Join(path, key))) return violation;
    } else if (extra != nullptr && extra->is_boolean() && !extra->get<bool>()) {
      return ArgumentViolation{Join(path, key), "is not an allowed field"};
    } else if (extra != nullptr && extra->is_object()) {
      if (auto violation = Check(*extra, item, Join(path, key))) return violation;
    }
  }
  return std::nullopt;
}

std::optional<ArgumentViolation> CheckArray(const json& schema, const json& value,
                                            const std::string& path) {
  auto items = schema.find("items");
  if (items == schema.end() || !items->is_object()) return std::nullopt;
  for (size_t i = 0; i < value.size(); ++i) {
    std::string item_path = absl::StrCat(path.empty() ? "arguments" : path, "[", i, "]");
    if (auto violation = Check(*items, value[i], item_path)) return violation;
  }
  return std::nullopt;
}

std::optional<ArgumentViolation> Check(const json& schema, const json& value,
                                       const std::string& path) {
  if (!schema.is_object()) return std::nullopt;  // `true` schemas and the like
  const std::string field = path.empty() ? "arguments" : path;
  if (auto reason = CheckType(schema, value)) return ArgumentViolation{field, *reason};
  if (auto reason = CheckEnumAndConst(schema, value)) return ArgumentViolation{field, *reason};
  if (auto reason = CheckBounds(schema, value)) return ArgumentViolation{field, *reason};
  if (value.is_object()) return CheckObject(schema, value, path);
  if (value.is_array()) return CheckArray(schema, value, path);
  return std::nullopt;
}

}  // namespace

std::optional<ArgumentViolation> CheckArguments(const json& schema, const json& value) {
  return Check(schema, value, "");
}

}  // namespace termbridge::mcp
