// The conformance suite's fixture tools. Each follows the "Server
// Implementation Requirements" of the scenario that calls it.
#include "tests/conformance/conformance_fixtures.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <string>
#include <variant>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace termbridge::mcp {
namespace {

using nlohmann::json;

// A 1x1 red pixel, PNG.
constexpr char kRedPixelPng[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";

json Text(const std::string& text) { return json::array({{{"type", "text"}, {"text", text}}}); }

ToolResult Content(json content, bool is_error = false) {
  ToolResult result;
  result.content = std::move(content);
  result.is_error = is_error;
  return result;
}

ToolResult Failure(int code, std::string message, json data = nullptr) {
  ToolResult result;
  result.rpc_error = RpcError{code, std::move(message), std::move(data)};
  return result;
}

ToolResult InputRequired(json requests, std::string state = "") {
  ToolResult result;
  result.input_required = std::move(requests);
  result.request_state = std::move(state);
  return result;
}

json NoArguments() { return {{"type", "object"}, {"properties", json::object()}}; }

Tool Fixture(std::string name, std::string description, json input_schema, ToolHandler handler) {
  Tool tool;
  tool.definition = {{"name", std::move(name)},
                     {"description", std::move(description)},
                     {"inputSchema", std::move(input_schema)}};
  tool.handler = std::move(handler);
  return tool;
}

// A tenth of a second of 8 kHz, 8-bit mono silence, as a WAV file.
std::string SilentWav() {
  constexpr uint32_t kSamples = 800;
  std::string wav;
  auto u32 = [&wav](uint32_t v) {
    for (int i = 0; i < 4; ++i) wav.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  auto u16 = [&wav](uint16_t v) {
    wav.push_back(static_cast<char>(v & 0xff));
    wav.push_back(static_cast<char>(v >> 8));
  };
  wav += "RIFF";
  u32(36 + kSamples);
  wav += "WAVEfmt ";
  u32(16);
  u16(1);     // PCM
  u16(1);     // mono
  u32(8000);  // sample rate
  u32(8000);  // byte rate
  u16(1);     // block align
  u16(8);     // bits per sample
  wav += "data";
  u32(kSamples);
  wav.append(kSamples, static_cast<char>(0x80));
  return wav;
}

// requestState for the MRTR fixtures: base64(JSON) "." hex(HMAC-SHA256),
// keyed per process, so a tampered or foreign state fails to verify.
class StateSigner {
 public:
  StateSigner() {
    absl::BitGen gen;
    for (auto& byte : key_) byte = absl::Uniform<unsigned char>(gen);
  }
  std::string Sign(const json& state) const {
    std::string payload = absl::Base64Escape(state.dump());
    return absl::StrCat(payload, ".", Mac(payload));
  }
  std::optional<json> Verify(const json& token) const {
    if (!token.is_string()) return std::nullopt;
    std::vector<std::string> parts = absl::StrSplit(token.get<std::string>(), '.');
    std::string text;
    if (parts.size() != 2 || Mac(parts[0]) != parts[1] || !absl::Base64Unescape(parts[0], &text)) {
      return std::nullopt;
    }
    json state = json::parse(text, nullptr, false);
    if (state.is_discarded()) return std::nullopt;
    return state;
  }

 private:
  std::string Mac(const std::string& payload) const {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()),
         reinterpret_cast<const unsigned char*>(payload.data()), payload.size(), out, &length);
    return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(out), length));
  }
  std::array<unsigned char, 32> key_;
};

const StateSigner& Signer() {
  static const auto* signer = new StateSigner();
  return *signer;
}

json Elicit(const std::string& message, const std::string& field, const std::string& type) {
  return {{"method", "elicitation/create"},
          {"params",
           {{"message", message},
            {"requestedSchema",
             {{"type", "object"},
              {"properties", {{field, {{"type", type}}}}},
              {"required", {field}}}}}}};
}

