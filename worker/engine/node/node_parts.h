// NodeParts: the parts of a running node, wired together — the completion writer, the breaker
// keeper, the leader's maintenance, a queue runner (with its own claim connection) per served
// tier, the HttpSender they share, the wake-up listener and the lease keeper. With a
// `database_pool`, the claim, result, breaker and lease connections go through it.
//
// Constructing it starts every part's thread; Node::Run constructs it after StartNode succeeded
// and before the status server, so that the status server, declared after, goes first.
// Member order is destruction order reversed, and it matters: the sender goes before the
// runners, so none of its callbacks outlives them, and the keeper and the writer outlive the
// runners that feed them. StopNode (node_stop.h) takes the parts down in the order a clean
// stop needs; the destructor only finishes what it left.
//
// Owned by the main thread: only it constructs, stops and destroys the parts. The status
// server's thread reads them through NodeStatusPage, under its lock, while serving.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "breaker_keeper.h"
#include "claim_store.h"
#include "completion_writer.h"
#include "config.h"
#include "http_sender.h"
#include "lease.h"
#include "lease_keeper.h"
#include "maintenance.h"
#include "metrics.h"
#include "queue_runner.h"
#include "runner_store.h"
#include "store_connection.h"
#include "wakeup_listener.h"

namespace bulkhead {

// Where a node's connections go. `session`: the database, for the work that needs a session of
// its own (the LISTEN, the leader's lock). `pool`: a pooler in transaction mode for the claim,
// result, breaker and lease connections (pooled_connection.h); empty: they use `session` too.
struct NodeDatabases {
  std::string session;
  std::string pool;

  // The claim, result, breaker and lease connections' string and how they reach the server.
  const std::string& traffic() const { return pool.empty() ? session : pool; }
  Pooling traffic_pooling() const {
    return pool.empty() ? Pooling::kSession : Pooling::kTransaction;
  }
};

struct NodeParts {
  // `record` is null with recording off; `metrics` is the node's all the same (it serves the
  // families and the TLS gauge). `lease` must outlive the parts.
  NodeParts(const Config& config, const NodeDatabases& databases, Metrics& metrics, Metrics* record,
            Lease& lease);

  // The deliveries the runners hold, sent or waiting for their request.
  size_t in_flight() const;

  CompletionWriter writer;
  BreakerKeeper keeper;
  Maintenance maintenance;
  // Each runner's own connection, used only by its thread: declared first, so it outlives it.
  std::map<std::string, std::unique_ptr<StoreRunnerStore>> runner_stores;
  std::map<std::string, std::unique_ptr<QueueRunner>> runners;
  std::unique_ptr<HttpSender> sender;
  std::unique_ptr<WakeupListener> listener;
  std::unique_ptr<LeaseKeeper> lease_keeper;
};

}  // namespace bulkhead
