-- Fragments of SQL that statements of several stores share, written once (format: see
-- claim_store.sql). A statement uses one as `{{name}}`, or `{{name(arg, …)}}` when it takes
-- arguments, which its body names `{{param}}`; the build substitutes them at configure time, so
-- the prepared SQL is what it was when each statement spelled them out.

-- fragment: utc(column)
-- A timestamptz as UTC ISO 8601 text, as the CLI prints it: 2026-01-31T12:00:00Z.
to_char({{column}} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')

-- fragment: queue_lag_s(queue)
-- How far queue `queue` is behind, in seconds: the age of its oldest due available job, the
-- first entry of each priority's range in jobs_claim (whose predicate the range names,
-- migration 0006); 0 when none is due. Three index descents, whatever the backlog.
coalesce(extract(epoch FROM now() - (
  SELECT min(first.scheduled_at)
    FROM generate_series(1, 3) AS p(priority)
   CROSS JOIN LATERAL (
         SELECT j.scheduled_at FROM bulkhead.job_rows j
          WHERE j.queue = {{queue}} AND j.state = 'available' AND j.priority = p.priority
            AND j.priority BETWEEN 1 AND 3 AND j.scheduled_at <= now()
          ORDER BY j.scheduled_at LIMIT 1) AS first))::float8, 0)

-- fragment: ordering_held(queue)
-- How many deliveries of queue `queue` are held behind an earlier live delivery of their ordering
-- key (migration 0013: keyed, available or parked, due at 'infinity'), counted to 100,001 so that
-- a caller can say "100,000+". Held rows sort last in the scheduled_at order of the partial
-- indexes that already hold the waiting jobs, so each count reads only held entries: the
-- 'infinity' end of each priority's range of jobs_claim (three descents), then the parked ones
-- (jobs_parked, or jobs_ordering, both of unfinished rows only). jobs_ordering alone would read
-- every live keyed delivery, and the heap of each for scheduled_at, which it does not hold. A
-- job in flight is never held (the claim never reaches 'infinity'), so `executing` adds nothing.
(SELECT count(*) FROM (
   SELECT 1 FROM generate_series(1, 3) AS p(priority)
    CROSS JOIN LATERAL (
          SELECT 1 FROM bulkhead.job_rows j
           WHERE j.queue = {{queue}} AND j.state = 'available' AND j.priority = p.priority
             AND j.priority BETWEEN 1 AND 3 AND j.scheduled_at = 'infinity'
             AND j.ordering_key IS NOT NULL
           LIMIT 100001) AS a
   UNION ALL
   SELECT 1 FROM bulkhead.job_rows j
    WHERE j.queue = {{queue}} AND j.state = 'parked' AND j.scheduled_at = 'infinity'
      AND j.ordering_key IS NOT NULL
   LIMIT 100001) AS held)

-- fragment: flowing
-- The channel `ch` delivers: its breaker is closed, it is not paused and it is enabled. Where it
-- does not, a waiting job is parked rather than made available — by the claim, record, rescue
-- and replay alike — and the reconciler unparks only where it does. A disabled channel is
-- paused too (disable sets both, and resume refuses a disabled channel), so `enabled` adds
-- nothing while that holds; it is checked anyway because a row can break it — a database where
-- an older `channel resume` lifted a disabled channel's pause, or a hand edit — and a disabled
-- channel must never deliver. bulkhead.route() (schema/0002_breaker.up.sql) applies the same
-- rule at enqueue (it refuses a disabled channel); migrations are never edited, so it keeps its
-- own copy.
(ch.breaker_state = 'closed' AND NOT ch.paused AND ch.enabled)