json Sample(const std::string& prompt, int max_tokens) {
  return {{"method", "sampling/createMessage"},
          {"params",
           {{"messages", {{{"role", "user"}, {"content", {{"type", "text"}, {"text", prompt}}}}}},
            {"maxTokens", max_tokens}}}};
}

json ListRoots() { return {{"method", "roots/list"}, {"params", json::object()}}; }

// The client's answer to input request `key`, if it sent a well-formed one.
std::optional<json> Answer(const CallContext& context, const std::string& key) {
  json responses = context.params.value("inputResponses", json());
  if (!responses.is_object() || !responses.contains(key) || !responses[key].is_object()) {
    return std::nullopt;
  }
  return responses[key];
}

// The accepted elicitation content field `field`, if any.
std::optional<json> Accepted(const CallContext& context, const std::string& key,
                             const std::string& field) {
  std::optional<json> answer = Answer(context, key);
  if (!answer || answer->value("action", "") != "accept") return std::nullopt;
  json content = answer->value("content", json());
  if (!content.is_object() || !content.contains(field)) return std::nullopt;
  return content[field];
}

std::string SampledText(const json& answer) {
  json content = answer.value("content", json());
  if (content.is_object()) return content.value("text", "");
  return "";
}

// Capabilities an input request needs, as MissingRequiredClientCapability data.
std::optional<ToolResult> RequireCapability(const CallContext& context, const std::string& name) {
  if (context.client_capabilities.is_object() && context.client_capabilities.contains(name)) {
    return std::nullopt;
  }
  return Failure(kMissingRequiredClientCapability,
                 absl::StrCat("this tool needs the client capability '", name, "'"),
                 {{"requiredCapabilities", {{name, json::object()}}}});
}

std::optional<ToolResult> NeedsStatelessRequest(const CallContext& context) {
  if (context.stateless) return std::nullopt;
  return Content(Text("input-required results need a 2026-07-28 request"), true);
}

// ---- 2025 content, logging, progress and server-request fixtures ----------

std::vector<Tool> ContentFixtures() {
  std::vector<Tool> tools;
  tools.push_back(Fixture("test_simple_text", "Returns a simple text response.", NoArguments(),
                          [](const json&, const CallContext&) {
                            return Content(Text("This is a simple text response for testing."));
                          }));
  tools.push_back(Fixture(
      "test_image_content", "Returns a 1x1 PNG image.", NoArguments(),
      [](const json&, const CallContext&) {
        return Content(
            json::array({{{"type", "image"}, {"data", kRedPixelPng}, {"mimeType", "image/png"}}}));
      }));
  tools.push_back(Fixture("test_audio_content", "Returns a short silent WAV clip.", NoArguments(),
                          [](const json&, const CallContext&) {
                            return Content(json::array({{{"type", "audio"},
                                                         {"data", absl::Base64Escape(SilentWav())},
                                                         {"mimeType", "audio/wav"}}}));
                          }));
  tools.push_back(Fixture(
      "test_embedded_resource", "Returns an embedded text resource.", NoArguments(),
      [](const json&, const CallContext&) {
        return Content(json::array({{{"type", "resource"},
                                     {"resource",
                                      {{"uri", "test://embedded-resource"},
                                       {"mimeType", "text/plain"},
                                       {"text", "This is an embedded resource content."}}}}}));
      }));
  tools.push_back(Fixture(
      "test_multiple_content_types", "Returns text, an image and a resource.", NoArguments(),
      [](const json&, const CallContext&) {
        return Content(
            json::array({{{"type", "text"}, {"text", "Multiple content types test:"}},
                         {{"type", "image"}, {"data", kRedPixelPng}, {"mimeType", "image/png"}},
                         {{"type", "resource"},
                          {"resource",
                           {{"uri", "test://mixed-content-resource"},
                            {"mimeType", "application/json"},
                            {"text", R"({"test":"data","value":123})"}}}}}));
      }));
  tools.push_back(Fixture("test_error_handling", "Always fails with an error result.",
                          NoArguments(), [](const json&, const CallContext&) {
                            return Content(
                                Text("This tool intentionally returns an error for testing"), true);
                          }));
  return tools;
}

