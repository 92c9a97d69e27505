// JSON schemas of the terminal tools.
#include "agent/mcp/terminal_tools.h"

namespace termbridge::mcp {
namespace {

nlohmann::json StringMap() {
  return {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}};
}

nlohmann::json InteractiveInputSchema() {
  nlohmann::json str = {{"type", "string"}};
  return {
      {"type", "object"},
      {"properties",
       {{"action",
         {{"type", "string"},
          {"enum",
           {"execute", "read_output", "terminate", "list", "run", "kill", "send", "close",
            "create"}},
          {"description",
           "Canonical actions: execute, read_output, terminate, list. Legacy aliases run, send, "
           "create (execute), kill, close (terminate) are accepted during migration."}}},
        {"invocation",
         {{"type", "object"},
          {"properties",
           {{"mode", {{"type", "string"}, {"enum", {"interactive", "headless"}}}},
            {"intent", {{"type", "string"}, {"enum", {"open_only", "execute_command"}}}}}}}},
        {"correlation",
         {{"type", "object"},
          {"properties", {{"request_id", str}, {"trace_id", str}, {"client_request_id", str}}}}},
        {"runtime",
         {{"type", "object"},
          {"properties",
           {{"workspace_id", str},
            {"cwd", {{"type", "string"}, {"description", "Absolute working directory"}}},
            {"timeout_ms",
             {{"type", "integer"},
              {"minimum", 1},
              {"description",
               "How long execute waits for the command to finish before returning "
               "status 'accepted' with running=true (default 10000)."}}},
            {"adapter_override",
             {{"type", "string"}, {"enum", {"auto", "local", "bundled", "container_bridge"}}}}}}}},
        {"execution",
         {{"type", "object"},
          {"properties",
           {{"command", {{"type", "string"}, {"description", "A shell command line"}}},
            {"args", {{"type", "array"}, {"items", str}}},
            {"env", StringMap()},
            {"terminal_name",
             {{"type", "string"},
              {"maxLength", 256},
              {"description",
               "A name for the terminal this execute opens, shown to the person (default: "
               "its directory and first command)"}}}}}}},
        {"target",
         {{"type", "object"}, {"properties", {{"session_id", str}, {"terminal_id", str}}}}},
        {"compat",
         {{"type", "object"}, {"properties", {{"legacy_action", str}, {"caller_surface", str}}}}},
        {"cursor",
         {{"type", "integer"},
          {"minimum", 0},
          {"description", "read_output: continue from this byte offset (result.cursor)"}}},
        {"max_bytes",
         {{"type", "integer"},
          {"minimum", 0},
          {"description",
           "execute, read_output: output budget in bytes (default 16384). Over it you get the "
           "head and the tail with omitted_bytes; result.cursor is where the omitted bytes "
           "start"}}},
        {"tail",
         {{"type", "boolean"},
          {"description",
           "execute, read_output: with output over max_bytes, also return its tail (default "
           "true); false returns a plain page from the cursor, for reading omitted bytes"}}},
        {"text_output",
         {{"type", "boolean"},
          {"description",
           "execute, read_output: false leaves the output out of the text content (its status "
           "line stays), for programs that read structuredContent: half the bytes to parse "
           "(default true)"}}},
        {"wait_ms",
         {{"type", "integer"},
          {"minimum", 0},
          {"description", "read_output: wait up to this long for new output"}}},
        {"until",
         {{"type", "string"},
          {"enum", {"output", "exit", "idle", "match"}},
          {"description",
           "read_output: what wait_ms waits for: new output (default), the exit, idle_ms "
           "without output, or output matching `match`"}}},
        {"match", {{"type", "string"}, {"description", "read_output until match: an RE2 regex"}}},
        {"idle_ms", {{"type", "integer"}, {"minimum", 1}}},
        {"format", {{"type", "string"}, {"enum", {"clean", "raw", "screen"}}}},
        {"command", {{"type", "string"}, {"description", "Legacy flat form of execution.command"}}},
        {"args", {{"type", "array"}, {"items", str}}},
        {"cwd", str},
        {"session_id", str},
        {"terminal_id", str}}},
      {"required", {"action"}}};
}

nlohmann::json CanonicalOutputSchema() {
  nlohmann::json nullable_str = {{"type", {"string", "null"}}};
  return {{"type", "object"},
          {"properties",
           {{"success", {{"type", "boolean"}}},
            {"action", {{"type", "string"}}},
            {"status", {{"type", "string"}, {"enum", {"accepted", "completed", "failed"}}}},
            {"correlation", {{"type", "object"}}},
            {"resolved", {{"type", "object"}}},
            {"identity", {{"type", "object"}}},
            {"result", {{"type", {"object", "null"}}}},
            {"error", {{"type", {"object", "null"}}}},
            {"fallback", {{"type", "object"}}}}},
          {"required", {"success", "action", "status"}}};
}

nlohmann::json Described(nlohmann::json schema, const char* description) {
  schema["description"] = description;
  return schema;
}

nlohmann::json HeadlessInputSchema() {
  nlohmann::json str = {{"type", "string"}};
  nlohmann::json strings = {{"type", "array"}, {"items", str}};
  return {
      {"type", "object"},
      {"properties",
       {{"action",
         {{"type", "string"},
          {"enum", {"run", "read_output", "kill", "get_allowlist", "update_allowlist"}},
          {"description",
           "run: start an allowlisted command; read_output: read a session's output from a "
           "cursor; kill: stop a session; get_allowlist: the rules in force; update_allowlist: "
           "propose rules for a person to approve."}}},
        {"command",
         {{"type", "string"},
          {"description", "run: the program to start (no shell: one argv[0], no operators)"}}},
        {"args", Described(strings, "run: the arguments")},
        {"cwd", {{"type", "string"}, {"description", "run: absolute working directory"}}},
        {"session_id",
         {{"type", "string"}, {"description", "read_output, kill: the session from run"}}},
        {"cursor",
         {{"type", "integer"},
          {"minimum", 0},
          {"description", "read_output: continue from this byte offset (result.cursor)"}}},
        {"max_bytes",
         {{"type", "integer"},
          {"minimum", 0},
          {"description",
           "run, read_output: output budget in bytes (default 16384), shared by stdout and "
           "stderr. Over it you get the head and the tail with omitted_bytes; result.cursor is "
           "where the omitted bytes start"}}},
        {"tail",
         {{"type", "boolean"},
          {"description",
           "run, read_output: with output over max_bytes, also return its tail (default true); "
           "false returns a plain page from the cursor, for reading omitted bytes"}}},
        {"text_output",
         {{"type", "boolean"},
          {"description",
           "run, read_output: false leaves the output out of the text content (its status line "
           "stays), for programs that read structuredContent (default true)"}}},
        {"wait_ms",
         {{"type", "integer"},
          {"minimum", 0},
          {"description", "run, read_output: wait up to this long for the command or new output"}}},
        {"rule",
         Described(strings, "update_allowlist: the rules to propose, e.g. [\"git status\"]")},
        {"reason",
         {{"type", "string"},
          {"description", "update_allowlist: why, shown to the person who decides"}}}}},
      {"required", {"action"}},
      {"additionalProperties", false}};
}

}  // namespace

