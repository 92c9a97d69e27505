#!/usr/bin/env bash
# Runs termbridge on this machine: builds if needed, starts termbridge-broker
# on loopback and termbridge-agent serving MCP over Streamable HTTP, then
# prints how to connect an MCP client: one ready-to-paste block per common
# MCP host (Claude Code, Claude Desktop, Cursor, VS Code, Codex), over HTTP
# and over stdio. Ctrl-C stops both. With --detach it leaves them running
# in the background and prints how to stop them. With --no-build it skips
# setup and build and runs what the build dir holds.
#
# With --container[=podman|docker] the agent runs in compose.yaml's `agent`
# service instead (podman-compose, or docker-compose / docker compose; the
# image is built when missing). up.sh finds the address of the compose
# network's bridge on this machine (`<engine> inspect` of the agent's
# container), names it in the broker's certificate
# (deploy/make-credentials.sh), starts the broker on that address only (not
# on every address of this machine), waits until the container's healthcheck says the agent
# reaches the broker, and prints the clients' configuration: HTTP to the
# published port, stdio through `<engine> exec -i`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DETACH=0
BUILD=1
ENGINE=""
usage() { echo "usage: deploy/up.sh [--detach] [--no-build] [--container[=podman|docker]]" >&2; exit 2; }
for arg in "$@"; do
  case "$arg" in
    --detach) DETACH=1 ;;
    --no-build) BUILD=0 ;;
    --container) ENGINE=auto ;;
    --container=podman | --container=docker) ENGINE=${arg#--container=} ;;
    *) usage ;;
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
# Everything up.sh starts stays on this machine's loopback (and, with
# --container, on the compose network's bridge), so it also runs where this
# machine is itself a container (a dev container, a CI sandbox): the person
# is whoever uses this machine, through the console or watch. The broker
# says so in its log, and so does up.sh below.
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

# Starts the broker with extra flags (at least one --listen); sets
# BROKER_PID, BROKER_PORT, BROKER_ADDR, CONSOLE_URL and IN_CONTAINER.
start_broker() {
  "$BROKER_BIN" --state-dir "$STATE_DIR" "$@" \
    --console "$CONSOLE" --ready-file "$STATE_DIR/broker.ready.json" </dev/null >>"$STATE_DIR/broker.log" 2>&1 &
  BROKER_PID=$!
  wait_for "$STATE_DIR/broker.ready.json" "$BROKER_PID" broker
  BROKER_PORT=$(sed -n 's/.*"grpc_port":\([0-9]*\).*/\1/p' "$STATE_DIR/broker.ready.json")
  BROKER_ADDR=$(sed -n 's/.*"grpc_address":"\([^"]*\)".*/\1/p' "$STATE_DIR/broker.ready.json")
  CONSOLE_URL=$(sed -n 's/.*"console_url":"\([^"]*\)".*/\1/p' "$STATE_DIR/broker.ready.json")
  IN_CONTAINER=$(this_run_log broker | sed -n 's/.*event=running_in_container signs="\([^"]*\)".*/\1/p')
  IN_CONTAINER=${IN_CONTAINER%%$'\n'*}  # the first such line (one per broker start)
}

