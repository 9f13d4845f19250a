#!/usr/bin/env bash
# tests/run.sh — the README's test command, and what CI runs (.ci/run).
#
# Installs what is missing (./setup.sh), builds, and runs the whole suite three times: the
# Release build, then AddressSanitizer+UBSan and ThreadSanitizer builds (TSan's without the
# tests marked ONE_THREAD in tests/CMakeLists.txt, which start no thread); then every fuzz target
# of tests/fuzz/ for 15 s each (clang's libFuzzer, with ASan+UBSan). Every test that touches
# SQL starts its own throwaway PostgreSQL 15 (tests/harness/throwaway_postgres.h); nothing needs
# to be running beforehand. Exits non-zero if any test in any build fails, after printing every
# build's ctest summary at the end.
#
#   tests/run.sh                          # release + asan + tsan + fuzz
#   BULKHEAD_SANITIZERS= tests/run.sh     # release only (quick local loop)
#   BULKHEAD_SANITIZERS=tsan tests/run.sh # release + tsan
#   tests/run.sh -R migrator              # extra arguments go to ctest
set -uo pipefail

cd "$(dirname "$0")/.."

sanitizers=${BULKHEAD_SANITIZERS-asan tsan fuzz}
setup_args=()
for s in $sanitizers; do setup_args+=(--build "$s"); done
./setup.sh "${setup_args[@]}" || exit $?

# Sanitizer findings are failures, with stacks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

# One test more than there are cores: the tests wait on their PostgreSQL and on the processes
# they start, and at -j nproc a quarter of the CPU sat idle. On 2 cores (2026-12-06): the
# Release build's 89 tests other than the load smokes, 266 s at -j 3 against 332 s at -j 2;
# the ASan build's, whose instrumented tests use more of the CPU, 362 s against 372 s. The
# load smokes run alone whatever -j is (RUN_SERIAL).
jobs=$(( $(nproc 2>/dev/null || echo 2) + 1 ))

summary=()
failed=0
for build in release $sanitizers; do
  case "$build" in
    release) dir=build ;;
    *) dir=build/$build ;;
  esac
  echo "==== ctest: $build ($dir)"
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" \
    2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || failed=1
  line=$(grep -E 'tests passed|tests failed' "$log" | tail -n 1)
  if [ "$build" = fuzz ]; then
    runs=$(grep -ho 'stat::number_of_executed_units: *[0-9]*' "$dir"/Testing/Temporary/LastTest.log \
      2>/dev/null | awk '{n += $2} END {print n + 0}')
    summary+=("$build: ${line:-no ctest summary (exit $rc)} — $runs inputs run")
  else
    cases=0
    for t in "$dir"/bin/*_test; do
      n=$("$t" --gtest_list_tests 2>/dev/null | grep -c '^  ') && cases=$((cases + n))
    done
    summary+=("$build: ${line:-no ctest summary (exit $rc)} — $cases test cases")
  fi
  rm -f "$log"
done

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
exit $failed