ToolResult LogThreeTimes(const CallContext& context) {
  context.log("info", "Tool execution started");
  absl::SleepFor(absl::Milliseconds(50));
  context.log("info", "Tool processing data");
  absl::SleepFor(absl::Milliseconds(50));
  context.log("info", "Tool execution completed");
  return Content(Text("Logging completed"));
}

std::vector<Tool> StreamingFixtures() {
  std::vector<Tool> tools;
  tools.push_back(
      Fixture("test_tool_with_logging", "Sends three log messages while it runs.", NoArguments(),
              [](const json&, const CallContext& context) { return LogThreeTimes(context); }));
  tools.push_back(
      Fixture("test_logging_tool", "Logs at info level; only clients that asked for logs get them.",
              NoArguments(),
              [](const json&, const CallContext& context) { return LogThreeTimes(context); }));
  tools.push_back(Fixture("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.",
                          NoArguments(), [](const json&, const CallContext& context) {
                            context.progress_of(0, 100, "started");
                            absl::SleepFor(absl::Milliseconds(50));
                            context.progress_of(50, 100, "half way");
                            absl::SleepFor(absl::Milliseconds(50));
                            context.progress_of(100, 100, "done");
                            return Content(Text("Progress completed"));
                          }));
  return tools;
}

ToolResult AskClient(const CallContext& context, const std::string& capability,
                     const std::string& method, const json& params, const std::string& prefix) {
  if (!context.client_capabilities.contains(capability)) {
    return Content(Text(absl::StrCat("The client does not support ", capability)), true);
  }
  absl::StatusOr<json> answer = context.ask_client(method, params);
  if (!answer.ok()) return Content(Text(std::string(answer.status().message())), true);
  if (method == "sampling/createMessage") {
    return Content(Text(absl::StrCat(prefix, SampledText(*answer))));
  }
  return Content(Text(absl::StrCat(prefix, "action=", answer->value("action", ""),
                                   ", content=", answer->value("content", json::object()).dump())));
}

json ElicitationDefaultsSchema() {
  return {
      {"type", "object"},
      {"properties",
       {{"name", {{"type", "string"}, {"default", "John Doe"}}},
        {"age", {{"type", "integer"}, {"default", 30}}},
        {"score", {{"type", "number"}, {"default", 95.5}}},
        {"status",
         {{"type", "string"}, {"enum", {"active", "inactive", "pending"}}, {"default", "active"}}},
        {"verified", {{"type", "boolean"}, {"default", true}}}}}};
}

