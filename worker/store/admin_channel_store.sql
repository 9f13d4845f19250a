-- The admin channel store's statements: what the verbs that look at and change channels,
-- breakers and tenants run — bulkhead breakers, breaker reset, channel add | show | pause |
-- resume | disable | enable | rotate-secret | set, tenant add | show | set-tier
-- (worker/store/admin_channel_store.h). Format: see claim_store.sql.
--
-- Each runs once per command, so it is planned with its parameters (a custom plan).
--
-- rotate-secret is one transaction of four statements, in this order: RotateLock, RotateDrop,
-- RotateRetire, RotateSet.

-- name: ListBreakers
-- Channels whose breaker is not closed or that are paused (or disabled), longest broken first.
-- column channel bigint
-- column tenant text
-- column tier text
-- column state text
-- column paused boolean
-- column since text
-- column since_s double precision
-- column trips integer
-- column reason text
-- column probe_in_s double precision
-- column probe_job bigint
-- column parked bigint
-- Every channel that is not simply flowing — breaker not closed, or paused — with
-- its parked backlog (counted on jobs_parked). Broken breakers first, longest broken first.
SELECT ch.id AS channel, t.name AS tenant, t.tier, ch.breaker_state AS state, ch.paused,
       to_char(ch.breaker_changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS since,
       extract(epoch FROM now() - ch.breaker_changed_at)::float8 AS since_s,
       ch.breaker_trips AS trips, coalesce(ch.breaker_reason, '') AS reason,
       coalesce(extract(epoch FROM ch.breaker_probe_at - now())::float8, 0) AS probe_in_s,
       coalesce(ch.breaker_probe_job, 0) AS probe_job,
       (SELECT count(*) FROM bulkhead.job_rows j WHERE j.channel_id = ch.id AND j.state = 'parked')
         AS parked
  FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id
 WHERE NOT {{flowing}}
 ORDER BY ch.breaker_state = 'closed', ch.breaker_changed_at, ch.id

-- name: ResetBreaker
-- Closes channel $1's breaker from any state and unparks its backlog (unless paused or disabled).
-- param $1 channel bigint
-- column before text
-- column jobs bigint
-- column notified bigint
-- column woken bigint
-- An operator closes a channel's breaker from any state and returns its parked
-- backlog (unless the channel is paused or disabled: the flowing fragment), in one statement. A probe still in flight then
-- answers into a closed breaker, and its compare-and-set matches nothing. On a breaker that
-- was closed already it only unparks what may have stranded, keeping breaker_changed_at.
WITH before AS (
  SELECT id, breaker_state FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), reset AS (
  UPDATE bulkhead.channels AS ch
     SET breaker_state = 'closed', breaker_probe_at = NULL, breaker_probe_job = NULL,
         breaker_trips = 0,
         breaker_changed_at = CASE WHEN before.breaker_state = 'closed'
                                   THEN ch.breaker_changed_at ELSE now() END
    FROM before
   WHERE ch.id = before.id
  RETURNING ch.id, ch.paused, ch.enabled
), unparked AS (
  {{unpark_backlog(reset, reset.enabled AND NOT reset.paused, NULL)}}
)
SELECT before.breaker_state AS before,
       (SELECT count(*) FROM unparked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' closed')) FROM reset) AS notified,
       {{wake_queues(unparked)}} AS woken
  FROM before

-- name: PauseChannel
-- Pauses channel $1, parking its waiting backlog.
-- param $1 channel bigint
-- column before boolean
-- column jobs bigint
-- column notified bigint
-- Holds a channel's deliveries: its waiting backlog is parked in the same
-- statement, and bulkhead.enqueue inserts its new ones parked, until it is resumed.
WITH before AS (
  SELECT id, paused FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), paused AS (
  UPDATE bulkhead.channels AS ch SET paused = true FROM before WHERE ch.id = before.id
  RETURNING ch.id
), parked AS (
  {{park_backlog(paused, NULL)}}
)
SELECT before.paused AS before, (SELECT count(*) FROM parked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM paused) AS notified
  FROM before

