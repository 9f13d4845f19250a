#!/usr/bin/env bash
# run.sh — the operator console's browser test (docs/console.md), end to end:
#
#   tests/console_browser/run.sh
#
# Starts a throwaway PostgreSQL 15 (load/embedded_postgres.sh), migrates and seeds it, starts
# `build/bin/bulkhead console` on a free loopback port with an admin and a viewer token, runs
# console_browser_test.mjs in Debian's Chromium (puppeteer-core), stops everything and exits with
# the test's status. It builds nothing: build/bin/bulkhead must exist (./setup.sh builds it).
#
# Environment:
#   SCREENSHOT_DIR       where the page screenshots go (default: a new folder under /tmp)
#   CONSOLE_SCREENSHOTS  a folder relative to the repository (docs/console) to write them into
#                        instead, for the docs
#   CHROMIUM             the browser (default /usr/bin/chromium; apt-get install -y chromium)
#   BULKHEAD_BIN         the bulkhead binary (default build/bin/bulkhead; ctest passes the
#                        binary of the build it runs in: release, asan or tsan)
#   KEEP_WORK=1          keep the work folder (database, console log) after the run
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

say() { echo "console_browser: $*" >&2; }
die() { say "$*"; exit 1; }

bin=${BULKHEAD_BIN:-$repo/build/bin/bulkhead}  # ctest gives each build's own
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$bin" ] || die "$bin is missing; build it first (./setup.sh)"
[ -x "$chromium" ] || die "$chromium is missing; install it with: apt-get install -y chromium"
command -v node >/dev/null || die "node is missing (node 18 or newer)"
if [ ! -d "$here/node_modules/puppeteer-core" ]; then
  say "installing puppeteer-core (npm ci)"
  (cd "$here" && npm ci --no-audit --no-fund >/dev/null) || die "npm ci failed in $here"
fi

if [ -n "${CONSOLE_SCREENSHOTS:-}" ]; then
  screenshots=$repo/$CONSOLE_SCREENSHOTS
else
  screenshots=${SCREENSHOT_DIR:-$(mktemp -d /tmp/bulkhead-console-screenshots.XXXXXX)}
fi
mkdir -p "$screenshots"

# The work folder must be reachable by the postgres system user (the database runs as it under
# root), so it is made world-traversable rather than mktemp's 0700.
work=$(mktemp -d /tmp/bulkhead-console-test.XXXXXX)
chmod 0755 "$work"
console_pid=
cleanup() {
  local status=$?
  if [ -n "$console_pid" ] && kill -0 "$console_pid" 2>/dev/null; then
    kill "$console_pid" 2>/dev/null || true
    wait "$console_pid" 2>/dev/null || true
  fi
  "$repo/load/embedded_postgres.sh" stop "$work/pg" >/dev/null 2>&1 || true
  if [ "${KEEP_WORK:-0}" = 1 ]; then say "work folder kept: $work"; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting PostgreSQL in $work/pg"
conn=$("$repo/load/embedded_postgres.sh" start "$work/pg")
psql_db() { psql -X -q -v ON_ERROR_STOP=1 "$conn" "$@"; }

"$bin" migrate up --database "$conn" >/dev/null || die "bulkhead migrate up failed"

# Seed: two tenants; channel "orders" with 5 discarded deliveries and then an open breaker (so
# 3 more are parked), "billing" with 6 available deliveries (paused by the test), "globex" with
# completed and discarded ones (the viewer looks at them), "legacy" disabled after a 410; one
# node. The breaker goes closed → open → half_open → open, so its history has rows.
psql_db >/dev/null <<'SQL' || die "seeding the database failed"
INSERT INTO bulkhead.tenants (name, tier) VALUES ('acme', 'default'), ('globex', 'bulk');
INSERT INTO bulkhead.channels (tenant_id, url)
SELECT t.id, u.url FROM (VALUES ('acme', 'https://hooks.acme.example/orders'),
                                ('acme', 'https://hooks.acme.example/billing'),
                                ('globex', 'https://globex.example/webhook'))
                         AS u(tenant, url) JOIN bulkhead.tenants t ON t.name = u.tenant;
INSERT INTO bulkhead.channels (tenant_id, url, enabled, paused, disabled_reason)
SELECT id, 'https://globex.example/legacy', false, true, 'the endpoint answered 410 Gone'
  FROM bulkhead.tenants WHERE name = 'globex';
INSERT INTO bulkhead.nodes (name, host, pid, version, tiers, lease_until)
VALUES ('node-a', 'worker-1', 4242, 'test', '{default,bulk}', now() + interval '1 hour');

SELECT bulkhead.enqueue(c.id, jsonb_build_object('order', i, 'note', '<b>not html</b>'))
  FROM bulkhead.channels c, generate_series(1, 5) i WHERE c.url LIKE '%/orders';
SELECT bulkhead.enqueue(c.id, jsonb_build_object('invoice', i))
  FROM bulkhead.channels c, generate_series(1, 6) i WHERE c.url LIKE '%/billing';
SELECT bulkhead.enqueue(c.id, jsonb_build_object('event', i))
  FROM bulkhead.channels c, generate_series(1, 4) i WHERE c.url LIKE '%/webhook';

-- Discard the orders and two of globex's: eight attempts, the last a timeout.
UPDATE bulkhead.jobs j
   SET state = 'discarded', attempt = 8, attempted_at = now() - interval '2 min',
       created_at = now() - interval '2 hours', scheduled_at = now() - interval '2 hours',
       attempted_by = 'node-a', finished_at = now() - interval '1 min',
       last_error = 'timeout after 10 s',
       attempts = (SELECT jsonb_agg(CASE WHEN i < 8
                     THEN jsonb_build_object('attempt', i, 'at', now() - make_interval(mins => 60 - i),
                                             'node', 'node-a', 'duration_ms', 100.5 + i, 'status', 503)
                     ELSE jsonb_build_object('attempt', i, 'at', now() - interval '2 min',
                                             'node', 'node-a', 'duration_ms', 10000.0,
                                             'error', 'timeout after 10 s') END ORDER BY i)
                     FROM generate_series(1, 8) i)
  FROM bulkhead.channels c
 WHERE c.id = j.channel_id
   AND (c.url LIKE '%/orders' OR (c.url LIKE '%/webhook' AND j.id % 2 = 0));
UPDATE bulkhead.jobs j
   SET state = 'completed', attempt = 1, attempted_at = now() - interval '3 min',
       created_at = now() - interval '4 min', scheduled_at = now() - interval '4 min',
       attempted_by = 'node-a', finished_at = now() - interval '3 min',
       attempts = jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now() - interval '3 min',
                                    'node', 'node-a', 'duration_ms', 42.0, 'status', 200))
  FROM bulkhead.channels c
 WHERE c.id = j.channel_id AND c.url LIKE '%/webhook' AND j.state = 'available';

