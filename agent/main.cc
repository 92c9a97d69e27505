// termbridge-agent: the MCP server that runs next to an AI agent (usually in
// a container) and sends its interactive terminal work to termbridge-broker.
// The program lives in agent/app (docs/ARCHITECTURE.md); this binary serves
// the terminal tools and nothing else.
#include "agent/app/agent_app.h"

int main(int argc, char** argv) { return termbridge::app::RunAgent(argc, argv); }
