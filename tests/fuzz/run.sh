#!/usr/bin/env bash
# tests/fuzz/run.sh — a longer run of one fuzz target than ctest's 15 seconds.
#
#   tests/fuzz/run.sh TARGET [SECONDS] [-- libFuzzer flags…]
#   tests/fuzz/run.sh config_fuzz 600
#   tests/fuzz/run.sh list                # the targets
#
# Builds the fuzz tree first (./setup.sh --build fuzz), runs TARGET with as many jobs as the
# machine has cores, and keeps what it finds in build/fuzz/tests/fuzz/corpus/TARGET/ (the seeds
# in tests/fuzz/corpus/TARGET/ are read, never written). It runs in build/fuzz/runs/TARGET/,
# where each job's log (fuzz-N.log) and any crash-, timeout-, oom- or leak-<hash> input land.
# A finding exits non-zero after tests/fuzz/report.sh has printed the target, the kind, the
# ERROR/SUMMARY lines, the input as a path and as base64, and the command that replays it:
# build/fuzz/bin/TARGET build/fuzz/runs/TARGET/crash-<hash>.
set -euo pipefail
cd "$(dirname "$0")/../.."

targets=$(sed -n 's/^bulkhead_fuzz_target(\([a-z_]*\).*/\1/p' tests/fuzz/CMakeLists.txt)
[ $# -ge 1 ] || { echo "usage: tests/fuzz/run.sh TARGET [SECONDS] [-- flags] (targets: $(echo $targets))" >&2; exit 2; }
if [ "$1" = list ]; then echo "$targets"; exit 0; fi
target=$1; shift
seconds=600
if [ $# -gt 0 ] && [ "$1" != "--" ]; then seconds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
grep -qx "$target" <<<"$targets" || { echo "tests/fuzz/run.sh: no target '$target' (targets: $(echo $targets))" >&2; exit 2; }
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "tests/fuzz/run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

./setup.sh --build fuzz >/dev/null
found=build/fuzz/tests/fuzz/corpus/$target
mkdir -p "$found"
dict=()
line=$(grep "^bulkhead_fuzz_target($target " tests/fuzz/CMakeLists.txt || true)
if [[ "$line" =~ \ ([a-z_]+\.dict)\) ]]; then dict=(-dict="tests/fuzz/${BASH_REMATCH[1]}"); fi
jobs=$(nproc 2>/dev/null || echo 1)
root=$PWD
mkdir -p "build/fuzz/runs/$target"
cd "build/fuzz/runs/$target"
if [ ${#dict[@]} -gt 0 ]; then dict=(-dict="$root/${dict[0]#-dict=}"); fi
echo "tests/fuzz/run.sh: $target for ${seconds}s on $jobs jobs; logs in $PWD" >&2
marker=$PWD/.run-started
touch "$marker"
rm -f fuzz-*.log  # the logs report.sh reads are this run's
rc=0
"$root/build/fuzz/bin/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -jobs="$jobs" -workers="$jobs" -artifact_prefix="$PWD/" "${dict[@]}" \
  "$@" "$root/$found" "$root/tests/fuzz/corpus/$target" || rc=$?
if [ "$rc" -ne 0 ]; then
  "$root/tests/fuzz/report.sh" "$target" "$root/build/fuzz/bin/$target" "$marker" "$PWD" \
    fuzz-*.log
fi
exit "$rc"