-- name: ResumeChannel
-- Resumes channel $1, unparking its backlog if its breaker is closed; refuses a disabled one.
-- param $1 channel bigint
-- column before boolean
-- column enabled boolean
-- column disabled_reason text
-- column jobs bigint
-- column notified bigint
-- column woken bigint
-- Lifts the hold; the parked backlog returns to the queue if the breaker is
-- closed (an open breaker keeps it parked until its probe succeeds). A disabled channel keeps
-- its pause and its backlog parked: disable paused it so that nothing of a channel enqueue
-- refuses is sent, and only `channel enable` (then resume) ends that. It then returns enabled
-- false, its reason, and in `jobs` the parked jobs it kept.
WITH before AS (
  SELECT id, paused, enabled, disabled_reason FROM bulkhead.channels
   WHERE id = $1 FOR NO KEY UPDATE
), resumed AS (
  UPDATE bulkhead.channels AS ch SET paused = false
    FROM before WHERE ch.id = before.id AND before.enabled
  RETURNING ch.id, ch.breaker_state
), unparked AS (
  {{unpark_backlog(resumed, resumed.breaker_state = 'closed', NULL)}}
)
SELECT before.paused AS before, before.enabled,
       coalesce(before.disabled_reason, '') AS disabled_reason,
       CASE WHEN before.enabled THEN (SELECT count(*) FROM unparked)
            ELSE (SELECT count(*) FROM bulkhead.job_rows j
                   WHERE j.channel_id = before.id AND j.state = 'parked') END AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' resumed')) FROM resumed) AS notified,
       {{wake_queues(unparked)}} AS woken
  FROM before

-- name: DisableChannel
-- Disables and pauses channel $1 with reason $2, parking its waiting backlog.
-- param $1 channel bigint
-- param $2 reason text
-- column before boolean
-- column jobs bigint
-- column notified bigint
-- Enqueue refuses the channel from now on (bulkhead.route), and its waiting
-- backlog is held parked, not dropped: a disabled channel is also paused, so the claim, the
-- probe and the reconciler all leave its jobs alone without a new check of their own. Parks in
-- the same statement, like pause_channel.
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), disabled AS (
  UPDATE bulkhead.channels AS ch SET enabled = false, disabled_reason = $2, paused = true
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
), parked AS (
  {{park_backlog(disabled, NULL)}}
)
SELECT before.enabled AS before, (SELECT count(*) FROM parked) AS jobs,
       (SELECT count(pg_notify('bulkhead_breakers', id || ' paused')) FROM disabled) AS notified
  FROM before

-- name: EnableChannel
-- Lets enqueue accept channel $1 again; its pause stays.
-- param $1 channel bigint
-- column before boolean
-- column jobs bigint
-- Enqueue accepts the channel again. The pause that disable set stays, so the
-- parked backlog is sent only when an operator resumes the channel (it may be stale by now).
WITH before AS (
  SELECT id, enabled FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE
), enabled AS (
  UPDATE bulkhead.channels AS ch SET enabled = true, disabled_reason = NULL
    FROM before WHERE ch.id = before.id
  RETURNING ch.id
)
SELECT before.enabled AS before,
       (SELECT count(*) FROM bulkhead.job_rows j, enabled
         WHERE j.channel_id = enabled.id AND j.state = 'parked') AS jobs
  FROM before

-- name: AddChannel
-- A new channel of tenant $1 (a name, or an id) with URL $2 and a generated secret.
-- param $1 tenant text
-- param $2 url text
-- column id bigint
-- column tenant text
-- column tier text
-- column secret text
-- A new channel of a tenant (by name, or by id when no tenant has that name),
-- with a secret from bulkhead.new_secret(). The URL's shape is checked by channels_url_is_http.
WITH tenant AS (
  SELECT t.id, t.name, t.tier FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
), added AS (
  INSERT INTO bulkhead.channels (tenant_id, url) SELECT id, $2 FROM tenant
  RETURNING id, secret
)
SELECT added.id, tenant.name AS tenant, tenant.tier, added.secret FROM added, tenant

