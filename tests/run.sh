#!/usr/bin/env bash
# Runs every termbridge test: installs what is missing, builds once, then runs
# the unit, integration and end-to-end tests through ctest, in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh
deploy/build.sh
BUILD_DIR=${TERMBRIDGE_BUILD_DIR:-build}
# A test that fails is re-run once; both runs print their output, so a flake stays visible.
ctest --test-dir "$BUILD_DIR" --output-on-failure --repeat until-pass:2 -j "$(( $(nproc) * 2 ))" "$@"
