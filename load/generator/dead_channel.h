// The dead_channel scenario (docs/load.md, after the seed study): does one tenant's dead
// endpoint degrade another tenant's deliveries?
//
// Two tenants on a running node: `healthy` (one channel to the mock's /hook/healthy, on the
// default tier) and `dead` (one channel to /hook/hang-dead, which never answers, on
// knobs.dead_tier). Two phases back to back on the same stack:
//   baseline  the healthy tenant's conversations alone;
//   dead      the same traffic while `backlog` deliveries to the dead channel are created by
//             `backlog_concurrency` connections, starting with the phase.
// Each phase waits for its healthy messages to arrive (up to knobs.drain_timeout_s after its
// last send). Every 250 ms a sampler reads the dead channel's breaker and job counts, the
// healthy channel's waiting jobs, and once a second the mock's in-flight counts: that is the
// timeline, and the moments the breaker opened and the whole backlog was parked.
//
// The gate (the seed's): healthy p95 in the dead phase ≤ max(baseline p95 × 1.2, baseline p95
// + 50 ms); every healthy message of both phases delivered exactly once; the breaker opened.
//
// Writes <results_dir>/<UTC date>-dead_channel-<shared|separate>[-N].json and an .html report
// beside it, prints the tables, and returns 0 when the gate passed, 1 when not. Leaves the
// tenants in the database but cancels the dead channel's remaining backlog, so that the next
// scenario on the same stack starts without it. Runs on the calling thread (plus its own).
#pragma once

#include <string>

#include "knobs.h"
#include "node_fleet.h"

namespace bulkhead::load {

struct ScenarioContext {
  std::string database;     // libpq connection string
  std::string mock_url;     // "http://127.0.0.1:PORT", the running bulkhead-mock
  std::string results_dir;  // where the JSON and HTML go
  std::string node;         // the node's name, to wait for and check its tiers; may be empty
  std::string commit;       // recorded in the results when not empty
  FleetOptions fleet;       // how to start more nodes (crash, pg_restart, fleet)
  std::string pg_restart;   // a shell command that restarts the database (pg_restart)
  // The replicated cluster's control (failover): a shell command with "{}" where the action
  // goes (load/replicated_postgres.sh's kill-primary, promote, rewind, …).
  std::string pg_control;
};

// Throws std::runtime_error when the stack is not usable (no node, no mock, a failed enqueue).
int RunDeadChannel(const ScenarioContext& context, const DeadChannelKnobs& knobs);

}  // namespace bulkhead::load
