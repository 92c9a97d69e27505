#!/bin/bash
# Entrypoint of the termbridge-agent image: checks the bridge environment
# (docs/configuration.md, 'Agent'), prints what it found, then execs
# termbridge-agent. stdout belongs to MCP on stdio, so everything here goes
# to stderr. A missing or malformed input stops the container with a message
# that names the variable and how to fix it (exit 64).
#
#   termbridge-entrypoint [AGENT FLAGS...]   check, then serve MCP (stdio, or
#                                            HTTP when TERMBRIDGE_AGENT_HTTP is set)
#   termbridge-entrypoint stdio [FLAGS...]   the same on stdio, whatever
#                                            TERMBRIDGE_AGENT_HTTP says
#   termbridge-entrypoint check              only check, probe the broker's port and
#                                            ask the broker through the agent
#   termbridge-entrypoint health             healthcheck: the configuration is valid,
#                                            the broker answers the agent and (HTTP
#                                            mode) the agent serves
#
# Inputs: the contract's PM_* bridge variables, termbridge's TERMBRIDGE_BRIDGE_*
# ones (token, TLS; docs/CONTRACT.md "Environment variables"), and (all optional):
#   TERMBRIDGE_AGENT_HTTP             serve Streamable HTTP on ADDR (e.g. 0.0.0.0:45461)
#   TERMBRIDGE_AGENT_HTTP_TOKEN_FILE  require this bearer token on HTTP (without it
#                                     the agent makes one in its state dir)
#   TERMBRIDGE_AGENT_ID               the agent's name at the broker
#   TERMBRIDGE_PREFLIGHT=0            skip the TCP probe of the broker
set -uo pipefail

log() { printf 'termbridge-entrypoint: %s\n' "$*" >&2; }
errors=0
fail() { log "error: $*"; errors=$((errors + 1)); }

