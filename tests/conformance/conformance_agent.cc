// termbridge-agent-conformance: a test-only build of termbridge-agent that
// also serves the MCP conformance suite's fixture tools, so that the suite
// (tests/conformance/run.mjs) can exercise the protocol layer. Everything
// else is the shipped agent's program (agent/app), flags included.
#include "agent/app/agent_app.h"
#include "tests/conformance/conformance_fixtures.h"

int main(int argc, char** argv) {
  return termbridge::app::RunAgent(argc, argv, termbridge::mcp::ConformanceFixtureTools);
}
