#!/usr/bin/env bash
# Installs what termbridge needs to build and test on Debian bookworm: the
# Debian packages (only those missing) and the pinned npm packages from the
# lockfiles. Safe to run again: it does nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  cmake ninja-build g++ pkg-config ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev nlohmann-json3-dev libgtest-dev libgmock-dev
  libboost1.81-dev libre2-dev libtomlplusplus-dev libvterm-dev libssl-dev grpc-proto
  # For the tests a person's view needs: tmux (attach in a real terminal),
  # Xvfb, xterm, xwininfo and ImageMagick (a native window and its
  # screenshot), Chromium and Firefox ESR (the web console under
  # playwright-core and puppeteer-core).
  tmux xvfb xterm x11-utils imagemagick chromium firefox-esr
  # zsh: its shell integration is tested like bash's (else that test skips).
  zsh
  # clang and its libFuzzer runtime: the fuzz targets (tests/fuzz/run.sh).
  clang libclang-rt-14-dev
  # dpkg-dev (dpkg-source): tests/tsan/run.sh unpacks Debian's abseil source,
  # which the ThreadSanitizer tree builds instrumented.
  dpkg-dev
  # clang-format: the tree's format is checked (tests/lint/format.sh).
  clang-format
  # shfmt: the real shell parser the policy's parser is checked against
  # (tests/security/parser_differential).
  shfmt
  # sudo and tree: programs the tests run for real (a real sudo password
  # prompt in e2e.secret_prompt; tree's writing options in security.options).
  sudo tree
)
command -v node >/dev/null 2>&1 || APT_PACKAGES+=(nodejs)
command -v npm >/dev/null 2>&1 || APT_PACKAGES+=(npm)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# xterm.js for the web console, exactly as locked; CMake copies it into the
# build's console-assets.
if [[ ! -d broker/console/node_modules || broker/console/package-lock.json -nt broker/console/node_modules/.package-lock.json ]]; then
  echo "setup: npm ci in broker/console/" >&2
  (cd broker/console && npm ci --no-audit --no-fund --loglevel=error)
fi

# npm packages for the end-to-end tests, exactly as locked.
if [[ ! -d tests/node_modules || tests/package-lock.json -nt tests/node_modules/.package-lock.json ]]; then
  echo "setup: npm ci in tests/" >&2
  (cd tests && npm ci --no-audit --no-fund --loglevel=error)
fi

# ---------------------------------------------------------------------------
# Containers (issue 7): podman, runc, podman-compose and debootstrap, and
# docker.io and docker-compose (1.29; e2e.docker runs its own dockerd, never
# a system one: tests/support/dockerd.sh); the
# three podman settings this kind of machine needs (RECIPES.md), written only
# when /etc/containers/containers.conf does not set them yet; and the base
# image deploy/Containerfile starts from, made locally with debootstrap when
# no registry is reachable. Skip all of it with TERMBRIDGE_SKIP_CONTAINERS=1.
if [[ "${TERMBRIDGE_SKIP_CONTAINERS:-0}" != 1 ]]; then
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  container_missing=()
  for pkg in podman runc podman-compose debootstrap docker.io docker-compose; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || container_missing+=("$pkg")
  done
  if ((${#container_missing[@]})); then
    echo "setup: installing ${container_missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${container_missing[@]}"
  fi

  conf=/etc/containers/containers.conf
  if [[ ! -f "$conf" ]] || ! grep -q '^[[:space:]]*runtime[[:space:]]*=' "$conf"; then
    # No runtime chosen yet: write the three settings (a new file, or appended
    # sections to one that sets none of them).
    if [[ -f "$conf" ]] && grep -qE '^[[:space:]]*(cgroup_manager|default_ulimits)[[:space:]]*=' "$conf"; then
      echo "setup: $conf sets cgroup_manager or default_ulimits but no runtime; check it against RECIPES.md" >&2
    else
      echo "setup: writing podman settings (runc, cgroupfs, ulimits) to $conf" >&2
      $SUDO mkdir -p /etc/containers
      printf '%s\n' '' '# termbridge deploy/setup.sh: what podman needs on these machines (RECIPES.md).' \
        '[containers]' 'default_ulimits = ["nofile=20000:20000", "nproc=1000:1000"]' \
        '[engine]' 'runtime = "runc"' 'cgroup_manager = "cgroupfs"' | $SUDO tee -a "$conf" >/dev/null
    fi
  fi

  # The base image: pulled when a registry answers, else made with
  # debootstrap. Failing here only makes the container tests skip.
  make_base_image() {
    local image=$1 rootfs
    timeout 120 $SUDO podman pull -q "$image" >/dev/null 2>&1 && return 0
    echo "setup: no registry; building $image with debootstrap (about 30 s)" >&2
    rootfs=$(mktemp -d /tmp/tb-rootfs-XXXXXX)
    $SUDO debootstrap --variant=minbase bookworm "$rootfs" >/dev/null &&
      $SUDO tar -C "$rootfs" -c . | $SUDO podman import -q - "$image" >/dev/null
    local status=$?
    $SUDO rm -rf "$rootfs"
    return $status
  }
  base_image=docker.io/library/debian:bookworm-slim
  if ! $SUDO podman image exists "$base_image" 2>/dev/null && ! make_base_image "$base_image"; then
    echo "setup: could not make $base_image; the container tests will skip" >&2
  fi
fi
