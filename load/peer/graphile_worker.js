// graphile_worker.js — graphile-worker 0.16's side of load/peer_bench.sh: enqueue the jobs, then
// run a worker that delivers each job as one webhook POST.
//
//   NODE_PATH=.run/peer-npm/node_modules node load/peer/graphile_worker.js enqueue \
//     --database postgresql://bulkhead@/peer_graphile?host=/path/to/socket/dir \
//     --jobs 20000 --payload '{"type": "invoice.paid", …}'
//   NODE_PATH=… node load/peer/graphile_worker.js work --database … \
//     --concurrency 32 --pool 32 --url http://127.0.0.1:PORT/hook/graphile
//
// enqueue migrates graphile-worker's schema (graphile_worker) and adds --jobs jobs of the task
// `deliver` with --payload, through graphile-worker's own batch function
// graphile_worker.add_jobs, 1,000 per call. Each job has max_attempts 1: a failed delivery
// ends the job (it stays in graphile_worker.jobs with its last_error) instead of being retried
// after graphile-worker's backoff, so a failure cannot keep the benchmark waiting.
//
// work runs graphile-worker's run() with --concurrency and maxPoolSize --pool (graphile-worker
// advises a pool at least as large as the concurrency; the script caps it, since the embedded
// PostgreSQL takes 200 connections), every other option at its default (LISTEN/NOTIFY, a 2 s
// poll when idle; each of the concurrency loops fetches one job per query and completes it
// with another). The task POSTs JSON.stringify of the payload (webhook_post.js) and throws on
// a non-2xx answer, which fails the job. Its log keeps warnings and errors only:
// graphile-worker logs a line per completed job at info, and Bulkhead logs none per delivery.
// It stops on SIGTERM (graphile-worker's own handler: it finishes the jobs in flight, then
// exits).
'use strict';

const { parseArgs } = require('node:util');
const { run, makeWorkerUtils, Logger } = require('graphile-worker');
const { makePoster } = require('./webhook_post');
const args = require('./args');

const TASK = 'deliver';
const ENQUEUE_BATCH = 1000;

const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error' || level === 'warning') console.error(`graphile-worker ${level}: ${message}`);
});

async function enqueue({ database, jobs, payload }) {
  JSON.parse(payload); // a bad payload fails here, not as a database error
  const utils = await makeWorkerUtils({ connectionString: database, logger: quietLogger });
  try {
    await utils.migrate();
    await utils.withPgClient(async (client) => {
      for (let done = 0; done < jobs; done += ENQUEUE_BATCH) {
        const n = Math.min(ENQUEUE_BATCH, jobs - done);
        await client.query(
          `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
             SELECT ROW($1::text, $2::json, NULL::text, NULL::timestamptz, 1::smallint,
                        NULL::text, NULL::smallint, NULL::text[])::graphile_worker.job_spec
             FROM generate_series(1, $3::int)))`,
          [TASK, payload, n],
        );
      }
    });
  } finally {
    await utils.release();
  }
}

async function work({ database, concurrency, pool, url }) {
  const post = makePoster({ url, concurrency });
  const runner = await run({
    connectionString: database,
    concurrency,
    maxPoolSize: pool,
    logger: quietLogger,
    taskList: {
      [TASK]: async (payload, helpers) => {
        await post(JSON.stringify(payload), helpers.job.id);
      },
    },
  });
  await runner.promise;
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
      url: { type: 'string' },
    },
  });
  const need = (name) => args.need(values, name);
  const { positive } = args;
  switch (positionals[0]) {
    case 'enqueue':
      return enqueue({ database: need('database'), jobs: positive('jobs', need('jobs')), payload: need('payload') });
    case 'work':
      return work({
        database: need('database'),
        concurrency: positive('concurrency', need('concurrency')),
        pool: positive('pool', need('pool')),
        url: need('url'),
      });
    default:
      throw new Error('usage: graphile_worker.js enqueue|work --database URL … (see the header)');
  }
}

main().catch((err) => {
  console.error(`graphile_worker.js: ${err.stack || err}`);
  process.exit(1);
});
