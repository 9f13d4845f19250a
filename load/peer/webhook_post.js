// webhook_post.js — one webhook delivery as the peers of load/peer_bench.sh make it.
//
//   const { makePoster } = require('./webhook_post');
//   const post = makePoster({ url: 'http://127.0.0.1:8090/hook/graphile', concurrency: 32 });
//   await post('{"type": "invoice.paid"}', jobId);   // resolves with the status, or throws
//
// One HTTP/1.1 POST of a JSON body with Node's built-in `http` module, over one keep-alive
// `http.Agent` per process whose maxSockets and maxFreeSockets are the worker's concurrency, so
// every job in flight has a connection and none is closed between jobs (the default
// maxFreeSockets, 256, would close connections at concurrency 400). The job's id goes in a
// `webhook-id` header, as Bulkhead sends its own, so the mock counts distinct deliveries and
// repeats for every system alike. A non-2xx answer, a connection error or no answer within
// timeoutMs (10 s: the shipped tier's request_timeout_ms) rejects, which fails the job.
// Bulkhead also signs every request (Standard Webhooks HMAC); the peers do not.
//
// Only loopback targets are accepted: the benchmark sends traffic to this machine only.
'use strict';

const http = require('node:http');

function makePoster({ url, concurrency, timeoutMs = 10000 }) {
  const target = new URL(url);
  if (target.protocol !== 'http:') throw new Error(`webhook_post: ${url}: only http:// is used here`);
  if (!/^127\.\d+\.\d+\.\d+$/.test(target.hostname) && target.hostname !== 'localhost') {
    throw new Error(`webhook_post: ${url}: not a loopback address; the benchmark stays on this machine`);
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const path = target.pathname + target.search;

  return function post(body, webhookId) {
    return new Promise((resolve, reject) => {
      const request = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path,
          timeout: timeoutMs,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'webhook-id': String(webhookId),
          },
        },
        (response) => {
          response.resume(); // read the body to its end so the connection can be reused
          response.on('error', reject);
          response.on('end', () => {
            const status = response.statusCode;
            if (status >= 200 && status < 300) resolve(status);
            else reject(new Error(`HTTP ${status} from ${url}`));
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      request.on('error', reject);
      request.end(body);
    });
  };
}

module.exports = { makePoster };
