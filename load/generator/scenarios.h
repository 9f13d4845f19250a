// The smaller scenarios of issue 6, beside dead_channel (dead_channel.h). Each runs against a
// running node and mock on the calling thread (plus threads of its own), writes
// <results_dir>/<UTC date>-<scenario>.json and an .html page of its tables beside it, prints
// the tables, and returns 0 when every delivery arrived exactly once, else 1. Knobs: knobs.h.
//
//   throughput     `jobs` deliveries over `channels` paused channels are enqueued (inserted
//                  parked), then the channels are resumed at once; the node's parked
//                  reconciler returns the backlog within 5 s, and the drain is timed from the
//                  provider's first arrival to its last: deliveries/s, with the node's CPU
//                  and memory over the drain. The rate is bounded by the tier's `workers`
//                  (LOAD_TIERS_DIR to try others): this measures the stack as configured.
//   latency        one delivery every 1/rate s, each in its own transaction; pick-up latency
//                  is COMMIT returning in the application → the request at the provider.
//   webhook_burst  a burst on one busy channel, created by `concurrency` connections, drained
//                  while `tenants` other tenants send: the burst's drain time and rate (bounded
//                  by the per-node channel cap, issue 5) and the other tenants' latency.
//   hostile        dead_channel's healthy tenant alone, then beside six misbehaving tenants
//                  at once (500s, 5 s answers, refused connections, 429 with Retry-After, a
//                  1 MiB body, a dripping body), each with a backlog: passes when the healthy
//                  p95 holds dead_channel's gate, every healthy message arrived exactly once
//                  and every misbehaving tenant's job is still in the table.
#pragma once

#include "dead_channel.h"
#include "knobs.h"

namespace bulkhead::load {

int RunThroughput(const ScenarioContext& context, const ThroughputKnobs& knobs);
int RunLatency(const ScenarioContext& context, const LatencyKnobs& knobs);
int RunWebhookBurst(const ScenarioContext& context, const BurstKnobs& knobs);
int RunHostile(const ScenarioContext& context, const HostileKnobs& knobs);

}  // namespace bulkhead::load