# An integer in [min, max], or empty (the agent's default applies).
check_int() {  # name min max
  local name=$1 value=${!1:-}
  [[ -z "$value" ]] && return 0
  if ! [[ "$value" =~ ^[0-9]+$ ]] || ((10#$value < $2 || 10#$value > $3)); then
    fail "$name='$value' must be an integer in [$2, $3]"
  fi
}

# A file the agent must read, named by variable `name`.
check_file() {  # name what
  local name=$1 file=${!1:-}
  if [[ ! -e "$file" ]]; then
    fail "$name=$file: $2 not found (mount it, for example as a compose secret)"
  elif [[ ! -r "$file" ]]; then
    fail "$name=$file: $2 is not readable by uid $(id -u) (on the host, keep its directory 0700 and make the file readable: see deploy/make-credentials.sh)"
  elif [[ ! -s "$file" ]]; then
    fail "$name=$file: $2 is empty"
  fi
}

# termbridge's own bridge settings were first spelled PM_INTERACTIVE_TERMINAL_*
# although the contract does not define them. A deprecated name still counts
# when its TERMBRIDGE_BRIDGE_* name is unset (with a warning), and the image's
# defaults apply only after that, so a deployment that sets an old name keeps
# its value. The old names are then unset: the agent reads only the new ones.
adopt_renamed_settings() {
  local suffix old new
  for suffix in TOKEN_FILE TLS_CA_FILE TLS_SERVER_NAME TLS_CERT_FILE TLS_KEY_FILE LAUNCH \
    SPAWN_TIMEOUT_MS; do
    old=PM_INTERACTIVE_TERMINAL_$suffix new=TERMBRIDGE_BRIDGE_$suffix
    if [[ -z "${!new+set}" && -n "${!old+set}" ]]; then
      log "warning: $old is deprecated, use $new (its value is used this time)"
      export "$new=${!old}"
    fi
    unset "$old"
  done
  export TERMBRIDGE_BRIDGE_TOKEN_FILE=${TERMBRIDGE_BRIDGE_TOKEN_FILE-/run/secrets/termbridge_agent_token}
  export TERMBRIDGE_BRIDGE_TLS_CA_FILE=${TERMBRIDGE_BRIDGE_TLS_CA_FILE-/run/secrets/termbridge_ca}
}

is_loopback() { [[ "$1" == localhost || "$1" == 127.* || "$1" == ::1 ]]; }

validate() {
  local mode=${PM_TERM_ADAPTER_MODE:-auto}
  mode=${mode,,}
  case "$mode" in
    auto | local | bundled | container_bridge) ;;
    *) fail "PM_TERM_ADAPTER_MODE='$PM_TERM_ADAPTER_MODE' must be auto, local, bundled or container_bridge" ;;
  esac
  if [[ "$mode" == auto && "${PM_RUNNING_IN_CONTAINER:-}" != true ]]; then
    fail "PM_TERM_ADAPTER_MODE=auto needs PM_RUNNING_IN_CONTAINER=true in a container (or set PM_TERM_ADAPTER_MODE=container_bridge)"
  fi
  if [[ "$mode" == local || "$mode" == bundled ]]; then
    log "warning: PM_TERM_ADAPTER_MODE=$mode looks for the broker on this container's loopback"
  fi
  check_int PM_INTERACTIVE_TERMINAL_HOST_PORT 1 65535
  check_int PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS 1 600000
  check_int PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS 1 3600000
  if [[ -z "${TERMBRIDGE_BRIDGE_TOKEN_FILE:-}" ]]; then
    fail "TERMBRIDGE_BRIDGE_TOKEN_FILE is not set: the broker requires the agent token on every call"
  else
    check_file TERMBRIDGE_BRIDGE_TOKEN_FILE "the agent token"
  fi
  # The broker serves containers on a non-loopback address, which it does
  # only with TLS: without a CA the agent could not reach it.
  local alias=${PM_INTERACTIVE_TERMINAL_HOST_ALIAS:-host.containers.internal}
  if [[ -n "${TERMBRIDGE_BRIDGE_TLS_CA_FILE:-}" ]]; then
    check_file TERMBRIDGE_BRIDGE_TLS_CA_FILE "the CA that signed the broker's certificate"
  elif ! is_loopback "$alias"; then
    fail "TERMBRIDGE_BRIDGE_TLS_CA_FILE is not set: a broker on $alias serves only TLS (make the CA with deploy/make-credentials.sh)"
  fi
  if [[ -n "${TERMBRIDGE_BRIDGE_TLS_CERT_FILE:-}" || -n "${TERMBRIDGE_BRIDGE_TLS_KEY_FILE:-}" ]]; then
    if [[ -z "${TERMBRIDGE_BRIDGE_TLS_CERT_FILE:-}" || -z "${TERMBRIDGE_BRIDGE_TLS_KEY_FILE:-}" ]]; then
      fail "TERMBRIDGE_BRIDGE_TLS_CERT_FILE and TERMBRIDGE_BRIDGE_TLS_KEY_FILE go together (mTLS)"
    else
      check_file TERMBRIDGE_BRIDGE_TLS_CERT_FILE "the client certificate"
      check_file TERMBRIDGE_BRIDGE_TLS_KEY_FILE "the client key"
    fi
  fi
  if [[ -n "${TERMBRIDGE_AGENT_HTTP:-}" ]]; then
    if ! [[ "$TERMBRIDGE_AGENT_HTTP" =~ ^.+:[0-9]+$ ]]; then
      fail "TERMBRIDGE_AGENT_HTTP='$TERMBRIDGE_AGENT_HTTP' must be HOST:PORT (e.g. 0.0.0.0:45461)"
    fi
    [[ -n "${TERMBRIDGE_AGENT_HTTP_TOKEN_FILE:-}" ]] &&
      check_file TERMBRIDGE_AGENT_HTTP_TOKEN_FILE "the HTTP bearer token"
  fi
}

# The hosts the agent tries, in its order (agent/bridge/bridge_config.cc).
bridge_hosts() {
  echo "${PM_INTERACTIVE_TERMINAL_HOST_ALIAS:-host.containers.internal}"
  echo "${PM_INTERACTIVE_TERMINAL_HOST_FALLBACK_ALIAS:-host.docker.internal}"
  local gateway
  gateway=$(awk 'NR > 1 && $2 == "00000000" {
      g = $3; printf "%d.%d.%d.%d\n", "0x" substr(g, 7, 2), "0x" substr(g, 5, 2), "0x" substr(g, 3, 2), "0x" substr(g, 1, 2); exit }' \
    /proc/net/route 2>/dev/null)
  [[ -n "$gateway" ]] && echo "$gateway"
}

# Preflight (docs/troubleshooting.md, 'PM_TERM_GUI_UNAVAILABLE'): warns when no
# alias reaches the broker's port. A warning only: the broker may start later,
# and calls then report PM_TERM_GUI_UNAVAILABLE with the aliases tried.
preflight() {
  local port=${PM_INTERACTIVE_TERMINAL_HOST_PORT:-45459} host address reached=""
  local seconds=$(( (${PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS:-3000} + 999) / 1000 ))
  while read -r host; do
    address=$(getent ahostsv4 "$host" 2>/dev/null | awk 'NR == 1 { print $1 }')
    if [[ -z "$address" ]]; then
      log "preflight: $host does not resolve"
      continue
    fi
    if timeout "$seconds" bash -c "exec 3<>/dev/tcp/$address/$port" 2>/dev/null; then
      log "preflight: broker port open at $host ($address):$port"
      reached=$host
      break
    fi
    log "preflight: nothing accepts $host ($address):$port"
  done < <(bridge_hosts)
  if [[ -z "$reached" ]]; then
    log "warning: no broker reachable on port $port; start termbridge-broker on the host with a container listen address (docs/operating.md: Broker on a laptop + agent in compose)"
    return 1
  fi
}

