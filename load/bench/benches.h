// The benches of single parts: modes of bulkhead-load beside its scenarios, each measuring one
// part of Bulkhead on this machine with the real `bulkhead run` binary (build/bin/bulkhead, beside
// bulkhead-load), a real PostgreSQL and a loopback HTTP receiver (tests/harness/). Run them
// through load/engine_bench.sh and load/breaker_bench.sh, which start an embedded PostgreSQL
// (load/lib.sh) and build; docs/benchmarks.md gives the figures and the commands.
//
//   bulkhead-load engine MODE --database URL [options]    the delivery engine
//   bulkhead-load breaker MODE --database URL [options]   the circuit breaker and the claim
//
// Each entry point takes the words after `engine` or `breaker`, runs on the calling thread (plus
// threads of its own), and returns 0 when the mode's deliveries all arrived (its check passed),
// 1 when not or on an error (printed), 2 on a usage error. curl_global_init must have run.
//
// ---- engine ---------------------------------------------------------------------------------
//
//   throughput  enqueue a burst (--jobs, default 100000) over --channels (20) channels, each
//               of its own tenant unless --tenants T puts channel i on tenant i mod T, then
//               start one node with --workers (200) slots and time the drain to `completed`
//               against a receiver that answers 200 at once. --share S (0.5, the shipped
//               default) sets both channel_share and tenant_share in the tier file; 1 means no
//               caps. Prints deliveries/s, the node's CPU seconds and peak resident memory, the
//               most rows `executing` in one 100 ms sample (in flight, plus delivered ones
//               whose result the node has not written yet), and the node's claim count.
//               --old-secrets N (0) gives every channel N old secrets in their rotation window
//               (migration 0004), so that every claimed row signs with N + 1 secrets.
//               --nodes N (1) starts N nodes of workers / N each. Also prints WAL bytes per
//               delivery (enqueue, and claim + result), PostgreSQL's CPU per delivery while
//               draining, and how often sessions waited for a heavyweight lock.
//   latency     start a node (the shipped tier's workers unless --workers), then enqueue
//               --rate (50) deliveries a second for --seconds (20), each in its own
//               transaction; the latency of one delivery is the time from its COMMIT returning
//               to the receiver reading the request. Prints p50/p95/p99/max, the rows
//               executing (250 ms samples) and the node's peak memory. --background N first
//               enqueues a burst of N deliveries over --background-channels (20) channels of
//               --background-tenants (1) other tenants, whose endpoint answers after
//               --background-delay-ms (0): the node is busy with them throughout (it prints
//               how many still waited when the traffic ended), and with a delay, N requests
//               can be held in flight at once (the tier's request_timeout_ms is then raised
//               to the delay + 10 s). --background-tier NAME puts the other tenants on a tier
//               of their own, NAME, with the same settings as `default` (the node runs both,
//               each with its own claim loop, connection and slots), as an operator separates
//               a bulk sender. Slow start
//               lets a channel whose answers are not quick hold only its first window (10):
//               holding N requests open takes N / 10 channels.
//   isolation   the caps alone against two offenders (the breaker kept out of the way:
//               failure_threshold 1000, slow_call_ms 3600000; request_timeout_ms 10000), on
//               tier default with --workers (20) slots. Tenants: `healthy`, one channel whose
//               receiver answers after 25 ms; `dead`, one channel to a path that never
//               answers; `many`, 40 channels to such paths. Phase baseline: healthy alone at
//               --rate (50) a second for --seconds (10), as in latency. Phase broken: a backlog
//               of 1,000 to dead and 25 to each of many's channels (enqueue_many), a wait until
//               the two hold every slot the caps let them (min(workers, dead's cap + many's
//               cap); all of them without caps), then the same healthy traffic. Each phase
//               waits up to 12 s after its last enqueue for stragglers; a delivery not received
//               by then ranks above every received one in the percentiles ("not received").
//               A sampler reads the jobs executing per tenant every 100 ms from the backlog to
//               the end. The broken phase is also shown by the second in which each delivery
//               was committed. Runs once per share in --shares (0.5,1: with the shipped caps,
//               then without), each from an empty schema with a node of its own, and ends with
//               a table of all of them side by side.
//
//   table, shape  the engine's cost against what the table keeps (--finished 10000000 and
//               --parked 1000000 jobs beside the burst, statistics stale and fresh) and how the
//               work is spread (20 tenants, --jobs tenants of one delivery, and a mix), --jobs
//               60000 by default: load/bench/table_bench.h.
//
// Every mode runs tier `default` as tiers/default.json ships it (read from the file), overriding
// only the keys it varies: `workers`, `channel_share` and `tenant_share` (Tier below), and in
// isolation `failure_threshold` and `slow_call_ms`.
// Every run prints the 1-minute load average before and after: the machine is shared.
// Every run starts from an empty bulkhead schema in the given database (it migrates down and
// up), so do not point it at a database you care about.
//
// ---- breaker --------------------------------------------------------------------------------
//
//   dead   one tenant on tier `default`, one channel to a loopback path that accepts requests
//          and never answers. One node runs the tier as tiers/default.json ships it, read
//          from the file with no key overridden (DefaultTier, breaker_dead.cc). Once it has
//          started, 10 connections (--concurrency) each enqueue 1,000 deliveries (--backlog 10000
//          in all) with `SELECT bulkhead.enqueue(…)`, one per transaction, like an application. A
//          sampler on its own connection reads the channel's breaker and its jobs by state
//          every 100 ms. t = 0 is the first enqueue's COMMIT returning. Prints when the
//          breaker opened (sampled, and exactly from breaker_changed_at in SQL), when no job
//          of the channel was available any more, how many stayed available behind the open
//          breaker (enqueues that raced the opening statement), when the whole backlog was
//          parked, the requests that reached the endpoint by t = 12 s (after the first attempts' 10
//          s timeout) and in all, the most deliveries in flight, and the per-second timeline.
//          Watches for --seconds (15) or until the backlog is parked, whichever is later.
//   claim  ClaimStore::Claim("default", 10, …) until --available (5000) jobs of a healthy
//          channel are drained, timing each claim, in three schemas side by side:
//          (a) nothing else in bulkhead.jobs; (b) plus --extra (1000000) `parked` jobs of
//          another channel in the same queue; (c) plus as many `completed` jobs instead.
//          Each case has its own database beside --database (<name>_claim_a, _b, _c, made
//          with the same host, port and user, and dropped at the end), and the three take
//          turns claim by claim, so that the rest of the machine's load weighs on all alike.
//          --drains (5) times: --available fresh jobs in each, VACUUM ANALYZE, drain. Prints
//          p50/p95/p99/mean in µs, the buffers one claim touched (EXPLAIN ANALYZE, rolled
//          back) and the ratios b/a and c/a. The claim index (jobs_claim, WHERE state =
//          'available') is what should keep those ratios near 1. Not load/claim_bench.sh:
//          this times the store's whole claim (BEGIN, the statement, COMMIT, from C++) beside a
//          million rows the claim must not read, at one look-ahead; claim_bench.sh times the
//          statement alone (EXPLAIN ANALYZE in psql) on two fixed queue states, at the long and
//          the short look-ahead in turn, to weigh the look-ahead.
//
// Parking a backlog (OpenBreaker, ResetBreaker) is measured by load/park_bench.sh, not here.
//
// Every mode starts from an empty bulkhead schema in the given database (it migrates down and
// up), so do not point it at a database you care about.
#pragma once

#include <string_view>
#include <vector>

namespace bulkhead::bench {

// `bulkhead-load engine …`: throughput, latency, isolation, churn, table, shape (engine_bench.cc).
int EngineBench(const std::vector<std::string_view>& words);

// `bulkhead-load breaker …`: dead, claim (breaker_bench.cc).
int BreakerBench(const std::vector<std::string_view>& words);

}  // namespace bulkhead::bench
