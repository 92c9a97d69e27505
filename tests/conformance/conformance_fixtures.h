// Test-only tools named by the MCP conformance suite
// (@modelcontextprotocol/conformance): test_simple_text, test_image_content,
// test_tool_with_progress, test_sampling, the input-required (MRTR) tools and
// the rest, each answering exactly as the suite's scenario describes. They
// let the suite exercise the protocol layer (content types, progress,
// logging, server requests, MRTR, header mirroring) on a tools-only server.
// Only the test binary termbridge-agent-conformance (conformance_agent.cc)
// serves them; they do nothing with terminals, and the shipped
// termbridge-agent does not contain them (tests/conformance/shipped_agent.sh
// checks).
#ifndef TERMBRIDGE_TESTS_CONFORMANCE_CONFORMANCE_FIXTURES_H_
#define TERMBRIDGE_TESTS_CONFORMANCE_CONFORMANCE_FIXTURES_H_

#include <vector>

#include "agent/mcp/mcp_server.h"

namespace termbridge::mcp {

std::vector<Tool> ConformanceFixtureTools();

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_TESTS_CONFORMANCE_CONFORMANCE_FIXTURES_H_