-- name: ShowChannel
-- Everything about channel $1 but its secret.
-- param $1 channel bigint
-- column id bigint
-- column tenant_id bigint
-- column tenant text
-- column tier text
-- column url text
-- column created_at text
-- column enabled boolean
-- column paused boolean
-- column disabled_reason text
-- column breaker_state text
-- column breaker_reason text
-- column breaker_trips integer
-- column available bigint
-- column scheduled bigint
-- column executing bigint
-- column parked bigint
-- column old_secrets bigint
-- column old_secrets_until text
-- column event_types jsonb?: a JSON array of names; NULL: every type
-- column rate_limit_per_s double precision?: NULL: no limit
-- column held bigint: counted to 100,001
-- column held_keys bigint
-- One channel, never its secret, with its waiting jobs by state (the channel's
-- ranges of jobs_channel_available and jobs_parked; in flight through jobs_executing), its
-- subscriptions and rate limit (migration 0013), and its ordering state: the deliveries held
-- behind an earlier live delivery of their ordering key (keyed, due at 'infinity'), and how many
-- keys they wait on. Held rows sort last in both of the channel's ranges (scheduled_at order),
-- so the count reads only them, at most 100,001 (the CLI says "100000+"); the keys are counted
-- among those rows.
SELECT ch.id, t.id AS tenant_id, t.name AS tenant, t.tier, ch.url,
       {{utc(ch.created_at)}} AS created_at, ch.enabled, ch.paused,
       coalesce(ch.disabled_reason, '') AS disabled_reason, ch.breaker_state,
       coalesce(ch.breaker_reason, '') AS breaker_reason, ch.breaker_trips,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id = ch.id AND j.state = 'available' AND j.scheduled_at <= now())
         AS available,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id = ch.id AND j.state = 'available' AND j.scheduled_at > now())
         AS scheduled,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id = ch.id AND j.state = 'executing') AS executing,
       (SELECT count(*) FROM bulkhead.job_rows j WHERE j.channel_id = ch.id AND j.state = 'parked')
         AS parked,
       old.n AS old_secrets, coalesce({{utc(old.until)}}, '') AS old_secrets_until,
       to_jsonb(ch.event_types) AS event_types, ch.rate_limit_per_s,
       held.n AS held, held.keys AS held_keys
  FROM bulkhead.channels ch JOIN bulkhead.tenants t ON t.id = ch.tenant_id,
       LATERAL (SELECT count(*) AS n, max(s.expires_at) AS until
                  FROM bulkhead.channel_secrets s
                 WHERE s.channel_id = ch.id AND s.expires_at > now()) AS old,
       LATERAL (SELECT count(*) AS n, count(DISTINCT h.ordering_key) AS keys
                  FROM (SELECT a.ordering_key FROM generate_series(1, 3) AS p(priority)
                         CROSS JOIN LATERAL (
                               SELECT j.ordering_key FROM bulkhead.job_rows j
                                WHERE j.channel_id = ch.id AND j.state = 'available'
                                  AND j.priority = p.priority AND j.scheduled_at = 'infinity'
                                  AND j.ordering_key IS NOT NULL
                                LIMIT 100001) AS a
                        UNION ALL
                        SELECT j.ordering_key FROM bulkhead.job_rows j
                         WHERE j.channel_id = ch.id AND j.state = 'parked'
                           AND j.scheduled_at = 'infinity' AND j.ordering_key IS NOT NULL
                        LIMIT 100001) AS h) AS held
 WHERE ch.id = $1

-- name: SetChannelLimits
-- Sets channel $1's event types to $3 when $2, and its rate limit to $5 when $4; returns both.
-- param $1 channel bigint
-- param $2 set_event_types boolean
-- param $3 event_types jsonb?: a JSON array of names, in order; NULL: every type
-- param $4 set_rate_limit boolean
-- param $5 rate_limit_per_s double precision?: requests a second; NULL: no limit
-- column event_types jsonb?: a JSON array of names; NULL: every type
-- column rate_limit_per_s double precision?: NULL: no limit
-- `bulkhead channel set`: a channel's subscriptions (bulkhead.publish reads them
-- at its next call) and its fleet-wide rate limit (each claim reads it with the job, and the
-- token bucket follows a new rate at the next take), the one not given left as it is. The
-- names come as a JSON array, which carries any text unescaped by hand; '[]' is the empty list
-- (no type), distinct from NULL (every type). The checks channels_event_types_valid and
-- channels_rate_limit_positive refuse what the CLI let through by mistake. No row: no such
-- channel.
UPDATE bulkhead.channels AS ch
   SET event_types = CASE WHEN NOT $2::boolean THEN ch.event_types
                          WHEN $3::jsonb IS NULL THEN NULL
                          ELSE ARRAY(SELECT e.name
                                       FROM jsonb_array_elements_text($3::jsonb)
                                            WITH ORDINALITY AS e(name, n)
                                      ORDER BY e.n) END,
       rate_limit_per_s = CASE WHEN $4::boolean THEN $5::float8 ELSE ch.rate_limit_per_s END
 WHERE ch.id = $1
RETURNING to_jsonb(ch.event_types) AS event_types, ch.rate_limit_per_s

-- name: RotateLock
-- Locks channel $1 for a rotation and says whether $2 is already its secret.
-- param $1 channel bigint
-- param $2 secret text
-- column same boolean
-- Locks the channel's row for the rotation (a second rotation of the same channel
-- waits) and says whether the given new secret ($2, '' when one is to be generated) is already
-- the current one. No row: no such channel. The secrets are compared here, never read out.
SELECT secret = $2 AS same FROM bulkhead.channels WHERE id = $1 FOR NO KEY UPDATE

-- name: RotateDrop
-- Deletes channel $1's old secrets that are expired, equal $3, or all when $2 is 0.
-- param $1 channel bigint
-- param $2 keep_s integer
-- param $3 secret text
-- Deletes the channel's old secrets that are expired, that equal the new secret
-- ($3; it becomes current again), or all of them when the window ($2 seconds) is 0.
DELETE FROM bulkhead.channel_secrets
 WHERE channel_id = $1 AND ($2 = 0 OR expires_at <= now() OR secret = $3)