diagnostics() {
  log "uid=$(id -u) mode=${PM_TERM_ADAPTER_MODE:-auto} in_container=${PM_RUNNING_IN_CONTAINER:-} port=${PM_INTERACTIVE_TERMINAL_HOST_PORT:-45459}"
  log "hosts=[$(bridge_hosts | paste -sd ' ')] connect_timeout_ms=${PM_INTERACTIVE_TERMINAL_CONNECT_TIMEOUT_MS:-3000} request_timeout_ms=${PM_INTERACTIVE_TERMINAL_REQUEST_TIMEOUT_MS:-30000}"
  log "token_file=${TERMBRIDGE_BRIDGE_TOKEN_FILE:-} tls_ca_file=${TERMBRIDGE_BRIDGE_TLS_CA_FILE:-none} tls_server_name=${TERMBRIDGE_BRIDGE_TLS_SERVER_NAME:-default} mtls=$([[ -n "${TERMBRIDGE_BRIDGE_TLS_CERT_FILE:-}" ]] && echo yes || echo no)"
  log "mcp=$([[ -n "${TERMBRIDGE_AGENT_HTTP:-}" ]] && echo "http://$TERMBRIDGE_AGENT_HTTP/mcp" || echo stdio) trace_bridge=${PM_INTERACTIVE_TERMINAL_TRACE_BRIDGE:-0}"
}

# The agent's own route to the broker: a second termbridge-agent, on stdio,
# lists its terminals in interactive mode, which takes the bridge (every
# alias, TLS, the token) to the broker and back. Returns 0 when the broker
# answered; else prints the PM_TERM code and message to stderr.
probe_broker() {
  local init list reply
  init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"termbridge-health","version":"1"}}}'
  list='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_terminal_interactive","arguments":{"action":"list","invocation":{"mode":"interactive"}}}}'
  reply=$(printf '%s\n' "$init" '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$list" |
    timeout "${TERMBRIDGE_HEALTH_TIMEOUT_S:-8}" env -u TERMBRIDGE_AGENT_HTTP \
      /usr/local/bin/termbridge-agent 2>/dev/null | grep -F '"id":2')
  [[ "$reply" == *'"isError":false'* ]] && return 0
  if [[ -z "$reply" ]]; then
    log "broker probe: the broker did not answer within ${TERMBRIDGE_HEALTH_TIMEOUT_S:-8} s"
  else
    log "broker probe: $(grep -oE 'PM_TERM_[A-Z_]+: [^\\"]*' <<<"$reply" | head -n 1)"
  fi
  return 1
}

# Healthy when the configuration is valid, the broker answers the agent
# (probe_broker: a broker that is down, refuses the token or fails TLS makes
# the container unhealthy) and, in HTTP mode, the agent answers HTTP on its
# port (any status line: GET /mcp is 405 by design).
health() {
  validate
  ((errors == 0)) || exit 1
  probe_broker || exit 1
  [[ -z "${TERMBRIDGE_AGENT_HTTP:-}" ]] && exit 0
  local port=${TERMBRIDGE_AGENT_HTTP##*:} status
  status=$(timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port
    printf 'GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:$port\r\nConnection: close\r\n\r\n' >&3
    head -n 1 <&3" 2>/dev/null)
  [[ "$status" == HTTP/1.1\ * ]] || { log "health: no HTTP answer on 127.0.0.1:$port"; exit 1; }
  exit 0
}

adopt_renamed_settings
case "${1:-}" in
  stdio) unset TERMBRIDGE_AGENT_HTTP; shift ;;
  health) health ;;
  check)
    diagnostics
    validate
    ((errors == 0)) || exit 64
    preflight || exit 1
    # An open port is not yet an answer: TLS and the token must pass too.
    probe_broker && log "check: the broker answered this agent"
    exit $? ;;
esac

diagnostics
validate
if ((errors)); then
  log "$errors problem(s) in the bridge environment; not starting termbridge-agent"
  exit 64
fi
[[ "${TERMBRIDGE_PREFLIGHT:-1}" == 0 ]] || preflight || true
args=()
if [[ -n "${TERMBRIDGE_AGENT_HTTP:-}" ]]; then
  args+=(--http "$TERMBRIDGE_AGENT_HTTP")
  [[ -n "${TERMBRIDGE_AGENT_HTTP_TOKEN_FILE:-}" ]] && args+=(--http-token-file "$TERMBRIDGE_AGENT_HTTP_TOKEN_FILE")
fi
exec /usr/local/bin/termbridge-agent "${args[@]}" "$@"
