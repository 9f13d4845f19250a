# shellcheck shell=bash
# statement.sh — sourced by the benchmarks that run one named query by hand (park_bench.sh,
# claim_bench.sh).
#
# statement NAME: the SQL the build prepares under NAME (snake_case), fragments substituted:
# the raw string after its name in the build's generated source (worker/store/named_queries.cmake
# writes it). Prints nothing when the build has no such statement.
statement() {
  awk -v name="\"$1\"," '
    found && sub(/^ *R"bulkhead_sql\(/, "") { grab = 1 }
    grab { if (i = index($0, ")bulkhead_sql\"")) { print substr($0, 1, i - 1); exit } print; next }
    index($0, name) { found = 1 }' build/worker/store/generated/embedded_queries.cc
}