-- name: RotateRetire
-- Channel $1's current secret becomes an old one, valid for $2 seconds more.
-- param $1 channel bigint
-- param $2 keep_s double precision
-- The current secret becomes an old one, valid for $2 seconds more (> 0).
INSERT INTO bulkhead.channel_secrets (channel_id, secret, expires_at)
SELECT id, secret, now() + $2 * interval '1 second' FROM bulkhead.channels WHERE id = $1
ON CONFLICT (channel_id, secret) DO UPDATE
   SET retired_at = now(),
       expires_at = greatest(bulkhead.channel_secrets.expires_at, excluded.expires_at)

-- name: RotateSet
-- Sets channel $1's new current secret ($2, or a generated one when '').
-- param $1 channel bigint
-- param $2 secret text
-- column secret text
-- column old_secrets bigint
-- column old_secrets_until text
-- The new current secret ($2, or bulkhead.new_secret() when ''), checked by
-- channels_secret_format, and the claim's gate recomputed from the old secrets left. Returns
-- the new secret (for the operator, once), how many old secrets stay valid, and until when.
UPDATE bulkhead.channels AS ch
   SET secret = coalesce(nullif($2, ''), bulkhead.new_secret()),
       old_secrets_until = (SELECT max(s.expires_at) FROM bulkhead.channel_secrets s
                             WHERE s.channel_id = ch.id)
 WHERE ch.id = $1
RETURNING ch.secret,
          (SELECT count(*) FROM bulkhead.channel_secrets s WHERE s.channel_id = ch.id) AS old_secrets,
          coalesce({{utc(ch.old_secrets_until)}}, '') AS old_secrets_until

-- name: SetTenantTier
-- Moves tenant $1 (a name, or an id) and its waiting jobs to tier $2.
-- param $1 tenant text
-- param $2 tier text
-- column tenant text
-- column before text
-- column available bigint
-- column parked bigint
-- column woken bigint
-- Moves a tenant (by name, or by id when no tenant has that name) to another
-- tier, and its waiting jobs (available and parked) to that tier's queue, in one statement;
-- jobs in flight finish where they are, and retry in the new queue (see record). A tier that
-- does not exist fails on tenants.tier's foreign key (23503). Wakes the new queue's nodes.
WITH tenant AS (
  SELECT t.id, t.name, t.tier FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
     FOR NO KEY UPDATE
), moved AS (
  UPDATE bulkhead.tenants AS t SET tier = $2 FROM tenant WHERE t.id = tenant.id RETURNING t.id
), jobs_moved AS (
  UPDATE bulkhead.job_rows AS j
     SET queue = $2
    FROM bulkhead.channels ch, moved
   WHERE ch.tenant_id = moved.id AND j.channel_id = ch.id
     AND j.state IN ('available', 'parked') AND j.queue <> $2
  RETURNING j.state
)
SELECT tenant.name AS tenant, tenant.tier AS before,
       (SELECT count(*) FROM jobs_moved WHERE state = 'available') AS available,
       (SELECT count(*) FROM jobs_moved WHERE state = 'parked') AS parked,
       (SELECT count(*) FROM moved, pg_notify('bulkhead_jobs', $2)) AS woken
  FROM tenant

-- name: AddTenant
-- A new tenant named $1 on tier $2: its id.
-- param $1 name text
-- param $2 tier text
-- column id bigint
INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, $2) RETURNING id

-- name: ShowTenant
-- Tenant $1 (a name, or an id) with its channels and waiting jobs by state.
-- param $1 tenant text
-- column id bigint
-- column name text
-- column tier text
-- column created_at text
-- column channels bigint
-- column available bigint
-- column scheduled bigint
-- column executing bigint
-- column parked bigint
-- One tenant (by name, or by id when no tenant has that name) with its channels
-- and its waiting jobs by state, found through its channels (channels_tenant, then each
-- channel's ranges of jobs_channel_available and jobs_parked).
WITH tenant AS (
  SELECT t.* FROM bulkhead.tenants t
   WHERE t.name = $1
      OR (t.id::text = $1 AND NOT EXISTS (SELECT 1 FROM bulkhead.tenants WHERE name = $1))
), channel AS (
  SELECT ch.id FROM bulkhead.channels ch, tenant WHERE ch.tenant_id = tenant.id
)
SELECT tenant.id, tenant.name, tenant.tier, {{utc(tenant.created_at)}} AS created_at,
       (SELECT count(*) FROM channel) AS channels,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'available'
           AND j.scheduled_at <= now()) AS available,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'available'
           AND j.scheduled_at > now()) AS scheduled,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.tenant_id = tenant.id AND j.state = 'executing') AS executing,
       (SELECT count(*) FROM bulkhead.job_rows j
         WHERE j.channel_id IN (SELECT id FROM channel) AND j.state = 'parked') AS parked
  FROM tenant
