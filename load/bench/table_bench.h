// The engine's cost against what the table keeps and how the work is spread (issue 34): the
// `table` and `shape` modes of `bulkhead-load engine` (load/engine_bench.sh table, shape).
//
//   table  one node drains a burst of `jobs` deliveries over 20 channels, a tenant each: beside
//          `finished` finished jobs (spread over the last week, then vacuumed and checkpointed
//          as a week-old table would have been) and `parked` parked ones (1,000 paused
//          channels), three times — with the statistics taken before the burst arrived (stale:
//          autovacuum re-analyzes a big table only after 2 % of it changed), after it (fresh),
//          and before it again (stale, second) — and on an empty table in a database beside it
//          (`<database>_empty`, dropped at the end) before, between and after them. Each
//          history drain is compared with the mean of the empty drains just before and after.
//   shape  the same number of deliveries drained from an empty schema three times: 20 tenants
//          of one channel with jobs / 20 each; `jobs` tenants of one channel with one delivery
//          each; and half the deliveries on 4 busy tenants enqueued first, the other half on
//          jobs / 2 tenants of one delivery each.
//
// Each drain starts a fresh `bulkhead run` node (tier `default` as shipped) after the burst is
// committed, so its generic claim plan is made from the statistics of that moment, and reports
// deliveries a second, the node's CPU, and from pg_stat_statements (reset before each drain)
// what PostgreSQL spent on the claim and on the result write: calls, rows a call, shared
// buffers a row (and how many were read from the kernel), milliseconds a call, and WAL bytes
// and full-page images a row. The load average is printed around every drain.
//
// Runs on the test's main thread only. Every run starts from an empty bulkhead schema in the
// given database (it migrates down and up), so do not point it at a database you care about.
#pragma once

#include <cstdint>
#include <string>

namespace bulkhead::bench {

struct TableArgs {
  std::string database;
  int jobs = 60'000;
  int64_t finished = 10'000'000;
  int64_t parked = 1'000'000;
};

// Mode `table`; returns 0 when every drain delivered every job, else 1.
int TableBench(const TableArgs& args);
// Mode `shape`; returns 0 when every drain delivered every job, else 1.
int ShapeBench(const TableArgs& args);

}  // namespace bulkhead::bench
