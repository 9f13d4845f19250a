// What the engine and breaker benches set up alike (load/bench/benches.h): tenants and
// channels, a burst through bulkhead.enqueue_many, tier `default` as tiers/default.json ships
// it with the keys a mode varies overridden, a started node, and the server's WAL position and
// postmaster. Functions run on the calling thread with the caller's connection; they throw
// what pqxx throws.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "cap_ledger.h"
#include "node_process.h"

namespace bulkhead::bench {

// `n` channels to `url`; channel i belongs to tenant i mod `tenants` (0: a tenant each), the
// tenants named `prefix` + their number.
std::vector<int64_t> MakeChannels(pqxx::connection& conn, int n, const std::string& url,
                                  int tenants = 0, const std::string& prefix = "bench-");

// Enqueues `jobs` deliveries with enqueue_many, 1,000 per call and transaction; item i goes to
// channels[i mod N], so every channel gets an equal share.
void EnqueueBurst(pqxx::connection& conn, const std::vector<int64_t>& channels, int jobs);

// tiers/default.json as shipped, with the keys the engine bench varies overridden: `workers`
// (0 keeps the shipped value) and both shares, `channel_share` and `tenant_share` (1: no caps).
// Every other key is the shipped file's.
nlohmann::json Tier(int workers, double share = 0.5);

// The caps a tier of `workers` slots gets at `share`, by the node's own rule.
CapLedger::Caps CapsAt(int workers, double share);

// Starts the node and waits for its node_started line, then a second more for its LISTEN
// connection, so that the first enqueue wakes it rather than the poll. False (its log printed
// to stderr) if it failed.
bool StartNode(testing::NodeProcess& node, const std::string& database);

// The server's WAL insert position, in bytes.
int64_t WalPosition(pqxx::connection& conn);

// The server's postmaster, from the first line of its postmaster.pid (the bench runs on the
// same machine as the embedded PostgreSQL).
pid_t Postmaster(pqxx::connection& conn);

}  // namespace bulkhead::bench