json ElicitationEnumsSchema() {
  json titled = json::array({{{"const", "value1"}, {"title", "First Option"}},
                             {{"const", "value2"}, {"title", "Second Option"}},
                             {{"const", "value3"}, {"title", "Third Option"}}});
  json titled_multi = json::array({{{"const", "value1"}, {"title", "First Choice"}},
                                   {{"const", "value2"}, {"title", "Second Choice"}},
                                   {{"const", "value3"}, {"title", "Third Choice"}}});
  return {{"type", "object"},
          {"properties",
           {{"untitledSingle", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}},
            {"titledSingle", {{"type", "string"}, {"oneOf", titled}}},
            {"legacyEnum",
             {{"type", "string"},
              {"enum", {"opt1", "opt2", "opt3"}},
              {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
            {"untitledMulti",
             {{"type", "array"},
              {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
            {"titledMulti", {{"type", "array"}, {"items", {{"anyOf", titled_multi}}}}}}}};
}

std::vector<Tool> ServerRequestFixtures() {
  std::vector<Tool> tools;
  json prompt_schema = {{"type", "object"},
                        {"properties", {{"prompt", {{"type", "string"}}}}},
                        {"required", {"prompt"}}};
  tools.push_back(Fixture("test_sampling", "Asks the client's LLM to answer a prompt.",
                          prompt_schema, [](const json& arguments, const CallContext& context) {
                            return AskClient(context, "sampling", "sampling/createMessage",
                                             Sample(arguments.value("prompt", ""), 100)["params"],
                                             "LLM response: ");
                          }));
  json message_schema = {{"type", "object"},
                         {"properties", {{"message", {{"type", "string"}}}}},
                         {"required", {"message"}}};
  tools.push_back(Fixture(
      "test_elicitation", "Asks the user for a username and an email address.", message_schema,
      [](const json& arguments, const CallContext& context) {
        json params = {
            {"message", arguments.value("message", "")},
            {"requestedSchema",
             {{"type", "object"},
              {"properties",
               {{"username", {{"type", "string"}, {"description", "User's response"}}},
                {"email", {{"type", "string"}, {"description", "User's email address"}}}}},
              {"required", {"username", "email"}}}}};
        return AskClient(context, "elicitation", "elicitation/create", params, "User response: ");
      }));
  tools.push_back(Fixture("test_elicitation_sep1034_defaults",
                          "Asks the user for values that all have defaults.", NoArguments(),
                          [](const json&, const CallContext& context) {
                            json params = {{"message", "Please review the defaults"},
                                           {"requestedSchema", ElicitationDefaultsSchema()}};
                            return AskClient(context, "elicitation", "elicitation/create", params,
                                             "Elicitation completed: ");
                          }));
  tools.push_back(Fixture(
      "test_elicitation_sep1330_enums", "Asks the user to pick from every kind of enum.",
      NoArguments(), [](const json&, const CallContext& context) {
        json params = {{"message", "Please choose"}, {"requestedSchema", ElicitationEnumsSchema()}};
        return AskClient(context, "elicitation", "elicitation/create", params,
                         "Elicitation completed: ");
      }));
  return tools;
}

// ---- schema, capability and header fixtures --------------------------------

json JsonSchema202012() {
  return {
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"type", "object"},
      {"$defs",
       {{"address",
         {{"$anchor", "addressDef"},
          {"type", "object"},
          {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
      {"properties",
       {{"name", {{"type", "string"}}},
        {"address", {{"$ref", "#/$defs/address"}}},
        {"contactMethod", {{"type", "string"}, {"enum", {"phone", "email"}}}},
        {"phone", {{"type", "string"}}},
        {"email", {{"type", "string"}}}}},
      {"allOf", {{{"anyOf", {{{"required", {"phone"}}}, {{"required", {"email"}}}}}}}},
      {"if",
       {{"properties", {{"contactMethod", {{"const", "phone"}}}}},
        {"required", {"contactMethod"}}}},
      {"then", {{"required", {"phone"}}}},
      {"else", {{"required", {"email"}}}},
      {"additionalProperties", false}};
}

json CustomHeaderSchema() {
  return {{"type", "object"},
          {"properties",
           {{"region",
             {{"type", "string"},
              {"description", "The region, mirrored as Mcp-Param-Region"},
              {"x-mcp-header", "Region"}}},
            {"query", {{"type", "string"}}}}},
          {"required", {"region"}}};
}

std::vector<Tool> ProtocolFixtures() {
  std::vector<Tool> tools;
  tools.push_back(Fixture("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
                          JsonSchema202012(), [](const json& arguments, const CallContext&) {
                            return Content(Text(absl::StrCat("Received: ", arguments.dump())));
                          }));
  tools.push_back(Fixture("test_missing_capability",
                          "Needs the client's sampling capability, and says so if it is missing.",
                          NoArguments(), [](const json&, const CallContext& context) {
                            if (auto missing = RequireCapability(context, "sampling")) {
                              return *missing;
                            }
                            return Content(Text("The client declared sampling"));
                          }));
  tools.push_back(
      Fixture("test_custom_headers",
              "Echoes its arguments; region is mirrored as the Mcp-Param-Region header.",
              CustomHeaderSchema(), [](const json& arguments, const CallContext&) {
                return Content(Text(absl::StrCat("Received: ", arguments.dump())));
              }));
  return tools;
}

// ---- 2026-07-28 input-required (MRTR) fixtures -----------------------------

ToolResult GreetByName(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  if (auto missing = RequireCapability(context, "elicitation")) return *missing;
  std::optional<json> name = Accepted(context, "user_name", "name");
  if (!name || !name->is_string()) {
    return InputRequired({{"user_name", Elicit("What is your name?", "name", "string")}});
  }
  return Content(Text(absl::StrCat("Hello, ", name->get<std::string>(), "!")));
}

ToolResult AnswerCapital(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  if (auto missing = RequireCapability(context, "sampling")) return *missing;
  std::optional<json> answer = Answer(context, "capital_question");
  if (!answer) {
    return InputRequired({{"capital_question", Sample("What is the capital of France?", 100)}});
  }
  return Content(Text(absl::StrCat("The model said: ", SampledText(*answer))));
}

ToolResult ShowRoots(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  if (auto missing = RequireCapability(context, "roots")) return *missing;
  std::optional<json> answer = Answer(context, "client_roots");
  if (!answer || !answer->value("roots", json()).is_array()) {
    return InputRequired({{"client_roots", ListRoots()}});
  }
  std::string uris;
  for (const json& root : (*answer)["roots"]) {
    if (root.is_object()) absl::StrAppend(&uris, uris.empty() ? "" : ", ", root.value("uri", ""));
  }
  return Content(Text(absl::StrCat("Client roots: ", uris)));
}

// Verifies the echoed requestState; an error result when it is missing or forged.
std::variant<json, ToolResult> VerifiedState(const CallContext& context) {
  std::optional<json> state = Signer().Verify(context.params.value("requestState", json()));
  if (!state) {
    return Failure(kInvalidParams,
                   "Invalid params: requestState is missing or failed its "
                   "integrity check");
  }
  return *state;
}

ToolResult ConfirmWithState(const CallContext& context, const std::string& tool) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  if (!context.params.contains("inputResponses")) {
    return InputRequired({{"confirm", Elicit("Please confirm", "ok", "boolean")}},
                         Signer().Sign({{"tool", tool}, {"round", 1}}));
  }
  auto state = VerifiedState(context);
  if (auto* failed = std::get_if<ToolResult>(&state)) return *failed;
  if (std::get<json>(state).value("tool", "") != tool) {
    return Failure(kInvalidParams, "Invalid params: requestState belongs to another tool");
  }
  if (!Accepted(context, "confirm", "ok")) {
    return InputRequired({{"confirm", Elicit("Please confirm", "ok", "boolean")}},
                         Signer().Sign({{"tool", tool}, {"round", 1}}));
  }
  return Content(Text("Confirmed: state-ok"));
}

ToolResult MultipleInputs(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  json all = {{"user_name", Elicit("What is your name?", "name", "string")},
              {"greeting", Sample("Generate a greeting", 50)},
              {"client_roots", ListRoots()}};
  std::string state = Signer().Sign({{"tool", "multiple_inputs"}});
  if (!context.params.contains("inputResponses")) return InputRequired(all, state);
  auto verified = VerifiedState(context);
  if (auto* failed = std::get_if<ToolResult>(&verified)) return *failed;
  json missing = json::object();
  for (const auto& [key, request] : all.items()) {
    if (!Answer(context, key)) missing[key] = request;
  }
  if (!missing.empty()) return InputRequired(missing, state);
  std::optional<json> name = Accepted(context, "user_name", "name");
  return Content(Text(absl::StrCat("Got all three inputs; name=",
                                   name && name->is_string() ? name->get<std::string>() : "?")));
}

ToolResult MultiRound(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  json step1 = {{"step1", Elicit("Step 1: What is your name?", "name", "string")}};
  if (!context.params.contains("inputResponses")) {
    return InputRequired(step1, Signer().Sign({{"tool", "multi_round"}, {"round", 1}}));
  }
  auto verified = VerifiedState(context);
  if (auto* failed = std::get_if<ToolResult>(&verified)) return *failed;
  const json& state = std::get<json>(verified);
  if (state.value("round", 0) == 1) {
    std::optional<json> name = Accepted(context, "step1", "name");
    if (!name || !name->is_string()) {
      return InputRequired(step1, Signer().Sign({{"tool", "multi_round"}, {"round", 1}}));
    }
    return InputRequired(
        {{"step2", Elicit("Step 2: What is your favorite color?", "color", "string")}},
        Signer().Sign({{"tool", "multi_round"}, {"round", 2}, {"name", *name}}));
  }
  std::optional<json> color = Accepted(context, "step2", "color");
  if (!color || !color->is_string()) {
    return InputRequired(
        {{"step2", Elicit("Step 2: What is your favorite color?", "color", "string")}},
        context.params["requestState"].get<std::string>());
  }
  return Content(Text(
      absl::StrCat("Hello ", state.value("name", ""), ", who likes ", color->get<std::string>())));
}

ToolResult OnlyDeclaredInputs(const CallContext& context) {
  if (auto refused = NeedsStatelessRequest(context)) return *refused;
  if (context.params.contains("inputResponses")) return Content(Text("Thanks for the input"));
  const json& caps = context.client_capabilities;
  json requests = json::object();
  if (caps.contains("elicitation"))
    requests["user_name"] = Elicit("What is your name?", "name", "string");
  if (caps.contains("sampling")) requests["greeting"] = Sample("Generate a greeting", 50);
  if (caps.contains("roots")) requests["client_roots"] = ListRoots();
  if (requests.empty()) return Content(Text("The client declared no input capabilities"));
  return InputRequired(requests);
}

std::vector<Tool> InputRequiredFixtures() {
  std::vector<Tool> tools;
  auto add = [&tools](std::string name, std::string description,
                      std::function<ToolResult(const CallContext&)> body) {
    tools.push_back(
        Fixture(std::move(name), std::move(description), NoArguments(),
                [body](const json&, const CallContext& context) { return body(context); }));
  };
  add("test_input_required_result_elicitation", "Asks the user's name, then greets them.",
      GreetByName);
  add("test_streaming_elicitation", "Asks the user's name as an input-required result.",
      GreetByName);
  add("test_input_required_result_sampling", "Asks the client's LLM a question.", AnswerCapital);
  add("test_input_required_result_list_roots", "Asks for the client's roots.", ShowRoots);
  add("test_input_required_result_request_state", "Asks for a confirmation, with signed state.",
      [](const CallContext& context) { return ConfirmWithState(context, "request_state"); });
  add("test_input_required_result_tampered_state", "Rejects a forged requestState.",
      [](const CallContext& context) { return ConfirmWithState(context, "tampered_state"); });
  add("test_input_required_result_multiple_inputs", "Asks for three inputs at once.",
      MultipleInputs);
  add("test_input_required_result_multi_round", "Asks for two inputs, one round each.", MultiRound);
  add("test_input_required_result_capabilities",
      "Asks only for inputs the client declared it can give.", OnlyDeclaredInputs);
  return tools;
}

}  // namespace

std::vector<Tool> ConformanceFixtureTools() {
  std::vector<Tool> tools;
  for (auto group : {ContentFixtures, StreamingFixtures, ServerRequestFixtures, ProtocolFixtures,
                     InputRequiredFixtures}) {
    for (Tool& tool : group()) tools.push_back(std::move(tool));
  }
  return tools;
}

}  // namespace termbridge::mcp
