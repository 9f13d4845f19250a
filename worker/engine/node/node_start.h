// StartNode: what a node does on its own connection before any part starts — refuse a database
// whose schema is not this binary's, register the tiers it serves, return the jobs its previous
// life left executing, and register itself with a fresh lease.
//
// Runs on the main thread (Node::Run), before any other thread of the node exists.
#pragma once

#include <string>
#include <vector>

#include "config.h"
#include "fleet_store.h"
#include "lease.h"
#include "metrics.h"
#include "store_connection.h"

namespace bulkhead {

// This machine's host name, as the node registers it.
std::string HostName();

// True when the node may start; false after logging why not (schema_mismatch, start_failed).
// On success `lease` counts as renewed from the moment the registration was sent. `record` may
// be null (recording off).
bool StartNode(StoreConnection<FleetStore>& store, const std::string& database,
               const NodeOptions& options, const std::vector<std::string>& tier_names, Lease& lease,
               Metrics* record);

}  // namespace bulkhead
