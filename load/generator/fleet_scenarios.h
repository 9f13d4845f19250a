// The fleet scenarios of issue 8, and issue 17's soak: what a fleet of nodes does when one of
// them dies, when the database restarts, and whether nodes add throughput while caps and
// breakers still hold. Each runs on load/run.sh's stack plus nodes it starts itself (NodeFleet),
// writes <results_dir>/<UTC date>-<scenario>.json and an .html page beside it, prints its tables
// and returns 0 when its gate passed, else 1. Knobs: FleetKnobs and SoakKnobs in knobs.h.
//
//   crash       `nodes` nodes drain a burst to /hook/healthy; one of the scenario's own nodes is
//               killed with SIGKILL once `at` of the burst has arrived. Its executing jobs stay
//               with its lease until the lease runs out and the leader rescues them. Gate: every
//               delivery arrives; duplicates only of jobs the killed node held at the kill
//               (requests in flight, or delivered with the result not yet written). Reports the
//               rescue time: kill → none of its jobs left executing.
//   pg_restart  `nodes` nodes drain a burst to /hook/healthy; the database is restarted with a
//               fast shutdown (context.pg_restart) once `at` of it has arrived. Gate: every
//               delivery arrives, and every node is still the same running process. Reports the
//               outage, the time from the database's return to the next delivery, and the longest
//               gap between deliveries.
//   fleet       the same burst to /hook/fast drained by load/run.sh's node alone and then by
//               `nodes` nodes (deliveries/s of each, side by side); then a channel to
//               /hook/hang-dead with a backlog: no node holds more of it than the tier's channel
//               cap, and once one node opens its breaker no node sends it another request.
//   soak        load/run.sh's node and `nodes` - 1 of its own under a steady `rate` of
//               enqueues (each its own transaction) for `minutes`: `channels` healthy channels
//               to /hook/healthy, one dead (/hook/hang-dead) and one throttled (429 with
//               Retry-After half the time), one share each. Every `period_s` one of its nodes
//               is killed with SIGKILL and started again under the same name, and PostgreSQL is
//               restarted. Gate: every healthy delivery arrives, repeats only of jobs a killed
//               node held, every throttled job delivered or still waiting, the dead channel's
//               breaker opened and no node held more of it than the cap, every kill rescued,
//               every other node still running. Reports latency per period, the jobs table's
//               size and rows at the start and end, bulkhead.nodes, and the nodes' peak RSS.
//   failover    (issue 31) on load/run.sh's replicated pair (load/replicated_postgres.sh), with
//               every node and the sender on its multi-host connection string
//               (target_session_attrs=read-write): `nodes` nodes under a steady `rate` of
//               enqueues over `channels` healthy channels and one failing (500) whose breaker is
//               open. Three events, each judged `settle_s` after the database's return: the
//               primary killed (immediate stop) and the standby promoted, then the old primary
//               rewound (pg_rewind) as the new standby; a switchover back (fast stop, promote,
//               rewind); `read_only_s` of default_transaction_read_only under open connections.
//               Gate per event: every enqueue committed in its window delivered (sync
//               replication; async reports the lost tail instead), repeats only of jobs in
//               flight across it, a delivery of an enqueue committed after the return within
//               `resume_s`, one leader, every node's process and lease, the failing channel's
//               breaker still open with its trips kept, every node ready again; /readyz's
//               reasons and the metrics' database errors and reconnects are reported.
#pragma once

#include "dead_channel.h"
#include "knobs.h"

namespace bulkhead::load {

int RunCrash(const ScenarioContext& context, const FleetKnobs& knobs);
int RunPgRestart(const ScenarioContext& context, const FleetKnobs& knobs);
int RunFleet(const ScenarioContext& context, const FleetKnobs& knobs);
int RunSoak(const ScenarioContext& context, const SoakKnobs& knobs);
int RunFailover(const ScenarioContext& context, const FailoverKnobs& knobs);

}  // namespace bulkhead::load
