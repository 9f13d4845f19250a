-- The parts of the claim statement (claim_store.sql, `-- name: Claim`), kept apart so that each
-- file reads in one sitting: its windows and their lock step, the check before every lock
-- (untouched), the caps, the skip scan's step, the lending and the old secrets of a claimed
-- row. Fragments only (format: claim_store.sql, named_queries.cmake); every statement that uses
-- them is in claim_store.sql.

-- fragment: old_secrets
-- The old secrets of a claimed row's channel (the CTE `claimed`) that are still in their
-- rotation window, newest retired first, space-separated (secrets contain no space); NULL when
-- there is none (migration 0004, ADR 0008). The gate `old_secrets_until > now()` is a column of
-- the row the claim already has: PostgreSQL evaluates a CASE branch only when it is taken, so
-- the lookup (channel_secrets_pkey) runs only for claimed rows of a channel in a rotation, and a
-- fleet that never rotates pays one NULL column. The sub-select's own `expires_at > now()`
-- drops secrets whose window ended even before the leader prunes them.
CASE WHEN claimed.old_secrets_until > now() THEN
  (SELECT string_agg(s.secret, ' ' ORDER BY s.retired_at DESC, s.secret)
     FROM bulkhead.channel_secrets s
    WHERE s.channel_id = claimed.channel_id AND s.expires_at > now()) END

-- fragment: claim_inputs
-- The claim's first CTEs (Claim and ClaimFront): what this node has in flight per channel
-- (flying: $4, $5, with each channel's window $10 and lend window $13) and per tenant
-- (tenant_flying: $6, $7), and the statement's snapshot with the first transaction id it does
-- not see (snap, for the fragment untouched).
flying AS (
  SELECT u.channel_id, u.n, u.win, u.lend
    FROM unnest($4::bigint[], $5::int[], $10::int[], $13::int[]) AS u(channel_id, n, win, lend)
), snap AS (
  SELECT pg_current_snapshot() AS snapshot,
         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS next
), tenant_flying AS (
  SELECT u.tenant_id, u.n FROM unnest($6::bigint[], $7::int[]) AS u(tenant_id, n)
)

-- fragment: claim_window(priority, gate)
-- One of the claim's three windows (see Claim): the due available jobs of queue $1 at
-- `priority`, read only when `gate` holds, in order from jobs_claim, at most $2 + $14 of them
-- (the look-ahead $14: 1,000, or 10 after a claim whose windows kept nothing; see Claim).
-- Those of a channel at its window or cap, or of a tenant past half its cap with less room than
-- the limit $2, are left out after the window (the skip scan takes such a tenant, up to its
-- room); the rest are locked one by one (FOR UPDATE SKIP LOCKED, in a LATERAL) until there are
-- $2.
--
-- The lock step reaches each row by its ctid, the version the window's scan just read: a TID
-- scan, one heap page a row, which no statistics can turn into anything else. By `id` it was
-- planned through the primary key or through jobs_claim, whichever the statistics made look
-- cheaper, and with statistics taken when the table held no available row (a big table of
-- finished jobs, re-analyzed only after a tenth of it changes) jobs_claim won: the whole
-- queue's available range read once per row, 360 buffers and 1.3 ms a row beside 1,000,000
-- finished jobs (issue 34). A row updated since the statement's snapshot (another node claimed
-- it, a snooze moved it) has a newer version elsewhere; the fragment untouched leaves it before
-- the lock, which would follow the update chain and lock the newest version. Were it ever
-- locked, the recheck of `ctid = w.ctid` on that version would fail and skip it all the same
-- (tried with a concurrent update committed between a scan and its lock). So every row locked
-- here is the version the snapshot saw, unchanged, and its ctid is where the claim's update
-- reaches it, the same way.
--
-- A ctid names a row only within its table, and on a `jobs` partitioned into ranges of ids
-- (ADR 0026) the same ctid is a row in every range: so the lock step names the row's id beside
-- its ctid, which prunes the ranges to the row's own at run time (a TID scan of one range), and
-- on one table costs nothing (the TID scan stays, `id` a filter). Every statement that reaches
-- a row by its ctid does the same (tests/schema/jobs_in_ranges.sql runs the tests on ranges).
--
-- The window's scan applies the same test (untouched) to the version it reads, before its LIMIT
-- counts it: a row another node's claim holds, or claimed since this statement's snapshot, is
-- one the lock step would leave anyway. At 8 nodes a front read 128 rows a claim to lock 14: 83
-- left by the caps and 31 by the lock step (auto_explain of 345 fronts, production's shape,
-- 2026-12-07, load/claim_trace.awk). Counted, such rows used up the look-ahead, and each cost a
-- TID scan. The lock step keeps its own test, which decides: the row may be taken in between.
--
-- Every read of jobs here and in the fragments below starts at the claim floor $18 (ADR 0027):
-- no job below it can be claimed, and on ranges the generic plan leaves the ranges below it
-- out when it starts. On one table it is a filter on the index's own `id`.
SELECT d.*
    FROM (SELECT k.id, k.ctid, k.channel_id, k.tenant_id FROM bulkhead.job_rows k
           WHERE k.queue = $1 AND k.state = 'available' AND k.priority = {{priority}}
             AND k.scheduled_at <= now() AND k.id >= $18
             AND {{gate}} AND {{untouched(k)}}
           ORDER BY k.scheduled_at, k.id
           LIMIT $2 + $14::int) AS w
   CROSS JOIN LATERAL (
         SELECT j.id, j.channel_id, j.tenant_id, j.priority, j.scheduled_at, j.ctid
           FROM bulkhead.job_rows j
          WHERE j.id = w.id AND j.ctid = w.ctid AND j.id >= $18 AND j.state = 'available'
            AND {{untouched(j)}}
            FOR UPDATE SKIP LOCKED) AS d
   WHERE {{uncapped(w, least($2, ($9 + 1) / 2))}}
   LIMIT $2