# --- the clients' configuration --------------------------------------------------
# Each block below is a whole file for its host (or the part to merge into
# it). JSON and TOML basic strings escape \ and " alike.
quoted() { local s=${1//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
json_list() {
  local out="" item
  for item in "$@"; do out+="${out:+, }$(quoted "$item")"; done
  printf '[%s]' "$out"
}
json_env() {  # K=V...
  local out="" kv
  for kv in "$@"; do out+="${out:+, }$(quoted "${kv%%=*}"): $(quoted "${kv#*=}")"; done
  [[ -n $out ]] && printf '{ %s }' "$out" || printf '{}'
}
toml_env() {  # K=V... (keys are bare: A-Z a-z 0-9 _ -)
  local out="" kv
  for kv in "$@"; do out+="${out:+, }${kv%%=*} = $(quoted "${kv#*=}")"; done
  [[ -n $out ]] && printf '{ %s }' "$out" || printf '{}'
}

# Prints every host's configuration for MCP at URL with bearer TOKEN, and
# for stdio through STDIO_COMMAND STDIO_ARGS with STDIO_ENV (arrays).
print_clients() {
  local url=$1 token=$2 cmd args env
  cmd=$(quoted "$STDIO_COMMAND")
  args=$(json_list ${STDIO_ARGS[@]+"${STDIO_ARGS[@]}"})
  env=$(json_env ${STDIO_ENV[@]+"${STDIO_ENV[@]}"})
  cat <<INFO
Connect an MCP client: paste the block for yours into the file named above it
(HTTP carries the agent's token: keep those files private; the token is in
$TOKEN_FILE).

Claude Code, .mcp.json in the project (HTTP):
{ "mcpServers": { "termbridge": { "type": "http", "url": "$url",
    "headers": { "Authorization": "Bearer $token" } } } }

Claude Code .mcp.json, Claude Desktop claude_desktop_config.json, Cursor ~/.cursor/mcp.json (stdio):
{ "mcpServers": { "termbridge": { "command": $cmd,
    "args": $args,
    "env": $env } } }

Cursor, ~/.cursor/mcp.json or .cursor/mcp.json (HTTP):
{ "mcpServers": { "termbridge": { "url": "$url",
    "headers": { "Authorization": "Bearer $token" } } } }

VS Code, .vscode/mcp.json (HTTP):
{ "servers": { "termbridge": { "type": "http", "url": "$url",
    "headers": { "Authorization": "Bearer $token" } } } }

VS Code, .vscode/mcp.json (stdio):
{ "servers": { "termbridge": { "type": "stdio", "command": $cmd,
    "args": $args,
    "env": $env } } }

Codex, ~/.codex/config.toml (HTTP):
[mcp_servers.termbridge]
url = "$url"
http_headers = { Authorization = "Bearer $token" }

Codex, ~/.codex/config.toml (stdio):
[mcp_servers.termbridge]
command = $cmd
args = $args
env = $(toml_env ${STDIO_ENV[@]+"${STDIO_ENV[@]}"})

INFO
}

print_watch() {
  cat <<INFO
Every command an agent runs waits until a person can see its terminal (a
native window when there is a display, the web console, or watch/attach):
  web console  $CONSOLE_URL
               (the link logs you in; it holds the operator token)
  in a shell   $CLI_BIN --state-dir $STATE_DIR watch
  approvals    $CLI_BIN --state-dir $STATE_DIR approvals watch

INFO
}

print_in_container_note() {
  [[ -n "$IN_CONTAINER" ]] || return 0
  cat <<INFO
Note: this machine looks like a container ($IN_CONTAINER).
The broker runs here anyway, so its terminals run in this container, not on
a host. To serve agents in containers from your host, run the broker on the
host (docs/operating.md: "Running the broker on a host").

INFO
}

# --- the agent as a local process ------------------------------------------------
run_local() {
  start_broker --listen "$BROKER_LISTEN"
  # The agent requires a bearer token on HTTP: it makes one on its first start
  # in its state dir ($STATE_DIR/agent-http-token, mode 0600).
  TERMBRIDGE_STATE_DIR="$STATE_DIR" \
  PM_INTERACTIVE_TERMINAL_HOST_PORT=$BROKER_PORT \
  TERMBRIDGE_BRIDGE_TOKEN_FILE="$STATE_DIR/agent-token" \
    "$AGENT_BIN" --http "$AGENT_HTTP" --ready-file "$STATE_DIR/agent.ready.json" \
    </dev/null >>"$STATE_DIR/agent.log" 2>&1 &
  AGENT_PID=$!
  wait_for "$STATE_DIR/agent.ready.json" "$AGENT_PID" agent
  local url
  url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$STATE_DIR/agent.ready.json")
  TOKEN_FILE=$(sed -n 's/.*"token_file":"\([^"]*\)".*/\1/p' "$STATE_DIR/agent.ready.json")
  # stdio: the client starts the agent binary, which finds the broker on
  # loopback with the token the broker made in its state dir.
  STDIO_COMMAND=$AGENT_BIN
  STDIO_ARGS=()
  STDIO_ENV=("PM_INTERACTIVE_TERMINAL_HOST_PORT=$BROKER_PORT" "TERMBRIDGE_BRIDGE_TOKEN_FILE=$STATE_DIR/agent-token")

  cat <<INFO
termbridge is up.
  broker  pid $BROKER_PID  gRPC $BROKER_ADDR (grpcurl -plaintext $BROKER_ADDR list)
  agent   pid $AGENT_PID  MCP  $url
  logs    $STATE_DIR/broker.log, $STATE_DIR/agent.log

INFO
  print_watch
  print_clients "$url" "$(cat "$TOKEN_FILE")"
  print_in_container_note
  if ((DETACH)); then
    echo "Stop them with: kill $AGENT_PID $BROKER_PID"
    exit 0
  fi
  trap 'kill $AGENT_PID $BROKER_PID 2>/dev/null; wait' EXIT INT TERM HUP
  echo "Ctrl-C stops both."
  wait
}

# --- the agent in compose.yaml's `agent` service ------------------------------------
container_tools() {
  if [[ $ENGINE == auto ]]; then
    if command -v podman >/dev/null; then ENGINE=podman; else ENGINE=docker; fi
  fi
  ENGINE_BIN=$(command -v "$ENGINE") || { echo "up: $ENGINE is not installed (deploy/setup.sh installs podman and docker)" >&2; exit 1; }
  if [[ $ENGINE == podman ]]; then
    command -v podman-compose >/dev/null || { echo "up: podman-compose is not installed" >&2; exit 1; }
    COMPOSE=(podman-compose)
  elif command -v docker-compose >/dev/null; then
    COMPOSE=(docker-compose)
  elif docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
  else
    echo "up: neither docker-compose nor docker compose is installed" >&2
    exit 1
  fi
  COMPOSE+=(-p "${TERMBRIDGE_COMPOSE_PROJECT:-termbridge}" -f "$ROOT/compose.yaml")
}

# The compose network's gateway: the address of its bridge on this machine,
# where the container reaches the host (`<engine> inspect` of the container).
bridge_address() {
  "$ENGINE_BIN" inspect "$CONTAINER" \
    --format '{{range $name, $net := .NetworkSettings.Networks}}{{$net.Gateway}} {{end}}' |
    tr ' ' '\n' | grep -E '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$' | head -n 1
}

run_container() {
  container_tools
  export TERMBRIDGE_CREDENTIALS_DIR=${TERMBRIDGE_CREDENTIALS_DIR:-${XDG_CONFIG_HOME:-$HOME/.config}/termbridge/credentials}
  export TERMBRIDGE_BROKER_PORT=${TERMBRIDGE_BROKER_PORT:-45459}
  CONTAINER=${TERMBRIDGE_AGENT_CONTAINER:-termbridge-agent}
  local compose_log=$STATE_DIR/compose.log
  # What compose mounts must exist before the agent starts; the broker's
  # certificate is made once the bridge is known.
  local file
  for file in ca.pem agent-token agent-http-token; do
    [[ -s "$TERMBRIDGE_CREDENTIALS_DIR/$file" ]] ||
      { deploy/make-credentials.sh --dir "$TERMBRIDGE_CREDENTIALS_DIR" >/dev/null; break; }
  done
  # The agent starts first: its network, and so its bridge, exist from then
  # on. Until the broker runs it reports the broker unreachable.
  if ! "${COMPOSE[@]}" up -d agent >>"$compose_log" 2>&1; then
    echo "up: ${COMPOSE[*]} up -d agent failed; its last lines ($compose_log):" >&2
    tail -n 15 "$compose_log" | sed 's/^/  /' >&2
    exit 1
  fi
  local bridge
  bridge=$(bridge_address)
  [[ -n "$bridge" ]] || { echo "up: found no gateway address for $CONTAINER ($ENGINE inspect)" >&2; exit 1; }
  # The certificate names the bridge address too (made again when names change).
  deploy/make-credentials.sh --dir "$TERMBRIDGE_CREDENTIALS_DIR" "$bridge" >/dev/null
  local creds=$TERMBRIDGE_CREDENTIALS_DIR
  start_broker --listen "$bridge:$TERMBRIDGE_BROKER_PORT" \
    --tls-cert "$creds/broker.pem" --tls-key "$creds/broker.key" \
    --agent-token-file "$creds/${TERMBRIDGE_HTTP_AGENT_TOKEN:-agent-token}"
  # The container's own healthcheck: healthy once the broker answers it.
  local health="" _
  for _ in $(seq 1 60); do
    health=$("$ENGINE_BIN" exec "$CONTAINER" /usr/local/bin/termbridge-entrypoint health 2>&1) && { health=ok; break; }
    if ! kill -0 "$BROKER_PID" 2>/dev/null; then
      echo "up: broker exited; its last log lines ($STATE_DIR/broker.log):" >&2
      this_run_log broker | tail -n 5 | sed 's/^/  /' >&2
      exit 1
    fi
    sleep 0.5
  done
  if [[ $health != ok ]]; then
    echo "up: the agent in $CONTAINER does not reach the broker at $bridge:$TERMBRIDGE_BROKER_PORT: $health" >&2
    kill "$BROKER_PID" 2>/dev/null
    exit 1
  fi
  local published url
  published=$("$ENGINE_BIN" port "$CONTAINER" 45461/tcp | head -n 1)
  url="http://${published/0.0.0.0/127.0.0.1}/mcp"
  TOKEN_FILE=$creds/agent-http-token
  # stdio: the client starts a second agent in the running container; it
  # reads the same secrets and environment.
  STDIO_COMMAND=$ENGINE_BIN
  STDIO_ARGS=(exec -i "$CONTAINER" /usr/local/bin/termbridge-entrypoint stdio)
  STDIO_ENV=()
  [[ $ENGINE == docker && -n "${DOCKER_HOST:-}" ]] && STDIO_ENV+=("DOCKER_HOST=$DOCKER_HOST")
  [[ $ENGINE == podman && -n "${CONTAINER_HOST:-}" ]] && STDIO_ENV+=("CONTAINER_HOST=$CONTAINER_HOST")

  cat <<INFO
termbridge is up.
  broker  pid $BROKER_PID  gRPC $bridge:$TERMBRIDGE_BROKER_PORT only (the bridge of the compose
          network, where the container reaches this machine; TLS and the agent token)
  agent   container $CONTAINER ($ENGINE, healthy)  MCP  $url
  logs    $STATE_DIR/broker.log, $ENGINE logs $CONTAINER

INFO
  print_watch
  print_clients "$url" "$(cat "$TOKEN_FILE")"
  print_in_container_note
  local down="${COMPOSE[*]} down"
  if ((DETACH)); then
    echo "Stop them with: kill $BROKER_PID; $down"
    exit 0
  fi
  trap 'kill $BROKER_PID 2>/dev/null; "${COMPOSE[@]}" down >>"$compose_log" 2>&1; wait' EXIT INT TERM HUP
  echo "Ctrl-C stops both."
  wait
}

if [[ -n $ENGINE ]]; then run_container; else run_local; fi
