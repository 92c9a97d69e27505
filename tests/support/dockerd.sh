#!/usr/bin/env bash
# A private Docker daemon for the tests that run termbridge under docker
# (tests/e2e/docker.test.mjs, tests/e2e/parity.test.mjs): started on a socket
# of its own, stopped and cleaned up so that podman keeps working afterwards
# (no docker0, no DOCKER iptables chains, the FORWARD policy as it was).
#
#   dockerd.sh start DIR   starts dockerd with its socket, exec root and log
#                          in DIR, waits until it answers, loads the base
#                          image from podman when docker lacks it, and prints
#                          the DOCKER_HOST to use (unix://DIR/docker.sock)
#   dockerd.sh stop DIR    removes its containers and networks, stops it and
#                          undoes what it changed on the host
#
# Images live in TERMBRIDGE_DOCKER_DATA_ROOT, by default
# ${TMPDIR:-/tmp}/termbridge-docker: kept between runs, so that a rebuild of
# the agent image without source changes takes seconds, as with podman's
# storage. One daemon at a time uses it (ctest's RESOURCE_LOCK dockerd).
# Exit 3: docker cannot run here (the reason is on stderr; tests skip).
set -uo pipefail

BASE_IMAGE=docker.io/library/debian:bookworm-slim
cmd=${1:-} dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: dockerd.sh start|stop DIR" >&2; exit 2; }
data_root=${TERMBRIDGE_DOCKER_DATA_ROOT:-${TMPDIR:-/tmp}/termbridge-docker}
export DOCKER_HOST=unix://$dir/docker.sock

unavailable() { echo "dockerd.sh: $*" >&2; exit 3; }

# The docker client: Debian's, or any on PATH (both talk to this daemon).
docker_cli() {
  local cli=/usr/bin/docker
  [[ -x $cli ]] || cli=docker
  "$cli" "$@"
}

start() {
  command -v dockerd >/dev/null || unavailable "dockerd is not installed (deploy/setup.sh installs docker.io and docker-compose)"
  command -v iptables >/dev/null || unavailable "iptables is missing"
  [[ $(id -u) == 0 ]] || unavailable "dockerd needs root here"
  ip link show docker0 >/dev/null 2>&1 &&
    unavailable "docker0 exists: another Docker daemon runs on this machine"
  if [[ -s "$data_root/dockerd.owner" ]] && kill -0 "$(cat "$data_root/dockerd.owner")" 2>/dev/null; then
    unavailable "$data_root is in use by dockerd pid $(cat "$data_root/dockerd.owner")"
  fi
  mkdir -p "$dir/exec" "$data_root"
  # What stop restores: the FORWARD policy (dockerd sets DROP) and the
  # bridges that existed before.
  iptables -S FORWARD 2>/dev/null | sed -n 's/^-P FORWARD //p' >"$dir/forward-policy"
  ip -o link show type bridge 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//' >"$dir/bridges-before"
  setsid dockerd --data-root "$data_root" --exec-root "$dir/exec" --pidfile "$dir/docker.pid" \
    -H "$DOCKER_HOST" --storage-driver=overlay2 --exec-opt native.cgroupdriver=cgroupfs \
    </dev/null >"$dir/dockerd.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/dockerd.launched"
  echo "$pid" >"$data_root/dockerd.owner"
  local waited=0
  until docker_cli info >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 5 "$dir/dockerd.log" >&2
      stop >/dev/null 2>&1
      unavailable "dockerd exited at start (log above: $dir/dockerd.log)"
    fi
    ((waited++ < 600)) || { stop >/dev/null 2>&1; unavailable "dockerd did not answer within 60 s"; }
    sleep 0.1
  done
  if ! docker_cli image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    podman image exists "$BASE_IMAGE" 2>/dev/null ||
      { stop >/dev/null 2>&1; unavailable "neither docker nor podman has $BASE_IMAGE (deploy/setup.sh makes it for podman)"; }
    podman save "$BASE_IMAGE" 2>/dev/null | docker_cli load -q >&2 ||
      { stop >/dev/null 2>&1; unavailable "could not load $BASE_IMAGE from podman"; }
  fi
  echo "$DOCKER_HOST"
}

# Every iptables rule and chain dockerd made, in the nat and filter tables
# (rules that jump to its chains or name its bridges; podman's stay).
remove_docker_chains() {
  local table rule chain
  for table in nat filter; do
    iptables -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -vE '^-A DOCKER' |
      grep -E -- '-j DOCKER|docker0|br-[0-9a-f]{12}' |
      while read -r rule; do
        eval "iptables -t $table ${rule/-A/-D}" 2>/dev/null
      done
    for chain in $(iptables -t "$table" -S 2>/dev/null | sed -n 's/^-N \(DOCKER[A-Z0-9-]*\)$/\1/p'); do
      iptables -t "$table" -F "$chain" 2>/dev/null
    done
    for chain in $(iptables -t "$table" -S 2>/dev/null | sed -n 's/^-N \(DOCKER[A-Z0-9-]*\)$/\1/p'); do
      iptables -t "$table" -X "$chain" 2>/dev/null
    done
  done
}

stop() {
  local pid=""
  [[ -s "$dir/dockerd.launched" ]] && pid=$(cat "$dir/dockerd.launched")
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    local ids
    ids=$(docker_cli ps -aq 2>/dev/null)
    [[ -n "$ids" ]] && docker_cli rm -f $ids >/dev/null 2>&1
    docker_cli network prune -f >/dev/null 2>&1
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  # containerd-shim processes that outlived their daemon (they name DIR).
  local shim
  for shim in $(pgrep -f -- "$dir/exec" 2>/dev/null); do kill -KILL "$shim" 2>/dev/null; done
  ip link delete docker0 2>/dev/null
  local bridge
  for bridge in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{ print $2 }' | sed 's/@.*//'); do
    [[ $bridge == br-* ]] && ! grep -qx "$bridge" "$dir/bridges-before" 2>/dev/null &&
      ip link delete "$bridge" 2>/dev/null
  done
  remove_docker_chains
  local policy
  policy=$(cat "$dir/forward-policy" 2>/dev/null)
  [[ -n "$policy" ]] && iptables -P FORWARD "$policy" 2>/dev/null
  # Mounts dockerd left under its exec root (network namespaces, overlays).
  awk -v d="$dir/" '$2 ~ "^"d { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  awk -v d="$data_root/" '$2 ~ "^"d { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
  [[ -n "$pid" && "$(cat "$data_root/dockerd.owner" 2>/dev/null)" == "$pid" ]] && rm -f "$data_root/dockerd.owner"
  rm -rf "$dir/exec"
  return 0
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: dockerd.sh start|stop DIR" >&2; exit 2 ;;
esac
