#!/usr/bin/env bash
# setup.sh — install what Bulkhead needs from Debian's packages, then configure and build.
#
# Both README commands (tests/run.sh and, later, load/run.sh) start here. It is idempotent:
# packages already installed are not touched, an existing build directory is only rebuilt,
# so a second run costs one no-op `cmake --build`.
#
#   ./setup.sh                 # packages + Release build in build/ (binaries in build/bin/)
#   ./setup.sh --build asan    # also: AddressSanitizer+UBSan build in build/asan/
#   ./setup.sh --build tsan    # also: ThreadSanitizer build in build/tsan/
#   ./setup.sh --build fuzz    # also: the libFuzzer targets (clang) in build/fuzz/
#   ./setup.sh --no-build      # packages only
#
# Needs root or sudo only when a package is missing.
set -euo pipefail

cd "$(dirname "$0")"

# Every Debian 12 package the build, the tests and the throwaway Postgres need.
PACKAGES=(
  cmake g++ make pkg-config libboost-dev
  lld  # the linker: CMakeLists.txt says why
  libpq-dev libpqxx-dev nlohmann-json3-dev libcurl4-openssl-dev prometheus-cpp-dev
  libssl-dev openssl libgtest-dev
  postgresql-15 postgresql-client-15
  pgbouncer  # the pooler a node is tested behind (tests/database_connection_test.cc)
  prometheus  # promtool for the alert rules' tests, and the server observability_test scrapes with
  clang libclang-rt-14-dev  # libFuzzer: the fuzz targets of tests/fuzz/
  chromium nodejs  # the console's browser test (tests/console_browser/: puppeteer-core)
)
# npm comes with Debian's nodejs as a package of its own, and inside NodeSource's nodejs; ask
# for Debian's only where no npm is installed, so a NodeSource Node.js is left as it is.
command -v npm >/dev/null 2>&1 || PACKAGES+=(npm)

builds=(release)
install_only=false
while [ $# -gt 0 ]; do
  case "$1" in
    --build) shift; [ $# -gt 0 ] || { echo "setup.sh: --build needs release, asan, tsan or fuzz" >&2; exit 2; }
             case "$1" in release|asan|tsan|fuzz) builds+=("$1") ;;
               *) echo "setup.sh: unknown build '$1' (release, asan, tsan, fuzz)" >&2; exit 2 ;; esac ;;
    --no-build) install_only=true ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

missing=()
for p in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup.sh: missing packages (${missing[*]}) and neither root nor sudo to install them" >&2
    exit 1
  fi
  # Debian's prometheus (and postgresql) packages start their service from postinst. The
  # tests start their own servers on loopback; a system Prometheus on :9090 is not wanted, and
  # in a container without an init system the start would fail the install. A policy-rc.d
  # that refuses (exit 101) stops invoke-rc.d from starting anything; ours is removed after.
  policy=/usr/sbin/policy-rc.d
  placed_policy=false
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# placed by bulkhead setup.sh for the install only\nexit 101\n' |
      "${as_root[@]}" tee "$policy" >/dev/null
    "${as_root[@]}" chmod 755 "$policy"
    placed_policy=true
  fi
  rc=0
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq || rc=$?
  if [ "$rc" -eq 0 ]; then
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
  fi
  if $placed_policy; then "${as_root[@]}" rm -f "$policy"; fi
  [ "$rc" -eq 0 ] || exit "$rc"
fi

$install_only && exit 0

jobs=$(nproc 2>/dev/null || echo 2)
for b in $(printf '%s\n' "${builds[@]}" | awk '!seen[$0]++'); do
  case "$b" in
    release) dir=build;      flags=(-DCMAKE_BUILD_TYPE=Release) ;;
    asan)    dir=build/asan; flags=(-DCMAKE_BUILD_TYPE=Debug -DBULKHEAD_ASAN=ON) ;;
    tsan)    dir=build/tsan; flags=(-DCMAKE_BUILD_TYPE=Debug -DBULKHEAD_TSAN=ON) ;;
    # Only the parsers and their fuzz targets, built by clang (libFuzzer is clang's).
    fuzz)    dir=build/fuzz; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DBULKHEAD_FUZZ=ON
                                    -DCMAKE_CXX_COMPILER=clang++) ;;
  esac
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  fi
  cmake --build "$dir" -j "$jobs"
done