Tool InteractiveTerminalTool(ToolHandler handler) {
  Tool tool;
  tool.definition = {
      {"name", "memory_terminal_interactive"},
      {"title", "Visible host terminal"},
      {"description",
       "Run commands in a terminal on the host that a person can see and control. "
       "execute starts a command (or opens a terminal with intent open_only) and waits up to "
       "runtime.timeout_ms; if it is still running you get status 'accepted' with session_id and "
       "a cursor. read_output continues from that cursor (wait_ms to wait for more). Output over "
       "the max_bytes budget (16384 by default) comes as its head and tail; read_output from the "
       "cursor reads what was omitted. terminate "
       "interrupts a session or closes a terminal. list shows your sessions. Failures carry a "
       "PM_TERM_* code and a fallback section saying what to do next."},
      {"inputSchema", InteractiveInputSchema()},
      {"outputSchema", CanonicalOutputSchema()},
      {"annotations",
       {{"title", "Visible host terminal"},
        {"readOnlyHint", false},
        {"destructiveHint", true},
        {"idempotentHint", false},
        {"openWorldHint", true}}}};
  tool.handler = std::move(handler);
  tool.validates_own_arguments = true;
  return tool;
}

Tool HeadlessTerminalTool(ToolHandler handler) {
  Tool tool;
  tool.definition = {
      {"name", "memory_terminal"},
      {"title", "Headless allowlisted commands"},
      {"description",
       "Run an allowlisted command headless, next to the agent, without a shell: argv only, no "
       "pipes, redirections or operators, nothing destructive. run starts `command` with `args` "
       "in `cwd` and waits up to wait_ms; if it is still running you get its session_id and a "
       "cursor. read_output continues from that cursor; kill stops a session. get_allowlist "
       "shows the rules in force; update_allowlist proposes rules, which a person must approve "
       "on the host. Use memory_terminal_interactive for anything else. Failures carry a "
       "PM_TERM_* code and a fallback section saying what to do next."},
      {"inputSchema", HeadlessInputSchema()},
      {"outputSchema", CanonicalOutputSchema()},
      {"annotations",
       {{"title", "Headless allowlisted commands"},
        {"readOnlyHint", false},
        {"destructiveHint", false},
        {"idempotentHint", false},
        {"openWorldHint", false}}}};
  tool.handler = std::move(handler);
  return tool;
}

}  // namespace termbridge::mcp