-- The orders breaker: open, probe, open again.
UPDATE bulkhead.channels
   SET breaker_state = 'open', breaker_trips = 1, breaker_probe_at = now() + interval '30 s',
       breaker_reason = '5 failures in a row, last: HTTP 503'
 WHERE url LIKE '%/orders';
UPDATE bulkhead.channels
   SET breaker_state = 'half_open',
       breaker_probe_job = (SELECT min(id) FROM bulkhead.jobs WHERE channel_id = channels.id)
 WHERE url LIKE '%/orders';
UPDATE bulkhead.channels
   SET breaker_state = 'open', breaker_trips = 2, breaker_probe_job = NULL,
       breaker_probe_at = now() + interval '60 s', breaker_changed_at = now() - interval '90 s',
       breaker_reason = 'probe failed: timeout after 10 s'
 WHERE url LIKE '%/orders';
SELECT bulkhead.enqueue(c.id, jsonb_build_object('order', 100 + i))
  FROM bulkhead.channels c, generate_series(1, 3) i WHERE c.url LIKE '%/orders';
SQL

channel_id() { psql_db -Atc "SELECT id FROM bulkhead.channels WHERE url LIKE '%$1'"; }
breaker_channel=$(channel_id /orders)
pause_channel=$(channel_id /billing)
viewer_channel=$(channel_id /webhook)
gone_channel=$(channel_id /legacy)

# Tokens: 32 hex characters each, in files of their own.
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/admin.token"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/viewer.token"
chmod 0600 "$work/admin.token" "$work/viewer.token"

port=$(node -e "const s = require('net').createServer(); s.listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); });")
url=http://127.0.0.1:$port
say "starting bulkhead console on $url"
"$bin" console --listen "127.0.0.1:$port" --token-file "$work/admin.token" \
  --viewer-token-file "$work/viewer.token" --database "$conn" >"$work/console.log" 2>&1 &
console_pid=$!

# Up when GET /login answers 200; at most 20 s.
for _ in $(seq 1 100); do
  if ! kill -0 "$console_pid" 2>/dev/null; then
    tail -n 20 "$work/console.log" >&2
    die "bulkhead console exited before answering"
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url/login" || true)
  [ "$code" = 200 ] && break
  sleep 0.2
done
[ "${code:-}" = 200 ] || { tail -n 20 "$work/console.log" >&2; die "GET /login never answered 200 (last: ${code:-none})"; }

status=0
CONSOLE_URL=$url \
CONSOLE_ADMIN_TOKEN=$(cat "$work/admin.token") \
CONSOLE_VIEWER_TOKEN=$(cat "$work/viewer.token") \
BREAKER_CHANNEL=$breaker_channel PAUSE_CHANNEL=$pause_channel VIEWER_CHANNEL=$viewer_channel \
GONE_CHANNEL=$gone_channel \
DISCARDED_COUNT=5 SCREENSHOT_DIR=$screenshots CHROMIUM=$chromium \
  timeout --kill-after=5 150 node "$here/console_browser_test.mjs" || status=$?

if [ "$status" -ne 0 ]; then
  say "the console's log (last 30 lines):"
  tail -n 30 "$work/console.log" >&2
  say "FAILED (status $status)"
else
  say "passed; screenshots in $screenshots"
fi
exit "$status"
