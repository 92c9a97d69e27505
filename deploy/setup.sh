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
  # screenshot), Chromium (the web console under playwright-core).
  tmux xvfb xterm x11-utils imagemagick chromium
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
