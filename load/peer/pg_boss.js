// pg_boss.js — pg-boss 10's side of load/peer_bench.sh: enqueue the jobs, then run a worker that
// delivers each job as one webhook POST.
//
//   NODE_PATH=.run/peer-npm/node_modules node load/peer/pg_boss.js enqueue \
//     --database postgresql://bulkhead@/peer_pgboss?host=/path/to/socket/dir \
//     --jobs 20000 --payload '{"type": "invoice.paid", …}'
//   NODE_PATH=… node load/peer/pg_boss.js work --database … --concurrency 32 --pool 32 \
//     --workers 1 --polling-interval 0.5 --url http://127.0.0.1:PORT/hook/pgboss
//
// Needs Node 20 or later (pg-boss 10's engines field); load/peer_bench.sh skips pg-boss on an
// older Node.
//
// enqueue installs pg-boss's schema (pgboss), creates the queue `deliver` (standard policy) and
// inserts --jobs jobs with --payload as their data through boss.insert(), 1,000 per call.
// Each job has retryLimit 0: a failed delivery ends the job in state `failed` instead of being
// retried, so a failure cannot keep the benchmark waiting.
//
// How concurrency is expressed. pg-boss 10 has no concurrency option: work() takes batchSize,
// pollingIntervalSeconds, includeMetadata and priority (src/attorney.js, checkWorkArgs). A
// work() call starts one polling loop that fetches up to batchSize jobs, hands them to the
// handler as an array, and completes them when the handler's promise resolves; several work()
// calls on one queue run several such loops. So --concurrency C runs --workers W work() calls
// with batchSize C / W each, and the handler POSTs every job of its batch at once
// (Promise.allSettled), failing the jobs whose POST failed (boss.fail) so the others complete:
// at most C deliveries are in flight. pg-boss's loop waits out the rest of its polling
// interval after every fetch, even when it found jobs (src/worker.js: unless the fetch and the
// handler took within 100 ms of the interval), so one loop handles at most batchSize jobs per
// interval; --polling-interval is pg-boss's pollingIntervalSeconds, and the script passes its
// minimum, 0.5 (the default is 2). The default --workers, 1, makes one fetch per interval for
// all C jobs: C loops of one job each would have the same ceiling and C times the fetches.
//
// Every other option is pg-boss's default (maintenance and monitoring on, a pool of --pool
// connections, `max`). It stops on SIGTERM: boss.stop() lets the handlers in flight finish.
'use strict';

const { parseArgs } = require('node:util');
const PgBoss = require('pg-boss');
const { makePoster } = require('./webhook_post');
const args = require('./args');

const QUEUE = 'deliver';
const ENQUEUE_BATCH = 1000;

async function enqueue({ database, jobs, payload }) {
  const data = JSON.parse(payload);
  const boss = new PgBoss({ connectionString: database, supervise: false, schedule: false });
  boss.on('error', (err) => console.error(`pg-boss error: ${err.message}`));
  await boss.start();
  try {
    await boss.createQueue(QUEUE);
    for (let done = 0; done < jobs; done += ENQUEUE_BATCH) {
      const n = Math.min(ENQUEUE_BATCH, jobs - done);
      await boss.insert(Array.from({ length: n }, () => ({ name: QUEUE, data, retryLimit: 0 })));
    }
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

async function work({ database, concurrency, pool, workers, pollingInterval, url }) {
  if (concurrency % workers !== 0) {
    throw new Error(`--concurrency ${concurrency} is not a multiple of --workers ${workers}`);
  }
  const post = makePoster({ url, concurrency });
  const boss = new PgBoss({ connectionString: database, max: pool });
  boss.on('error', (err) => console.error(`pg-boss error: ${err.message}`));
  await boss.start();

  const handler = async (jobs) => {
    const results = await Promise.allSettled(jobs.map((job) => post(JSON.stringify(job.data), job.id)));
    const failed = jobs.filter((_, i) => results[i].status === 'rejected').map((job) => job.id);
    if (failed.length > 0) {
      const reason = results.find((r) => r.status === 'rejected').reason;
      await boss.fail(QUEUE, failed, { message: String(reason && reason.message) });
    }
  };
  const batchSize = concurrency / workers;
  for (let i = 0; i < workers; i++) {
    await boss.work(QUEUE, { batchSize, pollingIntervalSeconds: pollingInterval }, handler);
  }

  process.once('SIGTERM', () => {
    boss.stop({ graceful: true, wait: true, timeout: 10000 })
      .then(() => process.exit(0), (err) => { console.error(`pg-boss stop: ${err.message}`); process.exit(1); });
  });
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      database: { type: 'string' },
      jobs: { type: 'string' },
      payload: { type: 'string' },
      concurrency: { type: 'string' },
      pool: { type: 'string' },
      workers: { type: 'string', default: '1' },
      'polling-interval': { type: 'string', default: '0.5' },
      url: { type: 'string' },
    },
  });
  const need = (name) => args.need(values, name);
  const { positive } = args;
  switch (positionals[0]) {
    case 'enqueue':
      return enqueue({ database: need('database'), jobs: positive('jobs', need('jobs')), payload: need('payload') });
    case 'work': {
      const pollingInterval = Number(values['polling-interval']);
      if (!(pollingInterval >= 0.5)) {
        throw new Error(`--polling-interval must be a number of seconds, at least 0.5, not '${values['polling-interval']}'`);
      }
      return work({
        database: need('database'),
        concurrency: positive('concurrency', need('concurrency')),
        pool: positive('pool', need('pool')),
        workers: positive('workers', values.workers),
        pollingInterval,
        url: need('url'),
      });
    }
    default:
      throw new Error('usage: pg_boss.js enqueue|work --database URL … (see the header)');
  }
}

main().catch((err) => {
  console.error(`pg_boss.js: ${err.stack || err}`);
  process.exit(1);
});
