-- The claim store's statements: what a queue runner runs (worker/store/claim_store.h). Each entry is
-- `-- name: Name`, a one-line contract, its parameters and columns (`-- param $1 queue text`,
-- `-- column id bigint?`, `?`: may be NULL), the reasons for its shape, and its SQL; the build
-- embeds them (worker/store/named_queries.cmake), makes a struct of each (sql::Claim, with
-- Params and Row: worker/store/typed_statements.cmake), and ClaimStore prepares them under their
-- snake_case names (Claim → claim). `{{name}}` and `{{name(args)}}` are fragments (`-- fragment:
-- name`, here, in claim_fragments.sql (the claim's parts) or in sql_fragments.sql), substituted
-- at configure time.

-- name: Claim
-- Claims up to $2 due jobs of queue $1 for node $3, within the caps then lent; parks non-flowing.
-- param $1 queue text
-- param $2 limit integer: the runner's free slots
-- param $3 node text
-- param $4 channels bigint[]: the channels this node has in flight
-- param $5 channel_counts integer[]: their jobs in flight, in the order of $4
-- param $6 tenants bigint[]: the tenants this node has in flight
-- param $7 tenant_counts integer[]: their jobs in flight, in the order of $6
-- param $8 channel_cap integer: jobs one channel may have in flight on this node
-- param $9 tenant_cap integer: jobs one tenant may have in flight on this node
-- param $10 channel_windows integer[]: the window of each channel of $4 (slow start)
-- param $11 first_window integer: the window of a channel not in flight here
-- param $12 lend bigint: the lending budget (0: strict caps)
-- param $13 lend_windows integer[]: the lend window of each channel of $4 (0: none)
-- param $14 look_ahead integer: rows a window reads beyond the limit
-- param $15 heads_after_channel bigint: the skip scan starts after ($15, $16)
-- param $16 heads_after_priority smallint
-- param $17 max_heads integer: heads the skip scan visits at most
-- param $18 claim_floor bigint: no job below this id is read (the last claim's claim_floor)
-- column id bigint?: NULL (and every job column) in the one row of a claim that took nothing
-- column channel_id bigint?
-- column tenant_id bigint?
-- column attempt smallint?
-- column max_attempts smallint?
-- column payload text?
-- column url text?
-- column secret text?
-- column parked boolean?: picked for a channel that does not flow, and parked
-- column wait_s double precision?: the queue wait
-- column old_secrets text?: space-separated; NULL for none
-- column rate_limit_per_s double precision?: the channel's rate limit now (NULL: none)
-- column held_back bigint: rows locked and left
-- column windows_kept bigint: what the windows found within the caps
-- column heads bigint: heads the skip scan visited
-- column last_channel bigint?: where the skip scan stopped (NULL: it did not run)
-- column last_priority smallint?
-- column claim_floor bigint: bulkhead.claim_floor now, for the next claim's $18
-- The heart of the queue.
--
-- - One statement, one round trip: it picks and locks, marks the jobs executing with attempt + 1,
--   the node and the time, and RETURNING hands back what the request needs.
-- - LIMIT is the runner's free slots, never more: a node holds no job it cannot start now, so
--   other nodes see the rest, and nothing waits in memory.
-- - FOR UPDATE SKIP LOCKED: nodes claiming the same queue at once take disjoint rows instead of
--   queueing behind each other's locks.
-- - The caps (docs/caps.md). The runner passes what it has in flight per
--   channel ($4, $5) and per tenant ($6, $7) and the caps ($8, $9). Channels at their window
--   or cap and tenants at their cap are left out of every scan, so their jobs take no worker
--   slot and are never locked; the rest are ranked per channel and per tenant so that one
--   claim never takes a channel past its window or a tenant past its cap. Rows picked beyond
--   stay available (their locks end with the statement).
-- - First, the windows: one per priority, in priority order, each stopping at the first job
--   not yet due (`scheduled_at <= now()` bounds the index range), so retries waiting for hours
--   never lengthen a claim. Priority 2 and 3 are read only when the ones before did not fill
--   the limit. Each reads jobs_claim in order through a window of at most limit + $14 rows,
--   leaves out what is capped, and locks the rest one by one by the row the scan read until it
--   has `limit` (a LATERAL: the planner cannot turn it into a hash join or a seq scan, which it
--   would otherwise pick from its low estimate of the cap filters). Rows are read only as far
--   as needed, so an uncapped claim reads `limit` rows. In order of time, every channel's
--   jobs are found while the front of the queue is not held by a channel or tenant left out.
-- - The look-ahead $14 (ADR 0014, WindowLookAhead) is 1,000, or 10 after a claim whose windows
--   kept nothing while its skip scan visited few heads: a tenant at its cap whose backlog fills
--   the front of the queue (a lone tenant borrowing, a burst) had every claim read 1,000 of its
--   rows to leave them all out, about a sixth of such a claim. What a window does not see, the
--   skip scan finds; the long window is for many channels due behind a held-back front, where
--   finding them in order costs less than a descent each.
-- - A tenant this node runs past half its cap, with less room below its cap than the limit,
--   is left out of the windows too, and taken by the spread below, which locks no more than
--   its room: the windows would lock its rows up to the limit and keep its room. A lone tenant
--   30 below its cap of 500 had 530 rows locked and ranked twice a claim to take 30: 12 ms a
--   claim, against 3.5 ms through the spread (EXPLAIN ANALYZE), and its slots waited for the
--   claims. Below half its cap a tenant stays in the windows: there its rows are rarely all a
--   window holds, and sending every tenant with less room than the limit to the spread made
--   20 tenants of one channel each pay the skip scan whenever the node had many slots free.
-- - Then, when it is and the windows fell short, the spread (CTEs heads and spread): a skip
--   scan of jobs_channel_available finds the first available job of every (channel,
--   priority) with one index descent each, however long each backlog is; the due ones of this
--   queue whose channel is below its window and cap and whose tenant is below its cap are
--   taken in turns: every tenant's oldest head first, then every tenant's second, and so on,
--   each up to its room in its channel's window and cap and its share of its tenant's room
--   (split evenly among the tenant's heads, rounded up). Oldest head first alone let a tenant
--   ten short of its cap with 20 older channels lock the claim's whole limit before the next
--   tenant's head (a 50/s tenant beside a 300,000-job burst: p99 2.1 s). So a capped
--   channel's backlog costs the others one descent, not a step per row: demotion, which
--   rewrote a capped backlog to priority 2 so that the fresh window would not have to step
--   over it (4.1 s for a 300,000-job burst, every claim of the tier waiting), is gone (ADR
--   0012). The spread runs only when what the windows found within the caps falls short of
--   the limit and something was held back: a channel at its window or cap or a tenant the
--   windows left out on this node, or window rows the caps did not let through (nothing else
--   leaves a due job out of the windows). Counting what they locked instead missed a tenant
--   one short of its cap: its rows filled the windows, one of them was claimable, and the
--   jobs behind waited for a claim that began with it at its cap (p50 40 ms beside a
--   300,000-job burst). It costs a descent per (channel, priority) with available jobs in any
--   queue, due or not, up to $17 (below).
-- - The claim floor $18 (ADR 0027): every read of jobs starts at it, the lowest id a claimable
--   job can have, which the leader raises as the oldest jobs finish and a replay lowers. Each
--   claim returns the floor as it is now, for the next. On jobs in ranges of ids, the generic
--   plan leaves the ranges below it out when it starts. A floor passed too low costs reads,
--   never a job; one passed too high (a replay since) leaves the replayed jobs to the next claim.
-- - jobs_claim holds only `available` rows, so parked, executing and finished jobs are never
--   in the way however many there are. Priority 2 is no longer written (it was the demoted
--   backlog); rows left at it by an older version are claimed after the fresh ones, as before.
-- - The breaker is checked here, in the same statement, against the committed channel row:
--   a job picked for a channel whose breaker is not closed, or that is paused, is parked
--   instead of claimed (no attempt spent). That catches the one race parking in one statement
--   leaves open: an enqueue that read the breaker closed and committed just after the park.
-- - Slow start ($10, $11): a channel is ranked against its window, not its whole cap — its own
--   ($10, for channels in flight here) or, for one this node has no record of, the first
--   window $11 (CapLedger: 10, growing by one with each quick answer); the spread takes at
--   most a channel's room in its window. Without it a
--   channel that died took its whole cap in the first wave: 100 requests per node at the
--   default 200 workers, where the seed's bar is under 15.
-- - Lending ($12, $13; ADR 0013): after everything the caps let through, when the runner's
--   budget $12 (its free slots less the tier's reserve) is not spent, the CTE lent takes more
--   due jobs of channels with a lend window ($13: those that answered quickly and are not
--   failing), each up to that window (the fragment lend). So the caps bind while anyone else
--   has due work, and slots nobody wants are lent, never the reserve. $12 = 0: strict caps.
-- - Rows come back in claim order; parked ones too, so the runner knows how many it took; a
--   claim that took nothing returns one row whose job columns are NULL. Each carries
--   `held_back`, the rows it locked and left: what the claim spent beyond what it took, which
--   the caps tests hold down. The runner does not read it; when to claim again is
--   QueueRunner::Run's to decide. Each also carries `windows_kept`, the rows the windows found
--   within the caps, and `heads`, the (channel, priority) pairs the skip scan visited (0 when
--   it did not run): the runner's look-ahead for its next claim is chosen from them; and
--   `last_channel`, `last_priority`, the head it stopped at (NULL when it did not run): the
--   next claim's cursor.
-- - The skip scan visits at most $17 heads (SkipScanCursor: twice the limit, at least 64),
--   starting after the cursor $15, $16 and wrapping around once, so a claim's cost follows its
--   size, not the number of channels with work: beside a capped burst, 60,000 tenants with one
--   delivery each cost every claim 60,000 descents (issue 34). Heads past the bound are visited
--   by the next claims in turn. When there are fewer heads than the bound, every claim visits
--   them all, and the spread's choice does not depend on where the scan started.
WITH RECURSIVE {{claim_inputs}}, fresh AS (
  {{claim_window(1, true)}}
), demoted AS (
  {{claim_window(2, (SELECT count(*) FROM fresh) < $2)}}
), unparked AS (
  {{claim_window(3, (SELECT count(*) FROM fresh) + (SELECT count(*) FROM demoted) < $2)}}
), windows AS (
  SELECT * FROM fresh UNION ALL SELECT * FROM demoted UNION ALL SELECT * FROM unparked
), windows_kept AS (
  {{within_caps(windows)}}
), heads AS (
  -- The skip scan, only when what the windows found within the caps falls short and something
  -- was held back: a channel or tenant this node runs at its window or cap, or rows of the
  -- windows the caps did not let through. It starts after the runner's cursor ($15, $16: the
  -- last head the previous claim visited), wraps around to the lowest (channel, priority)
  -- once, and stops after $17 heads or back where it started.
  (SELECT first.channel_id, first.priority, first.tenant_id, first.queue, first.scheduled_at,
          first.wrapped, 1 AS step
     FROM (SELECT a.*, false AS wrapped
             FROM ({{next_head(ROW($15::bigint, $16::smallint))}}) AS a
           UNION ALL
           SELECT b.*, true FROM ({{next_head(ROW(0::bigint, 0::smallint))}}) AS b
           LIMIT 1) AS first
    WHERE (SELECT count(*) FROM windows_kept) < $2
      AND ((SELECT count(*) FROM windows_kept) < (SELECT count(*) FROM windows)
           OR EXISTS (SELECT FROM flying WHERE n >= least(coalesce(win, $11), $8))
           OR EXISTS (SELECT FROM tenant_flying WHERE $9 - n < least($2, ($9 + 1) / 2))))
  UNION ALL
  SELECT n.channel_id, n.priority, n.tenant_id, n.queue, n.scheduled_at, n.wrapped, g.step + 1
    FROM heads g
   CROSS JOIN LATERAL (
         SELECT a.*, g.wrapped AS wrapped
           FROM ({{next_head(ROW(g.channel_id, g.priority))}}) AS a
         UNION ALL
         SELECT b.*, true FROM ({{next_head(ROW(0::bigint, 0::smallint))}}) AS b
          WHERE NOT g.wrapped
         LIMIT 1) AS n
   WHERE g.step < $17
     AND NOT (n.wrapped AND (n.channel_id, n.priority) > ROW($15::bigint, $16::smallint))
), spread AS (
  SELECT next.*
    FROM (SELECT d.channel_id, d.priority,
                 least(d.channel_room, (d.tenant_room + d.tenant_heads - 1) / d.tenant_heads)
                   AS room
            FROM (SELECT g.channel_id, g.priority, g.scheduled_at,
                         least(coalesce(f.win, $11), $8) - coalesce(f.n, 0) AS channel_room,
                         $9 - coalesce(t.n, 0) AS tenant_room,
                         count(*) OVER (PARTITION BY g.tenant_id) AS tenant_heads,
                         row_number() OVER (PARTITION BY g.tenant_id, g.priority
                                            ORDER BY g.scheduled_at, g.channel_id) AS turn
                    -- Joined, not looked up per head: a sub-select per head scans flying
                    -- once for each. With about 200 channels in flight and 130 heads that was
                    -- 4.4 ms of a 10.2 ms whole claim in production's shape (ADR 0031).
                    FROM heads g
                    LEFT JOIN flying f ON f.channel_id = g.channel_id
                    LEFT JOIN tenant_flying t ON t.tenant_id = g.tenant_id
                   WHERE g.queue = $1 AND g.scheduled_at <= now() AND {{uncapped(g, 1)}}) AS d
           ORDER BY d.priority, d.turn, d.scheduled_at, d.channel_id
           LIMIT $2) AS g
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at, j.ctid
           FROM bulkhead.job_rows j
          WHERE j.channel_id = g.channel_id AND j.state = 'available'
            AND j.priority = g.priority AND j.queue = $1 AND j.scheduled_at <= now()
            AND j.id >= $18 AND {{untouched(j)}}
          ORDER BY j.scheduled_at, j.id
          LIMIT greatest(least(g.room, $2), 0)
            FOR UPDATE SKIP LOCKED) AS next
   LIMIT $2
), candidates AS (
  SELECT DISTINCT ON (id) *
    FROM (SELECT * FROM windows UNION ALL SELECT * FROM spread) AS u
), picked AS (
  SELECT k.id, k.channel_id, k.ctid
    FROM ({{within_caps(candidates)}}) AS k
   ORDER BY k.priority, k.scheduled_at, k.id
   LIMIT $2
), lent AS (
  -- Idle slots lent (ADR 0013): when the caps let nothing more through, due jobs of channels
  -- and tenants held only by their cap, up to the lending budget $12 less what was picked.
  {{lend}}
), claiming AS (
  -- Each row with the ctid of the version this statement locked, which nothing else can change
  -- before the update below: the update reaches it by a TID scan, one heap page a row. By `id`
  -- it went through jobs_pkey, three or four more buffers a row beside a big history. With the
  -- id beside it, which picks the row's range (claim_window).
  SELECT id, ctid FROM picked UNION ALL SELECT id, ctid FROM lent
), claimed AS (
  {{claim_update}}
), seen AS (
  SELECT
       -- Rows it locked that the caps (or the limit) left: there is more to claim than this
       -- claim took, and the runner claims again.
       (SELECT count(*) FROM candidates) - (SELECT count(*) FROM picked) AS held_back,
       -- What the windows and the skip scan saw: the runner's next look-ahead ($14).
       (SELECT count(*) FROM windows_kept) AS windows_kept,
       (SELECT count(*) FROM heads) AS heads,
       -- Where the skip scan stopped (NULL when it did not run): the next claim's cursor.
       (SELECT h.channel_id FROM heads h ORDER BY h.step DESC LIMIT 1) AS last_channel,
       (SELECT h.priority FROM heads h ORDER BY h.step DESC LIMIT 1) AS last_priority,
       -- By its key: with seq scans off, a seq scan of even this one-row table costs the plan
       -- 10^10, past jit_above_cost, and JIT compiled the claim (8 s a call on 17 ranges).
       (SELECT f.floor_id FROM bulkhead.claim_floor f WHERE f.one) AS claim_floor
)
{{claim_rows}}

-- name: ClaimFront
-- Claim's first window alone: up to $2 due priority-1 jobs of queue $1 within the caps.
-- param $1 queue text
-- param $2 limit integer: the runner's free slots
-- param $3 node text
-- param $4 channels bigint[]: the channels this node has in flight
-- param $5 channel_counts integer[]: their jobs in flight, in the order of $4
-- param $6 tenants bigint[]: the tenants this node has in flight
-- param $7 tenant_counts integer[]: their jobs in flight, in the order of $6
-- param $8 channel_cap integer: jobs one channel may have in flight on this node
-- param $9 tenant_cap integer: jobs one tenant may have in flight on this node
-- param $10 channel_windows integer[]: the window of each channel of $4 (slow start)
-- param $11 first_window integer: the window of a channel not in flight here
-- param $12 lend bigint: the lending budget (0: strict caps)
-- param $13 lend_windows integer[]: the lend window of each channel of $4 (0: none)
-- param $14 look_ahead integer: rows a window reads beyond the limit
-- param $15 heads_after_channel bigint: the skip scan starts after ($15, $16)
-- param $16 heads_after_priority smallint
-- param $17 max_heads integer: heads the skip scan visits at most
-- param $18 claim_floor bigint: no job below this id is read (the last claim's claim_floor)
-- column id bigint?: NULL (and every job column) in the one row of a claim that took nothing
-- column channel_id bigint?
-- column tenant_id bigint?
-- column attempt smallint?
-- column max_attempts smallint?
-- column payload text?
-- column url text?
-- column secret text?
-- column parked boolean?: picked for a channel that does not flow, and parked
-- column wait_s double precision?: the queue wait
-- column old_secrets text?: space-separated; NULL for none
-- column rate_limit_per_s double precision?: the channel's rate limit now (NULL: none)
-- column held_back bigint: rows locked and left
-- column windows_kept bigint: what the windows found within the caps
-- column heads bigint: heads the skip scan visited
-- column last_channel bigint?: where the skip scan stopped (NULL: it did not run)
-- column last_priority smallint?
-- column claim_floor bigint: bulkhead.claim_floor now, for the next claim's $18
-- The claim a runner makes while a backlog fills its every claim (ADR 0031): the same window,
-- caps, write and answer as Claim's, without the rest, which runs only when that window falls
-- short. When it takes the whole limit, it takes exactly what Claim would have: then Claim's
-- lower priorities do not run (each only when what came before fell short of $2), its skip
-- scan does not either (only when the windows kept fewer than $2) and it lends nothing (its
-- lending takes from the skip scan's heads). When it takes less, it has still taken what
-- Claim's first window would have; below half the limit or the lending budget the runner
-- claims again at once with Claim, which finds the rest (FrontChoice, front_choice.h).
--
-- Why. Claim's generic plan has 179 nodes, and every call starts and ends each of them, whether
-- its step runs or not: 0.2 to 0.3 ms a call on a quiet queue (load/claim_sizes.sh). A fleet of
-- small nodes makes many small claims (8 nodes of 25 workers took 12 rows a call where one node
-- of 200 took 74), and each paid it. The parameters are Claim's, so that both run from one call
-- site; those of the skip scan and the lending are declared in a CTE that nothing reads (so the
-- planner drops it) and are ignored.
WITH {{claim_inputs}}, unused AS (
  SELECT $12::bigint AS lend, $15::bigint AS after_channel, $16::smallint AS after_priority,
         $17::int AS max_heads
), windows AS (
  {{claim_window(1, true)}}
), windows_kept AS (
  {{within_caps(windows)}}
), picked AS (
  SELECT k.id, k.channel_id, k.ctid
    FROM windows_kept AS k
   ORDER BY k.priority, k.scheduled_at, k.id
   LIMIT $2
), claiming AS (
  SELECT id, ctid FROM picked
), claimed AS (
  {{claim_update}}
), seen AS (
  SELECT (SELECT count(*) FROM windows) - (SELECT count(*) FROM picked) AS held_back,
         (SELECT count(*) FROM windows_kept) AS windows_kept,
         0::bigint AS heads,
         NULL::bigint AS last_channel,
         NULL::smallint AS last_priority,
         (SELECT f.floor_id FROM bulkhead.claim_floor f WHERE f.one) AS claim_floor
)
{{claim_rows}}

-- name: ClaimProbes
-- open → half_open for up to $2 cooled-down channels of queue $1; node $3 claims each probe.
-- param $1 queue text
-- param $2 limit bigint
-- param $3 node text
-- param $4 probe_window_ms double precision
-- column id bigint
-- column channel_id bigint
-- column tenant_id bigint
-- column attempt smallint
-- column max_attempts smallint
-- column payload text
-- column url text
-- column secret text
-- column old_secrets text?
-- column probing bigint
-- Open → half_open for channels of this queue whose cooldown is over, each with
-- its oldest due parked job claimed by this node as the probe. FOR NO KEY UPDATE SKIP LOCKED on
-- the channel row makes the probe fleet-wide: two nodes looking at once take different channels
-- or nothing. FOR NO KEY UPDATE, not FOR UPDATE: it conflicts only with another transition's
-- lock, and the UPDATE below needs no more. (It was chosen while every enqueue held FOR KEY
-- SHARE on its channel's row until commit, through the jobs → channels foreign key, which FOR
-- UPDATE would have waited on or skipped; migration 0015 dropped that key, ADR 0023.) A channel with no due parked
-- job stays open until a delivery for it waits.
-- The probe has until now() + $4 (the request timeout and a margin) to answer; after that any
-- node re-opens the breaker (expire_probes), so a hanging probe or a dead prober cannot leave
-- it half-open.
WITH due AS (
  SELECT ch.id
    FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
   WHERE ch.breaker_state = 'open' AND ch.breaker_probe_at <= now() AND t.tier = $1
     AND ch.enabled AND NOT ch.paused
     -- Only channels with something due to probe with, before the LIMIT: otherwise a few
     -- channels whose parked jobs are all retries hours away, cooled down longest, would take
     -- every slot on every look and no other channel would get its probe. A scalar sub-select,
     -- not EXISTS: PostgreSQL may turn an EXISTS into a semi-join that first reads every due
     -- parked job of the fleet (EXPLAIN showed a hash of jobs_parked), where this stays one
     -- jobs_parked probe (channel_id, scheduled_at <= now()) per open channel, in probe order,
     -- until the limit is reached.
     AND (SELECT true FROM bulkhead.job_rows p
           WHERE p.channel_id = ch.id AND p.state = 'parked' AND p.scheduled_at <= now()
           LIMIT 1)
   ORDER BY ch.breaker_probe_at
   LIMIT $2
     FOR NO KEY UPDATE OF ch SKIP LOCKED
), chosen AS (
  SELECT due.id AS channel_id, probe.id AS job_id
    FROM due
   CROSS JOIN LATERAL (
         SELECT j.id
           FROM bulkhead.job_rows j
          WHERE j.channel_id = due.id AND j.state = 'parked' AND j.scheduled_at <= now()
          ORDER BY j.scheduled_at, j.id
          LIMIT 1
            FOR UPDATE SKIP LOCKED) AS probe
), probing AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'half_open', breaker_changed_at = now(),
         breaker_probe_at = now() + $4 * interval '1 millisecond',
         breaker_probe_job = chosen.job_id
    FROM chosen
   WHERE ch.id = chosen.channel_id
  RETURNING ch.id, pg_notify('bulkhead_breakers', ch.id || ' half_open')
), claimed AS (
  UPDATE bulkhead.job_rows AS j
     SET state = 'executing', attempt = j.attempt + 1, attempted_at = clock_timestamp(),
         attempted_by = $3  -- clock_timestamp(): as Claim's
    FROM chosen, bulkhead.channels AS ch
   WHERE j.id = chosen.job_id AND ch.id = j.channel_id
  RETURNING j.id, j.channel_id, j.tenant_id, j.attempt, j.max_attempts, j.payload::text,
            ch.url, ch.secret, ch.old_secrets_until
)
SELECT claimed.id, claimed.channel_id, claimed.tenant_id, claimed.attempt, claimed.max_attempts,
       claimed.payload, claimed.url, claimed.secret,
       {{old_secrets}} AS old_secrets,
       (SELECT count(*) FROM probing) AS probing
  FROM claimed

-- name: SnoozeChannel
-- Pushes channel $1's available jobs to no earlier than now() + $2 ms (a Retry-After).
-- param $1 channel bigint
-- param $2 delay_ms double precision
-- An endpoint answered 429 or 503 with a Retry-After: the channel's waiting
-- jobs (available, due or not yet) move to no earlier than now() + the delay, in one statement
-- over jobs_channel_available. Lengthening only: a job already due later keeps its time (the
-- WHERE skips it, so it is not even rewritten). Parked jobs are left alone: they wait for a
-- breaker or an operator, which decide when they go. The runner runs it at most once a second
-- per channel (QueueRunner), so a busy throttled channel costs one statement a second.
UPDATE bulkhead.job_rows
   SET scheduled_at = now() + $2 * interval '1 millisecond'
 WHERE channel_id = $1 AND state = 'available'
   AND scheduled_at < now() + $2 * interval '1 millisecond'

-- fragment: tokens_granted(bucket_tat, want)
-- How many of `want`'s n tokens its channel's bucket grants now, given the bucket's theoretical
-- arrival time `bucket_tat` (GCRA, migration 0013): a full bucket holds want.burst tokens, and
-- each 1/rate seconds that tat lies ahead of now takes one away. The 1e-9 keeps a float's
-- rounding from withholding a token that is due exactly now.
least({{want}}.n,
            greatest(floor({{want}}.burst
                           - extract(epoch FROM greatest({{bucket_tat}}, now()) - now())
                             * {{want}}.rate + 1e-9), 0))::int

-- name: TakeTokens
-- Takes up to $2 tokens from each channel $1's rate bucket (fleet-wide); returns the grants.
-- param $1 channels bigint[]: channels with a rate limit, each once
-- param $2 wanted integer[]: the jobs of each a claim gave this node, in the order of $1
-- column channel_id bigint
-- column granted integer: jobs of the channel that may go now; the rest go back
-- column rate double precision?: the channel's limit now (NULL: none any more: all granted)
-- column tat_in_ms double precision: how far the bucket's arrival time lies ahead of now
-- Rate limits (channels.rate_limit_per_s, migration 0013, docs/events-rates-ordering.md): a
-- runner whose claim took jobs of limited channels takes one token for each from the channel's
-- bucket before it sends any, and hands back at once, with their attempt unspent, those it got
-- no token for: a limited channel never holds a slot while it waits for its turn. The buckets
-- are rows of bulkhead.rate_buckets, so the limit holds however many nodes claim. The rows are
-- locked in channel order before they are changed, so two nodes taking tokens of the same
-- channels never deadlock. A channel's first bucket starts full (inserted here; a concurrent
-- first insert by another node leaves this one's grant at 0, and its jobs go back). The limit
-- is read from the channel row each time: a changed limit takes effect at the next claim.
WITH want AS (
  SELECT w.channel_id, w.n, ch.rate_limit_per_s AS rate,
         greatest(floor(ch.rate_limit_per_s), 1) AS burst
    FROM unnest($1::bigint[], $2::int[]) AS w(channel_id, n)
    JOIN bulkhead.channels ch ON ch.id = w.channel_id
), locked AS (
  SELECT b.channel_id
    FROM bulkhead.rate_buckets b
   WHERE b.channel_id IN (SELECT channel_id FROM want WHERE rate IS NOT NULL)
   ORDER BY b.channel_id
     FOR UPDATE
), seeded AS (
  INSERT INTO bulkhead.rate_buckets AS b (channel_id, tat, granted)
  SELECT w.channel_id, now() + least(w.n, w.burst) / w.rate * interval '1 second',
         least(w.n, w.burst)
    FROM want w
   WHERE w.rate IS NOT NULL AND w.channel_id NOT IN (SELECT channel_id FROM locked)
   ORDER BY w.channel_id
      ON CONFLICT (channel_id) DO NOTHING
  RETURNING b.channel_id, b.tat, b.granted
), taken AS (
  UPDATE bulkhead.rate_buckets AS b
     SET granted = {{tokens_granted(b.tat, w)}},
         tat = greatest(b.tat, now())
               + {{tokens_granted(b.tat, w)}} / w.rate * interval '1 second'
    FROM want w, locked l
   WHERE b.channel_id = l.channel_id AND w.channel_id = l.channel_id
  RETURNING b.channel_id, b.tat, b.granted
)
SELECT w.channel_id,
       CASE WHEN w.rate IS NULL THEN w.n ELSE coalesce(s.granted, t.granted, 0) END AS granted,
       w.rate,
       coalesce(extract(epoch FROM coalesce(s.tat, t.tat) - now()) * 1000, 0)::float8
         AS tat_in_ms
  FROM want w
  LEFT JOIN seeded s ON s.channel_id = w.channel_id
  LEFT JOIN taken t ON t.channel_id = w.channel_id

-- name: ReturnTokens
-- Gives $2 unused tokens back to each channel $1's rate bucket.
-- param $1 channels bigint[]
-- param $2 tokens integer[]: in the order of $1
-- A runner takes tokens ahead of a claim for a channel with a backlog (RateGate); those the
-- claim found no job for go back, so the limit is not under-used: the bucket's arrival time
-- moves back by 1/rate each (an arrival time in the past is a full bucket, so returning more
-- than is missing changes nothing). A channel whose limit was removed has nothing to return.
UPDATE bulkhead.rate_buckets AS b
   SET tat = b.tat - r.tokens / ch.rate_limit_per_s * interval '1 second'
  FROM unnest($1::bigint[], $2::int[]) AS r(channel_id, tokens), bulkhead.channels ch
 WHERE b.channel_id = r.channel_id AND ch.id = r.channel_id AND ch.rate_limit_per_s IS NOT NULL

-- name: MarkAsleep
-- Records that node $2's runner of queue $1 waits for news (migration 0010, ADR 0019).
-- param $1 queue text
-- param $2 node text
-- An enqueue's trigger notifies a queue only while such a row exists, and takes the row away
-- (migration 0014). Unlogged, so the statement writes no WAL and its commit waits for no flush;
-- a row already there stays as it is (no new row version for a runner that writes it again).
-- NOT EXISTS rather than a unique key: a unique check would wait for an enqueuing commit that
-- is taking the old row, and nothing a runner does may wait for the application.
INSERT INTO bulkhead.sleepers (queue, node)
SELECT $1::text, $2::text
 WHERE NOT EXISTS (SELECT 1 FROM bulkhead.sleepers s WHERE s.queue = $1 AND s.node = $2)

-- name: MarkAwake
-- Deletes node $2's row for queue $1: its runner stops. (A busy runner leaves its row for the
-- next enqueue to take, which notifies it once; migration 0014.)
-- param $1 queue text
-- param $2 node text
DELETE FROM bulkhead.sleepers WHERE queue = $1 AND node = $2

-- name: OpenWakeGate
-- Opens the wake-up gate once the runner's mark has committed (migration 0027).
-- column open_wake_gate void
-- A statement of its own after MarkAsleep's commit: a gate opened before the mark committed
-- could be closed by a commit that did not see the mark.
SELECT bulkhead.open_wake_gate()

-- name: FellAsleep
-- What the runner's SleepHorizon watches, once the gate is open: the next transaction id and
-- the transactions running.
-- column next_xid bigint
-- column xmin bigint
-- column xmax bigint
-- column running text: the running ids below xmax, space-separated
-- A statement of its own after OpenWakeGate's commit, in a transaction with no id: the next
-- id is then the next to be assigned, above every enqueue that found the gate closed.
SELECT next_xid, xmin, xmax, array_to_string(running, ' ') AS running FROM bulkhead.fell_asleep()

-- name: RunningTransactions
-- The transactions running now (pg_current_snapshot), for the sleeping runner's SleepHorizon.
-- column xmin bigint
-- column xmax bigint
-- column running text: the running ids below xmax, space-separated
-- The snapshot's 64-bit ids (xid8) go through text: no cast from xid8 to bigint exists.
SELECT pg_snapshot_xmin(s)::text::bigint AS xmin, pg_snapshot_xmax(s)::text::bigint AS xmax,
       array_to_string(ARRAY(SELECT x::text FROM pg_snapshot_xip(s) x), ' ') AS running
  FROM pg_current_snapshot() s

-- name: DisableGone
-- Disables and pauses channel $1 after job $2 got 410 Gone; parks its backlog and that job.
-- param $1 channel bigint
-- param $2 job bigint
-- param $3 attempt integer
-- param $4 node text
-- param $5 error text
-- param $6 duration_ms double precision
-- column was_enabled boolean
-- column jobs bigint
-- column notified bigint
-- An endpoint answered 410 Gone: the channel is disabled (enqueue refuses it
-- from now on, SQLSTATE 55000 with the reason) and paused, exactly as `bulkhead channel
-- disable` does, and in the same statement its waiting backlog is parked and so is the job
-- that got the 410 (fenced like record: still executing, ours, at this attempt), with the
-- attempt logged but not spent (attempt - 1, as a hand-back): a 410 says the endpoint is gone,
-- not that this delivery failed, so its fate is the operator's — `channel enable` and `channel
-- resume` send the backlog again with its whole budget, `bulkhead cancel` ends it. That job is
-- parked in the queue of its tenant's tier now (a `tenant set-tier` while it was in flight moved
-- only the waiting backlog), so resume sends it where its tenant is served. Running it
-- again (another job of the channel got its 410 meanwhile) keeps the first reason and parks
-- that job too. Returns whether this call disabled the channel, and the jobs parked.
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1::bigint FOR NO KEY UPDATE
), disabled AS (
  UPDATE bulkhead.channels AS ch
     SET enabled = false, paused = true,
         disabled_reason = CASE WHEN before.enabled
                                THEN 'the endpoint answered 410 Gone at '
                                     || to_char(now() AT TIME ZONE 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                                     || ' (job ' || $2::bigint || ')'
                                ELSE ch.disabled_reason END
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
), answered AS (
  UPDATE bulkhead.job_rows AS j
     SET state = 'parked', priority = 3, attempt = j.attempt - 1, last_error = $5::text,
         queue = t.tier,
         attempts = CASE WHEN jsonb_array_length(j.attempts) >= 20 THEN j.attempts - 0
                         ELSE j.attempts END
                    || jsonb_build_array(jsonb_build_object(
                         'attempt', j.attempt, 'at', j.attempted_at, 'node', j.attempted_by,
                         'duration_ms', round($6::float8::numeric, 1), 'status', 410, 'error', $5::text))
    FROM before, bulkhead.tenants AS t
   WHERE j.id = $2::bigint AND j.channel_id = before.id AND j.state = 'executing'
     AND j.attempted_by = $4::text AND j.attempt = $3::int AND t.id = j.tenant_id
  RETURNING 1
), parked AS (
  {{park_backlog(disabled, NULL)}}
)
SELECT before.enabled AS was_enabled,
       (SELECT count(*) FROM parked) + (SELECT count(*) FROM answered) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM disabled) AS notified
  FROM before

-- name: HandBack
-- Gives node $2's claimed jobs $1 back, available (parked if stopped), attempt unspent.
-- param $1 jobs jsonb
-- param $2 node text
-- Claimed but not attempted (or abandoned at shutdown): back to available, the
-- attempt not spent, so the job loses none of its retry budget. Fenced like record. Into the
-- queue of its tenant's tier now, as record and rescue do: `tenant set-tier` moves only waiting
-- jobs, so one in flight during the move would otherwise wait in a queue its tenant left (the
-- new tier's nodes find it at their next poll). `parked` instead, priority 3, where the channel
-- does not flow, as ReturnStranded and rescue do: a runner hands back the jobs of a channel its
-- board has just tripped, and once the opening has committed nothing else would park them but
-- the leader's next round (the runner leaves that channel out of its claims meanwhile).
UPDATE bulkhead.job_rows AS j
   SET state = CASE WHEN {{flowing}} THEN 'available' ELSE 'parked' END,
       priority = CASE WHEN {{flowing}} THEN j.priority ELSE 3 END,
       attempt = j.attempt - 1, queue = t.tier
  FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt smallint), bulkhead.tenants AS t,
       bulkhead.channels AS ch
 WHERE j.id = r.id AND j.state = 'executing' AND j.attempted_by = $2 AND j.attempt = r.attempt
   AND t.id = j.tenant_id AND ch.id = j.channel_id