-- fragment: untouched(row)
-- `row` (a job the claim is about to lock) has not been changed or locked by a transaction that
-- the statement's snapshot does not see: its xmax is 0, or a transaction the snapshot sees as
-- ended (a claim that locked the row and left it), or this statement's own. A row that fails is
-- left for the next claim, which has a newer snapshot.
--
-- Why (issue 30, goal 4). When another node claimed a row after this statement's snapshot was
-- taken, the version the claim found is no longer the newest. FOR UPDATE in READ COMMITTED then
-- follows the update chain, locks the newest version (the other node's `executing` row), rechecks
-- the conditions, which fail, and skips it, but keeps the lock until the statement ends. The
-- other node's result write for that row waited for it: with 8 nodes on one database the result
-- write took 67 ms a call instead of 4, a lock wait in 172 of 208 samples
-- (`load/engine_bench.sh fleet`). Nothing in SQL locks a version without following its chain,
-- so the claim looks first: the row's xmax, placed in the snapshot's epoch (`snap`), must be
-- visible to the snapshot. A row locked by a claim still running is left here too, which SKIP
-- LOCKED would have done. An xmax that is a MultiXact id (two lockers at once, which no statement
-- on jobs makes today) is read as a transaction id; beyond 2^20 ahead of the snapshot it counts
-- as untouched, so at worst such a row waits until the transaction ids pass it, and the lock's
-- own SKIP LOCKED still decides whether it is taken.
({{row}}.xmax = '0'::xid
             OR (SELECT f.xid < 0 OR f.xid >= s.next + 1048576
                        OR f.xid = pg_current_xact_id_if_assigned()::text::bigint
                        OR pg_visible_in_snapshot(f.xid::text::xid8, s.snapshot)
                   FROM snap s,
                        LATERAL (SELECT s.next + ((({{row}}.xmax::text::bigint - s.next) % 4294967296
                                                   + 6442450944) % 4294967296 - 2147483648)
                                   AS xid) AS f))

-- fragment: uncapped(row, tenant_room)
-- The claim's caps: `row`'s channel is not among those this node runs at their window or cap,
-- nor its tenant among those with less than `tenant_room` left below their cap (the CTEs flying
-- and tenant_flying, from $4–$7 and $10, against the caps $8 and $9). A channel at its window
-- may take nothing more, so its rows are not locked either. The skip scan passes 1 (a tenant at
-- its cap is left out), the windows the limit or half the cap, whichever is less (so is a
-- tenant past half its cap that could not take a whole claim; see Claim).
{{row}}.channel_id <> ALL(ARRAY(SELECT channel_id FROM flying
                                         WHERE n >= least(coalesce(win, $11), $8)))
             AND {{row}}.tenant_id <> ALL(ARRAY(SELECT tenant_id FROM tenant_flying
                                                 WHERE $9 - n < {{tenant_room}}))

-- fragment: within_caps(rows)
-- The rows of the CTE `rows` (id, channel_id, tenant_id, priority, scheduled_at, ctid) that the caps
-- let one claim take: ranked per channel and per tenant in claim order after what this node
-- already runs (flying, tenant_flying), at most each channel's window ($10, or the first
-- window $11 for a channel not in flight here) and cap ($8), and each tenant's cap ($9).
SELECT r.*
    FROM (SELECT c.*,
                 row_number() OVER (PARTITION BY c.channel_id
                                    ORDER BY c.priority, c.scheduled_at, c.id)
                   + coalesce(f.n, 0) AS channel_n,
                 row_number() OVER (PARTITION BY c.tenant_id
                                    ORDER BY c.priority, c.scheduled_at, c.id)
                   + coalesce(t.n, 0) AS tenant_n,
                 least(coalesce(f.win, $11), $8) AS channel_room
            FROM {{rows}} c
            LEFT JOIN flying f ON f.channel_id = c.channel_id
            LEFT JOIN tenant_flying t ON t.tenant_id = c.tenant_id) AS r
   WHERE r.channel_n <= r.channel_room AND r.tenant_n <= $9

