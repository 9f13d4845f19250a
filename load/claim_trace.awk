# claim_trace.awk — where a claim's time goes, step by step, from auto_explain's plans in a
# PostgreSQL server log (load/pool_bench.sh, POOL_BENCH_EXPLAIN). Reads the log's lines of one
# drain; for each claim statement (Claim, ClaimFront) prints how many plans were logged, their
# mean duration, and for each of its CTEs the mean time spent in the CTE's top node (EXPLAIN
# ANALYZE's "actual time" total: its own and its children's, and a CTE it reads if it is the
# first to read it, since a CTE is computed once, by whichever reads it first) and the mean rows
# it returned. `claimed` (the update) reads everything before it, so its time is about the
# statement's; a step's own part is its figure less those of the CTEs it is first to read.
#
# The log's lines: "... LOG:  duration: 5.41 ms  plan:", then "\tQuery Text: <statement>",
# then the plan, each line after the first starting with a tab. A CTE's plan starts with a line
# "\t  CTE <name>" and its top node on the next line carries "actual time=<first>..<last>
# rows=<rows> loops=<loops>". Times are wall-clock: on a loaded machine they include the time
# a backend waited for a CPU.
#
# Then what the windows read (issue 30, goal 4: rows skipped by concurrent claims), per claim:
# the rows their scans of jobs_claim returned and those the scans themselves left out (the
# fragment untouched, in the scan since 2026-12-07: rows another claim holds or took since the
# snapshot), those the caps left out after them ("Subquery Scan on w"), those the lock step
# left (another claim's, or locked since: what the scans passed less what the windows locked),
# and the rows the windows locked (the front's CTE windows; Claim's fresh, demoted and
# unparked). A node's "Rows Removed by Filter" is a mean a loop, rounded: these nodes run once
# a claim, so their figures are exact. The scans are found by their index's name on a range
# (..._queue_priority_scheduled_at_id_idx): on one table, jobs_claim, they are not counted.
#
# POSIX awk (Debian's mawk): index() and substr(), no capture groups.

function flush() {
  if (kind == "") return
  plans[kind]++
  ms[kind] += duration
  kind = ""
  node = ""
}

# the number after the literal `key` in `line` (key ends with its "=" or ": ")
function after(line, key,    i) {
  i = index(line, key)
  return i ? substr(line, i + length(key)) + 0 : 0
}

# a plan node's actual figures: "actual time=<first>..<last> rows=<rows> loops=<loops>"
function actual(line) {
  return substr(line, index(line, "actual time="))
}

/ duration: [0-9.]+ ms  plan:/ {
  flush()
  duration = after($0, "duration: ")
  pending_kind = 1
  next
}

pending_kind && /Query Text:/ {
  pending_kind = 0
  if ($0 ~ /Query Text: (WITH RECURSIVE flying|PREPARE bulkhead_claim_[0-9a-f]+\()/) kind = "Claim"
  else if ($0 ~ /Query Text: (WITH flying|PREPARE bulkhead_claim_front_)/) kind = "ClaimFront"
  next
}

kind != "" && /^\t *CTE [a-z_]+$/ {
  cte = $NF
  next
}

# The windows' nodes: the scans of jobs_claim (one a range, its index named after its columns),
# the caps' filter above them, and the rows each window locked.
kind != "" && /actual time=/ {
  loops = after(actual($0), " loops=")
  node = ""
  if ($0 ~ /Index Scan using [a-z0-9_]*_queue_priority_scheduled_at_id_idx/) node = "scan"
  else if ($0 ~ /Subquery Scan on w(_[0-9]+)? /) node = "w"
  if (node != "") read[kind, node] += after(actual($0), " rows=") * loops
}

kind != "" && node != "" && /Rows Removed by Filter:/ {
  left[kind, node] += after($0, "Filter: ") * loops
  next
}

kind != "" && cte != "" && /actual time=/ {
  key = kind SUBSEP cte
  if (!(key in seen)) { seen[key] = 1; order[kind, ++ctes[kind]] = cte }
  end_ms[key] += after(actual($0), "..")
  rows[key] += after(actual($0), " rows=")
  # Claim's windows are its three (fresh, demoted, unparked) together; the front has one.
  if ((kind == "Claim" && cte ~ /^(fresh|demoted|unparked)$/) ||
      (kind == "ClaimFront" && cte == "windows")) locked[kind] += after(actual($0), " rows=")
  cte = ""
  next
}

END {
  flush()
  for (k = 1; k <= 2; k++) {
    s = (k == 1) ? "ClaimFront" : "Claim"
    if (!(s in plans)) continue
    printf "  %s: %d plans logged, %.2f ms each (mean); ms in each CTE (mean) and its rows:\n",
           s, plans[s], ms[s] / plans[s]
    for (i = 1; i <= ctes[s]; i++) {
      key = s SUBSEP order[s, i]
      printf "    %-14s %8.3f ms %8.1f rows\n", order[s, i], end_ms[key] / plans[s], rows[key] / plans[s]
    }
    n = plans[s]
    printf "    windows, rows a claim: scanned %.1f, left in the scan %.1f, by the caps %.1f, " \
           "at the lock %.1f, locked %.1f\n",
           (read[s, "scan"] + left[s, "scan"]) / n, left[s, "scan"] / n, left[s, "w"] / n,
           (read[s, "w"] - locked[s]) / n, locked[s] / n
  }
}
