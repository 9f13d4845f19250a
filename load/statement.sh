# shellcheck shell=bash
# statement.sh — sourced by the benchmarks that run one named query by hand (park_bench.sh,
# claim_bench.sh, wal_life.sh, claim_floor_bench.sh).
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

# raise_claim_floor DB JOBS: the claim floor (ADR 0027) of the database DB where a leader that
# has run beside a history of JOBS finished jobs leaves it: the leader's own three statements
# (FleetStore::RaiseClaimFloor), by hand, in as many rounds as it takes to pass them, 100,000
# ids a round as the leader does. The caller checks that the build has them (migration 0017).
# Uses the caller's psql.
raise_claim_floor() {
  local db=$1 jobs=$2 i
  for ((i = 0; i < jobs / 100000 + 3; i++)); do
    psql "$db" -At >/dev/null <<SQL
PREPARE settle (bigint) AS $(statement settle_claim_floor);
PREPARE advance (bigint) AS $(statement advance_claim_floor);
$(statement highest_job_id) \gset
EXECUTE settle(:id);
EXECUTE advance(100000);
SQL
  done
}
