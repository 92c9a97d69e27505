#!/usr/bin/env bash
# Builds the Debian package termbridge_<version>_<arch>.deb: configures the
# build dir when it has no cache yet, builds only what the package holds (the
# three binaries and the console assets) and packs them with CPack's DEB
# generator (deploy/package.cmake), which fills Depends with dpkg-shlibdeps
# (dpkg-dev; deploy/setup.sh installs it). Prints the package's path.
#
#   deploy/package.sh [--build-dir DIR] [--out DIR] [--no-build]
#
# DIR defaults to build (as deploy/build.sh), the output to DIR/package.
# --no-build packs what DIR holds as it is (tests/e2e/package.test.mjs, which
# must not rebuild binaries other tests are running).
# Install it with: sudo apt install ./termbridge_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build
out_dir=""
build=1
while (($#)); do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --out) out_dir=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
out_dir=${out_dir:-$build_dir/package}

for tool in cmake cpack dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || {
    echo "package: $tool is missing (deploy/setup.sh installs cmake and dpkg-dev)" >&2; exit 1; }
done
# The build's and cpack's logs go to stderr; stdout is the package's path alone.
if ((build)); then
  [[ -f "$build_dir/CMakeCache.txt" ]] || cmake -S . -B "$build_dir" -G Ninja >&2
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  cmake --build "$build_dir" --target termbridge-broker termbridge-git termbridge termbridge-agent tb_console_assets >&2
fi
[[ -f "$build_dir/CPackConfig.cmake" ]] || {
  echo "package: $build_dir/CPackConfig.cmake is missing: configure $build_dir with this tree's CMakeLists" >&2
  exit 1; }
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
cpack --config "$build_dir/CPackConfig.cmake" -G DEB -B "$out_dir" >&2
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
deb="$out_dir/termbridge_${version}_$(dpkg --print-architecture).deb"
[[ -f "$deb" ]] || { echo "package: cpack made no $deb" >&2; exit 1; }
echo "$deb"
