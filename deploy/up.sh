#!/usr/bin/env bash
# Runs termbridge on this machine: builds if needed, starts termbridge-broker
# on loopback and termbridge-agent serving MCP over Streamable HTTP, then
# prints how to connect an MCP client. Ctrl-C stops both. With --detach it
# leaves them running in the background and prints how to stop them. With
# --no-build it skips setup and build and runs what the build dir holds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DETACH=0
BUILD=1
for arg in "$@"; do
  case "$arg" in
    --detach) DETACH=1 ;;
    --no-build) BUILD=0 ;;
    *) echo "usage: deploy/up.sh [--detach] [--no-build]" >&2; exit 2 ;;
  esac
done

if ((BUILD)); then
  deploy/setup.sh
  deploy/build.sh >/dev/null
fi
BUILD_DIR=${TERMBRIDGE_BUILD_DIR:-build}
[[ "$BUILD_DIR" == /* ]] || BUILD_DIR="$ROOT/$BUILD_DIR"
BROKER_BIN="$BUILD_DIR/broker/termbridge-broker"
AGENT_BIN="$BUILD_DIR/agent/termbridge-agent"
CLI_BIN="$BUILD_DIR/broker/cli/termbridge"
for bin in "$BROKER_BIN" "$AGENT_BIN" "$CLI_BIN"; do
  [[ -x "$bin" ]] || { echo "up: $bin is missing; run deploy/build.sh (or up.sh without --no-build)" >&2; exit 1; }
done

STATE_DIR=${TERMBRIDGE_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/termbridge}
BROKER_LISTEN=${TERMBRIDGE_LISTEN:-127.0.0.1:45459}
AGENT_HTTP=${TERMBRIDGE_AGENT_HTTP:-127.0.0.1:45461}
CONSOLE=${TERMBRIDGE_CONSOLE:-127.0.0.1:45460}
# Everything up.sh starts stays on this machine's loopback, so it also runs
# where this machine is itself a container (a dev container, a CI sandbox):
# the person is whoever uses this machine, through the console or watch. The
# broker says so in its log, and so does up.sh below.
# TERMBRIDGE_ALLOW_IN_CONTAINER=false restores the broker's refusal.
export TERMBRIDGE_ALLOW_IN_CONTAINER=${TERMBRIDGE_ALLOW_IN_CONTAINER:-true}
mkdir -p "$STATE_DIR" && chmod 700 "$STATE_DIR"
rm -f "$STATE_DIR/broker.ready.json" "$STATE_DIR/agent.ready.json"
touch "$STATE_DIR/broker.log" "$STATE_DIR/agent.log"
# Where this run's lines start in each log (the logs are appended to).
BROKER_LOG_FROM=$(($(stat -c %s "$STATE_DIR/broker.log") + 1))
AGENT_LOG_FROM=$(($(stat -c %s "$STATE_DIR/agent.log") + 1))

# The lines process `$1` logged since this run started.
this_run_log() {
  local from=BROKER_LOG_FROM
  [[ $1 == agent ]] && from=AGENT_LOG_FROM
  tail -c +"${!from}" "$STATE_DIR/$1.log"
}

wait_for() {  # file, pid, what
  for _ in $(seq 1 200); do
    [[ -s "$1" ]] && return 0
    if ! kill -0 "$2" 2>/dev/null; then
      echo "up: $3 exited; its last log lines ($STATE_DIR/$3.log):" >&2
      this_run_log "$3" | tail -n 5 | sed 's/^/  /' >&2
      exit 1
    fi
    sleep 0.05
  done
  echo "up: $3 did not become ready; see $STATE_DIR/$3.log" >&2
  exit 1
}

"$BROKER_BIN" --listen "$BROKER_LISTEN" --state-dir "$STATE_DIR" \
  --console "$CONSOLE" --ready-file "$STATE_DIR/broker.ready.json" </dev/null >>"$STATE_DIR/broker.log" 2>&1 &
BROKER_PID=$!
wait_for "$STATE_DIR/broker.ready.json" "$BROKER_PID" broker
BROKER_PORT=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$STATE_DIR/broker.ready.json")
BROKER_ADDR=$(sed -n 's/.*"grpc_address":"\([^"]*\)".*/\1/p' "$STATE_DIR/broker.ready.json")
CONSOLE_URL=$(sed -n 's/.*"console_url":"\([^"]*\)".*/\1/p' "$STATE_DIR/broker.ready.json")
IN_CONTAINER=$(this_run_log broker | sed -n 's/.*event=running_in_container signs="\([^"]*\)".*/\1/p')
IN_CONTAINER=${IN_CONTAINER%%$'\n'*}  # the first such line (one per broker start)

# The agent requires a bearer token on HTTP: it makes one on its first start
# in its state dir ($STATE_DIR/agent-http-token, mode 0600).
TERMBRIDGE_STATE_DIR="$STATE_DIR" \
PM_INTERACTIVE_TERMINAL_HOST_PORT=$BROKER_PORT \
TERMBRIDGE_BRIDGE_TOKEN_FILE="$STATE_DIR/agent-token" \
  "$AGENT_BIN" --http "$AGENT_HTTP" --ready-file "$STATE_DIR/agent.ready.json" \
  </dev/null >>"$STATE_DIR/agent.log" 2>&1 &
AGENT_PID=$!
wait_for "$STATE_DIR/agent.ready.json" "$AGENT_PID" agent
AGENT_URL=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$STATE_DIR/agent.ready.json")
AGENT_TOKEN_FILE=$(sed -n 's/.*"token_file":"\([^"]*\)".*/\1/p' "$STATE_DIR/agent.ready.json")
AGENT_TOKEN=$(cat "$AGENT_TOKEN_FILE")

cat <<INFO
termbridge is up.
  broker  pid $BROKER_PID  gRPC $BROKER_ADDR (grpcurl -plaintext $BROKER_ADDR list)
  agent   pid $AGENT_PID  MCP  $AGENT_URL
  logs    $STATE_DIR/broker.log, $STATE_DIR/agent.log

Every command an agent runs waits until a person can see its terminal (a
native window when there is a display, the web console, or watch/attach):
  web console  $CONSOLE_URL
               (the link logs you in; it holds the operator token)
  in a shell   $CLI_BIN --state-dir $STATE_DIR watch
  approvals    $CLI_BIN --state-dir $STATE_DIR approvals watch

Connect an MCP client over Streamable HTTP (the token is in $AGENT_TOKEN_FILE;
keep this configuration private):
  { "mcpServers": { "termbridge": { "type": "http", "url": "$AGENT_URL",
      "headers": { "Authorization": "Bearer $AGENT_TOKEN" } } } }

Or run the agent over stdio from the client:
  { "mcpServers": { "termbridge": {
      "command": "$AGENT_BIN",
      "env": { "PM_INTERACTIVE_TERMINAL_HOST_PORT": "$BROKER_PORT",
               "TERMBRIDGE_BRIDGE_TOKEN_FILE": "$STATE_DIR/agent-token" } } } }
INFO
if [[ -n "$IN_CONTAINER" ]]; then
  cat <<INFO

Note: this machine looks like a container ($IN_CONTAINER).
The broker runs here anyway, on loopback, so its terminals run in this
container, not on a host. To serve agents in containers from your host, run
the broker on the host (docs/operating.md: "Running the broker on a host").
INFO
fi

if ((DETACH)); then
  echo "Stop them with: kill $AGENT_PID $BROKER_PID"
  exit 0
fi
trap 'kill $AGENT_PID $BROKER_PID 2>/dev/null; wait' EXIT INT TERM HUP
echo "Ctrl-C stops both."
wait