-- fragment: next_head(after)
-- The skip scan's step (Claim's CTE heads): the first available job, in jobs_channel_available's
-- order, whose (channel, priority) comes after `after` (a row comparison, so one index descent
-- skips a whole backlog, however long); the first of all when `after` is the lowest pair.
SELECT h.channel_id, h.priority, h.tenant_id, h.queue, h.scheduled_at
           FROM bulkhead.job_rows h
          WHERE h.state = 'available' AND (h.channel_id, h.priority) > {{after}} AND h.id >= $18
          ORDER BY h.channel_id, h.priority, h.scheduled_at, h.id
          LIMIT 1

-- fragment: lend
-- The claim's lending (ADR 0013, docs/caps.md). When what the caps let through (picked) leaves
-- the lending budget $12 unspent, the due jobs not picked of channels the runner lends to
-- ($13: a lend window for each channel of $4, 0 for none) are taken in turns, each channel up
-- to its lend window less what it has in flight and was picked, until the claim has lent $12
-- less what it picked. All that is left after the picks is what the caps held back. The
-- runner lends only to channels that have answered quickly (a grown window) and are not
-- failing, and passes the budget as its free slots less the reserve: lent jobs never take the
-- slots the reserve keeps for everyone else, and the caps bind again at the next claim once
-- anyone else has due work, since theirs is picked first. The heads exist only when the
-- windows fell short and something was held back, which a channel or tenant at its cap always
-- is. Rows the windows locked and the caps left are this statement's own locks, which SKIP
-- LOCKED does not skip: the NOT EXISTS keeps them from being taken twice.
SELECT next.*
    FROM (SELECT h.channel_id, h.priority,
                 coalesce(f.lend - f.n, 0) - coalesce(picked_here.n, 0) AS room,
                 row_number() OVER (PARTITION BY h.tenant_id, h.priority
                                    ORDER BY h.scheduled_at, h.channel_id) AS turn,
                 h.scheduled_at
            -- Joined, not a sub-select per head, which scans flying and picked once a head
            -- (the spread in Claim: the same).
            FROM heads h
            LEFT JOIN flying f ON f.channel_id = h.channel_id
            LEFT JOIN (SELECT p.channel_id, count(*) AS n FROM picked p GROUP BY p.channel_id)
                   AS picked_here ON picked_here.channel_id = h.channel_id
           WHERE $12 > (SELECT count(*) FROM picked)
             AND h.queue = $1 AND h.scheduled_at <= now()
           ORDER BY h.priority, turn, h.scheduled_at, h.channel_id
           LIMIT $12) AS g
   CROSS JOIN LATERAL (
         SELECT j.id, j.ctid
           FROM bulkhead.job_rows j
          WHERE j.channel_id = g.channel_id AND j.state = 'available'
            AND j.priority = g.priority AND j.queue = $1 AND j.scheduled_at <= now()
            AND j.id >= $18 AND {{untouched(j)}}
            AND NOT EXISTS (SELECT FROM picked p WHERE p.id = j.id)
          ORDER BY j.scheduled_at, j.id
          LIMIT greatest(least(g.room, $12), 0)
            FOR UPDATE SKIP LOCKED) AS next
   LIMIT greatest($12 - (SELECT count(*) FROM picked), 0)

