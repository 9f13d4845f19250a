// mock_client.js — the two control calls load/peer_bench.sh makes to bulkhead-mock.
//
//   node load/peer/mock_client.js http://127.0.0.1:PORT reset
//       POST /_mock/reset: forget every record and counter
//   node load/peer/mock_client.js http://127.0.0.1:PORT route /hook/NAME
//       GET /_mock/stats, and print one line for that route:
//       "REQUESTS ANSWERED_2XX DISTINCT_WEBHOOK_IDS DUPLICATES" (zeros if it saw none)
//
// Node's `http` module only, so the script needs neither curl nor jq. Loopback only.
'use strict';

const http = require('node:http');

function call(base, method, path) {
  const url = new URL(path, base);
  if (!/^127\.\d+\.\d+\.\d+$/.test(url.hostname)) throw new Error(`${base}: not a loopback address`);
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, timeout: 10000 }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { body += chunk; });
      response.on('end', () => {
        if (response.statusCode === 200) resolve(body);
        else reject(new Error(`${method} ${url}: HTTP ${response.statusCode}: ${body.trim()}`));
      });
    });
    request.on('timeout', () => request.destroy(new Error(`${method} ${url}: no answer within 10 s`)));
    request.on('error', reject);
    request.end();
  });
}

async function main() {
  const [base, command, route] = process.argv.slice(2);
  if (command === 'reset' && base) {
    await call(base, 'POST', '/_mock/reset');
  } else if (command === 'route' && base && route) {
    const stats = JSON.parse(await call(base, 'GET', '/_mock/stats'));
    const r = stats.routes[route] || { requests: 0, unique_ids: 0, duplicates: 0, answers: {} };
    const ok = Object.entries(r.answers)
      .filter(([status]) => /^2\d\d$/.test(status))
      .reduce((sum, [, n]) => sum + n, 0);
    console.log(`${r.requests} ${ok} ${r.unique_ids} ${r.duplicates}`);
  } else {
    throw new Error('usage: mock_client.js BASE_URL reset | route /hook/NAME');
  }
}

main().catch((err) => {
  console.error(`mock_client.js: ${err.message}`);
  process.exit(1);
});
