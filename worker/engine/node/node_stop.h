// StopNode: a node's clean stop after the first SIGTERM or SIGINT — not ready any more, stop
// claiming, let in-flight requests finish for up to shutdown_grace_ms, hand the rest back as
// available without spending their attempt, write every result, remove the node's row.
//
// A second SIGTERM or SIGINT meanwhile exits the process at once with 1: jobs still executing
// come back through lease rescue. A StopDeadline bounds the whole stop even when the database
// does not answer (stop_deadline.h).
//
// Runs on the main thread (Node::Run), which owns the parts; it takes them down in order and
// leaves `parts` with no runner and no sender.
#pragma once

#include "config.h"
#include "fleet_store.h"
#include "lease.h"
#include "node_parts.h"
#include "node_status_page.h"
#include "store_connection.h"

namespace bulkhead {

// `sig` is the signal that started the stop. Returns the process's exit code (exit_codes.h).
int StopNode(int sig, const NodeOptions& options, NodeParts& parts, NodeStatusPage& status,
             StoreConnection<FleetStore>& store, const Lease& lease);

}  // namespace bulkhead