-- fragment: park_backlog(changed, batch)
-- The body of a transition's `parked` CTE: the available jobs (any priority, due or not) of the
-- channels the CTE `changed` just stopped (id) are parked, priority 3, in the same statement as
-- the change, so no crash leaves a stopped channel with its backlog claimable — at most `batch`
-- of them, or all of them for NULL (LIMIT NULL is no limit). The breaker's transitions and the
-- leader's repair pass a batch, since each statement must fit in the connection's statement
-- timeout however long the backlog has grown (issue 31: 200,000 jobs took about a second, and
-- an open under a 250 ms timeout was cancelled for ever); a batch that comes back full means
-- there may be more, and the caller moves the rest with more batches (ADR 0017). The operator's
-- verbs and a 410's disable still move the whole backlog. Each job is a new row version with
-- entries in the primary key and jobs_parked (never HOT: state and priority are indexed), and
-- reads no payload (its rule is checked on write, migration 0005): 100,000 jobs in about 1.1 s
-- on the 2-core development machine, 90-byte payloads, 4 KB ones about the same
-- (load/park_bench.sh, docs/adr/0010-checks-on-write.md).
--
-- The jobs are chosen first, channel by channel, in jobs_channel_available's order: one index
-- descent a channel, and the index hands the rows over already sorted, where a seq scan would
-- have to sort every waiting job first, so no statistics make one look cheaper. As a join, with
-- statistics taken while nothing was available, the planner scanned all of
-- jobs_channel_available (every channel's backlog) to find one channel's: 7,500 buffers to park
-- one job beside a 60,000-job burst; with `channel_id = ANY(…)` and a LIMIT alone, fresh
-- statistics chose a seq scan of the whole table to find 50 jobs (tests/plan_cost_test.cc,
-- issue 34). Then they are updated by ctid, a TID scan: the version the statement's snapshot saw
-- waiting. A job updated since (claimed) fails the ctid's recheck and is left, as it is no
-- longer waiting. Each row is named by its id beside its ctid, pairwise (one array of each,
-- unnested together): on `jobs` in ranges of ids a ctid is a row in every range, and the id picks
-- the row's own at run time (claim_window, ADR 0026). Two arrays matched apart (`id = ANY` and
-- `ctid = ANY`) could pair a row updated since with another row's ctid in another range. The
-- update names no state of its own: `j.state = 'available'` there let the
-- planner read the ctids' rows through jobs_channel_available, whose predicate it implies, and
-- with statistics from before a burst it scanned the whole index for them (8,186 buffers for 50
-- jobs beside 60,000 available).
UPDATE bulkhead.job_rows AS j
     SET state = 'parked', priority = 3
    FROM {{id_ctid_pairs((SELECT k.id, k.ctid FROM {{changed}}
                           CROSS JOIN LATERAL (
                                 SELECT k.id, k.ctid FROM bulkhead.job_rows k
                                  WHERE k.channel_id = {{changed}}.id AND k.state = 'available'
                                  ORDER BY k.priority, k.scheduled_at, k.id
                                  LIMIT {{batch}}) AS k
                           LIMIT {{batch}}))}} AS t
   WHERE j.id = t.id AND j.ctid = t.ctid
  RETURNING j.channel_id

-- fragment: unpark_backlog(changed, condition, batch)
-- The body of a transition's `unparked` CTE: the parked jobs of the channels the CTE `changed`
-- let flow again (id) become available where `condition` holds (a channel still paused, or still
-- broken, keeps its backlog parked), at most `batch` of them, or all for NULL, chosen in
-- jobs_parked's order and updated by ctid, for park_backlog's reasons. They keep priority 3 and
-- their scheduled_at: every channel's fresh deliveries still come first, and a retry that was
-- waiting keeps waiting. Entries in the primary key, jobs_claim and jobs_channel_available per
-- job: 100,000 in about 1.1 s here (load/park_bench.sh).
UPDATE bulkhead.job_rows AS j
     SET state = 'available'
    FROM {{id_ctid_pairs((SELECT k.id, k.ctid FROM {{changed}}
                           CROSS JOIN LATERAL (
                                 SELECT k.id, k.ctid FROM bulkhead.job_rows k
                                  WHERE k.channel_id = {{changed}}.id AND k.state = 'parked'
                                  ORDER BY k.scheduled_at, k.id
                                  LIMIT {{batch}}) AS k
                           WHERE {{condition}}
                           LIMIT {{batch}}))}} AS t
   WHERE j.id = t.id AND j.ctid = t.ctid
  RETURNING j.channel_id, j.queue

-- fragment: id_ctid_pairs(rows)
-- The rows (id, ctid) of the parenthesized select `rows`, one pair a row, for park_backlog and
-- unpark_backlog to join jobs on by both columns: two arrays built together and unnested
-- together in the select list, which pairs them by position and needs no tuplestore (a
-- 100,000-job park spilled 416 temp blocks through one).
(SELECT unnest(c.ids) AS id, unnest(c.ctids) AS ctid
   FROM (SELECT array_agg(k.id) AS ids, array_agg(k.ctid) AS ctids FROM {{rows}} AS k) AS c)

-- fragment: wake_queues(moved)
-- NOTIFY bulkhead_jobs once per queue that got jobs back (the CTE `moved`, with a `queue`
-- column), so the nodes serving it claim now rather than at their next poll.
(SELECT count(pg_notify('bulkhead_jobs', queue))
          FROM (SELECT DISTINCT queue FROM {{moved}}) AS woken)

-- fragment: attempt_entry(job, duration_ms, status, error)
-- One entry of the attempt log for the attempt `job` (a jobs row) last made: its number, start
-- and node from the row, its duration rounded to 0.1 ms, and the HTTP `status` or the `error`
-- (NULLs left out). The result write appends it for an attempt that did not deliver; the
-- console builds it for the one that did, from the row's columns (migration 0016).
jsonb_strip_nulls(jsonb_build_object(
  'attempt', {{job}}.attempt, 'at', {{job}}.attempted_at, 'node', {{job}}.attempted_by,
  'duration_ms', round(({{duration_ms}})::numeric, 1), 'status', {{status}}, 'error', {{error}}))
