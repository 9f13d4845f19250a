// The operator console in a real browser (docs/console.md). run.sh starts the database and the
// console and passes, in the environment:
//   CONSOLE_URL, CONSOLE_ADMIN_TOKEN, CONSOLE_VIEWER_TOKEN
//   BREAKER_CHANNEL  a channel with an open breaker and DISCARDED_COUNT discarded deliveries
//   PAUSE_CHANNEL    a running channel with available deliveries
//   VIEWER_CHANNEL   a channel with discarded deliveries, for the viewer's look
//   GONE_CHANNEL     a channel disabled (and paused) after a 410
//   SCREENSHOT_DIR   where one screenshot of each page goes
//   CHROMIUM         the browser
// Every wait has a timeout, and the whole test gives up after 120 s.
import puppeteer from 'puppeteer-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const env = (name) => {
  const v = process.env[name];
  if (!v) fail(`the environment variable ${name} is not set (run the test through run.sh)`);
  return v;
};
function fail(message) {
  console.error(`console_browser_test: FAIL: ${message}`);
  process.exit(1);
}

const base = env('CONSOLE_URL');
const adminToken = env('CONSOLE_ADMIN_TOKEN');
const viewerToken = env('CONSOLE_VIEWER_TOKEN');
const breakerChannel = env('BREAKER_CHANNEL');
const pauseChannel = env('PAUSE_CHANNEL');
const viewerChannel = env('VIEWER_CHANNEL');
const goneChannel = env('GONE_CHANNEL');
const discardedCount = Number(env('DISCARDED_COUNT'));
const shots = env('SCREENSHOT_DIR');
mkdirSync(shots, { recursive: true });

const WAIT = 10_000;
const deadline = setTimeout(() => fail('the test took over 120 s'), 120_000);

let step = 'start';
const log = (s) => {
  step = s;
  console.log(`console_browser_test: ${s}`);
};
function check(ok, message) {
  if (!ok) throw new Error(message);
}

// Every console error and page error fails the test, but for the browser's own favicon request
// and the 401s the test asks for (a refused login, the session after logging out). Chrome reports
// those asynchronously, so they are allowed by URL rather than by the step.
const problems = [];
const expectedConsoleError = /\b401\b.*\/\/[^/]+\/(login|api\/session)?$/;
// Dialogs (confirm) are expected one at a time: expectDialog(/text/) before the click.
let dialogWanted = null;

function watch(page, who) {
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const where = msg.location()?.url || '';
    if (where.endsWith('/favicon.ico')) return;
    if (expectedConsoleError.test(msg.text() + ' ' + where)) return;
    problems.push(`${who}: console error during "${step}": ${msg.text()} (${where})`);
  });
  page.on('pageerror', (err) => problems.push(`${who}: page error during "${step}": ${err.message}`));
  page.on('requestfailed', (req) => {
    if (!req.url().endsWith('/favicon.ico') && req.failure()?.errorText !== 'net::ERR_ABORTED') {
      problems.push(`${who}: request failed during "${step}": ${req.url()} ${req.failure()?.errorText}`);
    }
  });
  page.on('dialog', async (dialog) => {
    const wanted = dialogWanted;
    dialogWanted = null;
    if (!wanted) {
      problems.push(`${who}: an unexpected dialog during "${step}": ${dialog.message()}`);
      await dialog.dismiss();
      return;
    }
    wanted.seen = dialog.message();
    if (!wanted.re.test(dialog.message())) {
      problems.push(`${who}: the dialog during "${step}" says "${dialog.message()}", not ${wanted.re}`);
      await dialog.dismiss();
    } else {
      await dialog.accept();
    }
  });
  page.setDefaultTimeout(WAIT);
  page.setDefaultNavigationTimeout(WAIT);
}
function expectDialog(re) {
  dialogWanted = { re, seen: null };
  return dialogWanted;
}
function noProblems() {
  if (problems.length) throw new Error(problems.join('\n'));
}

