// args.js: the argument checks the two peer scripts (graphile_worker.js, pg_boss.js) share.
// Each throws an Error whose message names the flag, which the scripts print before exiting 2.
'use strict';

// The value of --name from node:util's parseArgs `values`; throws when it was not given.
function need(values, name) {
  if (values[name] === undefined) throw new Error(`--${name} is required`);
  return values[name];
}

// `text` as a whole number of at least 1; throws naming --name otherwise.
function positive(name, text) {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, not '${text}'`);
  return n;
}

module.exports = { need, positive };