-- fragment: claim_update
-- The claim's write (Claim and ClaimFront, the CTE `claimed`): each row of the CTE `claiming` (id,
-- ctid: the version the claim locked) marked executing for node $3 with attempt + 1, or parked
-- when its channel does not flow (the fragment flowing); RETURNING what the request needs.
UPDATE bulkhead.job_rows AS j
   SET state = CASE WHEN flow.ok THEN 'executing' ELSE 'parked' END,
       priority = CASE WHEN flow.ok THEN j.priority ELSE 3 END,
       attempt = CASE WHEN flow.ok THEN j.attempt + 1 ELSE j.attempt END,
       -- clock_timestamp(), not now(): the time the row is claimed, not the time the
       -- statement began, which a wait for a lock can put seconds earlier, enough for the
       -- stranded sweep (ReturnStranded) to take a claim that just committed for a lost one
       -- (issue 31).
       attempted_at = CASE WHEN flow.ok THEN clock_timestamp() ELSE j.attempted_at END,
       attempted_by = CASE WHEN flow.ok THEN $3 ELSE j.attempted_by END
  FROM claiming, bulkhead.channels AS ch,
       LATERAL (SELECT {{flowing}}) AS flow(ok)
 WHERE j.id = claiming.id AND j.ctid = claiming.ctid AND j.id >= $18 AND ch.id = j.channel_id
RETURNING j.id, j.channel_id, j.tenant_id, j.attempt, j.max_attempts, j.payload::text,
          ch.url, ch.secret, j.priority, j.scheduled_at, j.state, ch.old_secrets_until,
          ch.rate_limit_per_s

-- fragment: claim_rows
-- The claim's answer (Claim and ClaimFront): the rows of `claimed` in claim order, each with what
-- the CTE `seen` saw; one row with NULL job columns when it took nothing.
SELECT claimed.id, claimed.channel_id, claimed.tenant_id, claimed.attempt, claimed.max_attempts,
       claimed.payload, claimed.url, claimed.secret,
       claimed.state = 'parked' AS parked,
       -- The queue wait (bulkhead_queue_wait_seconds): from enqueue, or the retry's
       -- scheduled time, to this claim. scheduled_at is set at enqueue and by every retry.
       greatest(extract(epoch FROM now() - claimed.scheduled_at), 0)::float8 AS wait_s,
       CASE WHEN claimed.state = 'executing' THEN {{old_secrets}} END AS old_secrets,
       -- Read with every claim, so a changed limit reaches the runner's RateGate at once.
       claimed.rate_limit_per_s,
       seen.*
  FROM seen LEFT JOIN claimed ON true
 ORDER BY claimed.priority, claimed.scheduled_at, claimed.id