async function shot(page, name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

// The page named `name` finished rendering (app.js sets body[data-page] once its data is in),
// with no error shown in the banner.
async function pageReady(page, name) {
  await page.waitForSelector(`body[data-page="${name}"]`);
  const error = await page.$eval('#error', (e) => (e.classList.contains('hidden') ? '' : e.textContent));
  check(!error, `the ${name} page shows an error: ${error}`);
}

async function count(page, selector) {
  return (await page.$$(selector)).length;
}
const text = (page, selector) => page.$eval(selector, (e) => e.textContent.trim());

// SPA navigation: click a link inside the console and wait for the page it leads to.
async function go(page, selector, name) {
  await page.click(selector);
  await pageReady(page, name);
}

async function login(page, token) {
  await page.goto(`${base}/login`);
  await page.type('input[name="token"]', token);
  await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
}

// GET a JSON API path with the page's session cookie.
function apiGet(page, path) {
  return page.evaluate(async (p) => {
    const r = await fetch(p, { credentials: 'same-origin' });
    return { status: r.status, body: await r.json() };
  }, path);
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  defaultViewport: { width: 1280, height: 860 },
  protocolTimeout: 30_000,
});

try {
  const page = await browser.newPage();
  watch(page, 'admin');

  log('a page without a session goes to /login');
  // docs/console.md says a redirect to /login; the server answers 401 with the login form in
  // place. Either way the form must be there, and it posts to /login.
  await page.goto(`${base}/`);
  const unauthPath = new URL(page.url()).pathname;
  check(unauthPath === '/login' || unauthPath === '/', `GET / without a session ended at ${page.url()}`);
  await page.waitForSelector('form[action="/login"] input[type="password"][name="token"]');
  await shot(page, 'login');

  log('a wrong token is refused on the login form');
  await login(page, 'not-the-token-at-all-0000');
  check(new URL(page.url()).pathname === '/login', `a wrong token ended at ${page.url()}`);
  check(await count(page, 'input[name="token"]') === 1, 'no login form after a wrong token');

  log('log in as admin');
  await login(page, adminToken);
  check(new URL(page.url()).pathname === '/', `the admin login ended at ${page.url()}, not /`);
  await pageReady(page, 'overview');
  check(await text(page, '#role') === 'admin', 'the header does not say admin');

  log('overview: tiers, nodes and the open breaker');
  await page.waitForSelector('[data-test="tier-row"][data-queue="default"]');
  check(await count(page, '[data-test="tier-row"]') >= 1, 'no tier rows');
  await page.waitForSelector('[data-test="node-row"][data-node="node-a"]');
  const breakerRow = `[data-test="breaker-row"][data-channel="${breakerChannel}"]`;
  await page.waitForSelector(breakerRow);
  check((await text(page, `${breakerRow} .badge`)) === 'open', 'the breaker row does not say open');

  log('overview refreshes in place every 2 s');
  let overviewFetches = 0;
  const countFetch = (req) => { if (req.url().endsWith('/api/overview')) overviewFetches++; };
  page.on('request', countFetch);
  await page.evaluate(() => { window.__sameDocument = true; });
  const started = Date.now();
  while (overviewFetches < 2 && Date.now() - started < 7000) await new Promise((r) => setTimeout(r, 200));
  page.off('request', countFetch);
  check(overviewFetches >= 2, `the overview fetched /api/overview ${overviewFetches} times in 7 s`);
  check(await page.evaluate(() => window.__sameDocument === true), 'the overview reloaded the page');
  await page.waitForSelector(breakerRow);
  await shot(page, 'overview');
  noProblems();

  log('the channels list and its search');
  await go(page, 'nav a[data-nav="channels"]', 'channels');
  check(await count(page, '[data-test="channel-row"]') >= 4, 'the channels list has under 4 rows');
  await shot(page, 'channels');
  await page.type('#channel-search', 'BILLING');
  await page.click('#channel-filter button[type="submit"]');
  await page.waitForFunction(() => location.search.includes('q=BILLING'));
  await pageReady(page, 'channels');
  const found = await page.$$eval('[data-test="channel-row"]', (rows) => rows.map((r) => r.dataset.channel));
  check(found.length === 1 && found[0] === pauseChannel, `searching BILLING found channels ${found}`);

  await go(page, 'nav a[data-nav="overview"]', 'overview');
  await page.waitForSelector(breakerRow);

  log('the open breaker links to its channel');
  // Clicked inside the page, in one turn: a real click could fall between two refreshes.
  await page.$eval(`${breakerRow} a`, (a) => a.click());
  await pageReady(page, 'channel');
  check(new URL(page.url()).pathname === `/channels/${breakerChannel}`, `the link led to ${page.url()}`);
  check((await text(page, '[data-test="breaker-state"]')) === 'open', 'the channel page does not say open');
  check(await count(page, '[data-test="history-row"]') >= 3, 'the breaker history has under 3 rows');
  check(await count(page, '#action-pause') === 1 && await count(page, '#action-reset') === 1,
    'the admin sees no pause or reset button');
  await shot(page, 'channel');

  log('reset the breaker (its replayed deliveries then go to available, not parked)');
  const reset = expectDialog(/Close the breaker of channel/);
  await page.click('#action-reset');
  await page.waitForFunction(() => document.querySelector('[data-test="breaker-state"]')?.textContent === 'closed');
  check(reset.seen, 'no confirm dialog before the reset');
  await pageReady(page, 'channel');
  noProblems();

  log('deliveries: filter the discarded ones of the breaker channel');
  await go(page, 'nav a[data-nav="deliveries"]', 'deliveries');
  await page.select('#filter-state', 'discarded');
  await page.type('#filter-channel', breakerChannel);
  await page.click('#filter-apply');
  await page.waitForFunction(() => location.search.includes('state=discarded'));
  await pageReady(page, 'deliveries');
  const discarded = await page.$$eval('[data-test="delivery-row"]', (rows) =>
    rows.map((r) => ({ id: r.dataset.delivery, state: r.dataset.state })));
  check(discarded.length === discardedCount && discarded.every((d) => d.state === 'discarded'),
    `the filter shows ${JSON.stringify(discarded)}, not ${discardedCount} discarded deliveries`);
  check(await count(page, '#replay-matching') === 1, 'no "Replay matching" button');
  await shot(page, 'deliveries');

  log('a delivery: attempt log and payload');
  await go(page, `[data-test="delivery-row"][data-delivery="${discarded[0].id}"] a`, 'delivery');
  check(await count(page, '[data-test="attempt-row"]') === 8, 'the attempt log does not have 8 rows');
  await page.click('#show-payload');
  await page.waitForSelector('#payload:not(.hidden)');
  const payload = await text(page, '#payload');
  check(payload.includes('<b>not html</b>'), `the payload shows ${payload}`);
  check(await count(page, '#payload b') === 0, 'the payload was rendered as HTML');
  await shot(page, 'delivery');

  log('replay everything the filter matches, after the count is confirmed');
  await page.goBack();
  await pageReady(page, 'deliveries');
  const replay = expectDialog(new RegExp(`Replay ${discardedCount} deliveries\\?`));
  await page.click('#replay-matching');
  await page.waitForFunction(() => /Replayed/.test(document.getElementById('notice').textContent));
  check(replay.seen, 'no confirm dialog before the replay');
  noProblems();
  const available = await apiGet(page, `/api/deliveries?state=available&channel=${breakerChannel}&limit=500`);
  check(available.status === 200, `GET /api/deliveries answered ${available.status}`);
  const nowAvailable = new Set(available.body.deliveries.map((d) => String(d.id)));
  const missing = discarded.filter((d) => !nowAvailable.has(d.id)).map((d) => d.id);
  check(missing.length === 0, `replayed deliveries not available: ${missing.join(', ')}`);

  log('pause another channel from its page');
  await page.goto(`${base}/channels/${pauseChannel}`);
  await pageReady(page, 'channel');
  const pause = expectDialog(/Pause channel/);
  await page.click('#action-pause');
  await page.waitForFunction(() => document.querySelector('[data-test="paused"]')?.textContent === 'paused');
  check(pause.seen, 'no confirm dialog before the pause');
  await page.waitForSelector('#action-resume');
  check((await text(page, '[data-test="count-parked"] .value')) === '6', 'the paused channel has not 6 parked');
  noProblems();

  log('a channel disabled after a 410 says gone and offers enable and resume');
  await page.goto(`${base}/channels/${goneChannel}`);
  await pageReady(page, 'channel');
  check((await text(page, '[data-test="gone"]')).startsWith('yes'), 'the 410 channel is not shown gone');
  check(await count(page, '#action-enable') === 1 && await count(page, '#action-resume') === 1,
    'the 410 channel offers no enable or resume button');

  log('the audit log');
  await go(page, 'nav a[data-nav="actions"]', 'actions');
  const done = await page.$$eval('[data-test="action-row"]', (rows) => rows.map((r) => r.dataset.actionName));
  for (const a of ['reset', 'replay', 'pause']) check(done.includes(a), `the audit log lacks ${a}: ${done}`);
  await shot(page, 'actions');

  log('log out');
  await Promise.all([page.waitForNavigation(), page.click('#logout')]);
  check(new URL(page.url()).pathname === '/login', `logging out ended at ${page.url()}`);
  const after = await page.evaluate(async () => (await fetch('/api/session')).status).catch(() => 0);
  check(after === 401, `GET /api/session after logging out answered ${after}`);
  noProblems();

  log('a viewer sees no action buttons');
  const viewerContext = await browser.createBrowserContext();
  const viewer = await viewerContext.newPage();
  watch(viewer, 'viewer');
  await login(viewer, viewerToken);
  await pageReady(viewer, 'overview');
  check(await text(viewer, '#role') === 'viewer', 'the header does not say viewer');
  for (const id of [pauseChannel, breakerChannel]) {
    await viewer.goto(`${base}/channels/${id}`);
    await pageReady(viewer, 'channel');
    check(await count(viewer, '[data-action]') === 0, `the viewer sees action buttons on channel ${id}`);
  }
  await viewer.goto(`${base}/deliveries?state=discarded&channel=${viewerChannel}`);
  await pageReady(viewer, 'deliveries');
  check(await count(viewer, '[data-test="delivery-row"]') >= 1, 'the viewer sees no discarded delivery');
  check(await count(viewer, '#replay-matching, #cancel-matching') === 0, 'the viewer sees bulk buttons');
  await go(viewer, '[data-test="delivery-row"] a', 'delivery');
  check(await count(viewer, '#show-payload, #replay-one, #cancel-one') === 0,
    'the viewer sees delivery buttons');
  await viewer.goto(`${base}/deliveries?state=parked&channel=${pauseChannel}`);
  await pageReady(viewer, 'deliveries');
  check(await count(viewer, '#cancel-matching') === 0, 'the viewer sees "Cancel matching"');
  noProblems();

  // Any role may end its own session (POST /logout, with the CSRF token like every POST).
  await Promise.all([viewer.waitForNavigation(), viewer.click('#logout')]);
  check(viewer.url().endsWith('/login'), 'the viewer is back at the login page after logging out');
  await viewerContext.close();

  console.log(`console_browser_test: PASS (screenshots in ${shots})`);
} catch (err) {
  await browser.close().catch(() => {});
  fail(`${step}: ${err.message}${problems.length ? '\n' + problems.join('\n') : ''}`);
}
clearTimeout(deadline);
await browser.close();
