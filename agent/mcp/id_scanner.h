// IdScanner finds the top-level "id" of a JSON-RPC message that is too large
// to parse, by streaming over its bytes once without keeping them. The stdio
// transport refuses such a line, and with the id the client can match the
// error to its request instead of waiting for a reply that never comes
// (clients such as the TypeScript SDK write "id" after "params", so it is
// usually near the end). Only a string or number id is taken; a message
// whose id cannot be found this way is answered with a null id, as
// JSON-RPC prescribes.
#ifndef TERMBRIDGE_AGENT_MCP_ID_SCANNER_H_
#define TERMBRIDGE_AGENT_MCP_ID_SCANNER_H_

#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace termbridge::mcp {

class IdScanner {
 public:
  // The next bytes of the message, in order, in pieces of any size.
  void Feed(std::string_view bytes);
  // The last top-level "id" seen with a string or number value; null if none.
  nlohmann::json id() const;

 private:
  enum class Expect { kOther, kKey, kColon, kValue };
  void Byte(char c);
  void EndOfString();

  int depth_ = 0;  // nesting of objects and arrays outside strings
  bool in_string_ = false;
  bool escaped_ = false;  // the previous byte in a string was a backslash
  Expect expect_ = Expect::kOther;
  bool key_is_id_ = false;
  std::string key_;         // the top-level key being read (only its start)
  bool capturing_ = false;  // reading the value of a top-level "id"
  std::string value_;       // that value's raw JSON text
  std::string id_;          // raw JSON of the last complete id
};

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_ID_SCANNER_H_
