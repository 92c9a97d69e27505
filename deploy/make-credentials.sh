#!/usr/bin/env bash
# Makes what a broker needs to serve agents in containers, with openssl:
# a private CA, the broker's server certificate signed by it, the agent
# token, and the token MCP clients present to the agent's HTTP endpoint.
# Prints the broker flags and the agent variables that use them.
#
#   deploy/make-credentials.sh [--dir DIR] [--days N] [--force] [--agent NAME]... [IP_OR_NAME...]
#
# --agent NAME (repeatable) also makes DIR/agents/NAME.token, a token that
# names agent NAME at a broker started with --agent-tokens-dir DIR/agents:
# one per agent service, e.g. --agent compose-http --agent compose-stdio.
#
# DIR defaults to ${XDG_CONFIG_HOME:-~/.config}/termbridge/credentials. The
# certificate's names are localhost, 127.0.0.1, host.containers.internal,
# host.docker.internal, plus every extra argument (the bridge address the
# broker listens on, or a remote host's name). A bridge address differs from
# machine to machine: deploy/up.sh --container asks the engine for it (the
# gateway of the agent container's network); by hand,
#   podman network inspect termbridge_default --format '{{range .Subnets}}{{.Gateway}}{{end}}'
#   docker network inspect termbridge_default --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}'
# Files that exist are kept unless --force; the server certificate is
# made again when the names change.
#
# Modes: DIR is 0700; ca.key and broker.key are 0600. agent-token and
# agent-http-token are 0644
# inside that 0700 directory: nobody else on the host can reach it, and the
# non-root user of the agent image can read it once it is mounted as a
# secret (a bind mount keeps the host's owner and mode).
set -euo pipefail

dir=${XDG_CONFIG_HOME:-$HOME/.config}/termbridge/credentials
days=825
force=0
names=()
agents=()
while (($#)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --force) force=1; shift ;;
    --agent)
      [[ "${2:-}" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$ ]] || {
        echo "make-credentials: --agent needs a name of 1 to 64 of A-Z a-z 0-9 . _ -" >&2; exit 2; }
      agents+=("$2"); shift 2 ;;
    -h | --help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make-credentials: unknown option $1" >&2; exit 2 ;;
    *) names+=("$1"); shift ;;
  esac
done
command -v openssl >/dev/null || { echo "make-credentials: openssl is not installed" >&2; exit 1; }
[[ "$days" =~ ^[0-9]+$ ]] || { echo "make-credentials: --days must be a number" >&2; exit 2; }

umask 077
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
((force)) && rm -f ca.pem ca.key broker.pem broker.key broker.san agent-token agent-http-token

san="DNS:localhost,IP:127.0.0.1,DNS:host.containers.internal,DNS:host.docker.internal"
for name in "${names[@]}"; do
  if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then san+=",IP:$name"; else san+=",DNS:$name"; fi
done

if [[ ! -s ca.pem || ! -s ca.key ]]; then
  openssl req -x509 -newkey rsa:3072 -nodes -days "$days" -subj "/CN=termbridge local CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.pem 2>/dev/null
  rm -f broker.pem  # a new CA invalidates the old server certificate
fi
# A server certificate for other names than asked is made again.
if [[ ! -s broker.pem || ! -s broker.key || "$(cat broker.san 2>/dev/null)" != "$san" ]]; then
  openssl req -newkey rsa:3072 -nodes -subj "/CN=termbridge-broker" \
    -keyout broker.key -out broker.csr 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san" >broker.ext
  openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days "$days" \
    -extfile broker.ext -out broker.pem 2>/dev/null
  rm -f broker.csr broker.ext ca.srl
  echo "$san" >broker.san
fi
if [[ ! -s agent-token ]]; then
  openssl rand -hex 32 >agent-token
fi
if [[ ! -s agent-http-token ]]; then
  openssl rand -hex 32 >agent-http-token
fi
if ((${#agents[@]})); then
  mkdir -p agents
  chmod 700 agents
  for agent in "${agents[@]}"; do
    ((force)) && rm -f "agents/$agent.token"
    [[ -s "agents/$agent.token" ]] || openssl rand -hex 32 >"agents/$agent.token"
    chmod 644 "agents/$agent.token"
  done
  chmod 755 agents  # inside the 0700 DIR: readable by the agent image's user once mounted
fi
chmod 600 ca.key broker.key
chmod 644 ca.pem broker.pem broker.san agent-token agent-http-token

cat <<INFO
termbridge credentials in $dir
  ca.pem ca.key         the CA (keep ca.key private)
  broker.pem broker.key the broker's certificate: $san
  agent-token           the agent token
  agent-http-token      what MCP clients send to the agent on HTTP (Authorization: Bearer ...)

Broker on the host (container listen mode: TLS and the token are required):
  termbridge-broker --listen 0.0.0.0:45459 \\
    --tls-cert $dir/broker.pem --tls-key $dir/broker.key \\
    --agent-token-file $dir/agent-token

Agent (compose.yaml reads TERMBRIDGE_CREDENTIALS_DIR):
  export TERMBRIDGE_CREDENTIALS_DIR=$dir
  TERMBRIDGE_BRIDGE_TLS_CA_FILE=<ca.pem>  TERMBRIDGE_BRIDGE_TOKEN_FILE=<agent-token>
INFO
if ((${#agents[@]})); then
  cat <<INFO

One token per agent (each names its agent; \`termbridge agents list\` shows them):
  add to the broker:  --agent-tokens-dir $dir/agents
INFO
  for agent in "${agents[@]}"; do echo "  agents/$agent.token   agent $agent"; done
  cat <<INFO
  for compose:        export TERMBRIDGE_HTTP_AGENT_TOKEN=agents/<name>.token TERMBRIDGE_STDIO_AGENT_TOKEN=agents/<name>.token
INFO
fi
