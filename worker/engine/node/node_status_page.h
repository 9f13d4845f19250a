// NodeStatusPage: a node's /metrics, /healthz and /readyz (status_server.h) — the runners' gauges
// set at each scrape, and the reasons the node is not ready.
//
// Threads: the StatusServer's thread runs the scrape and readiness callbacks; they read the
// parts under `mu_` and only while serving. The main thread calls StopServing() at the first
// stop signal, before any part goes away: from then on /readyz says the node is draining and a
// scrape serves the families without touching the parts. Constructed after the parts and
// destroyed before them (Node::Run), so the server's thread never outlives what it reads.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "lease.h"
#include "metrics.h"
#include "node_parts.h"
#include "status_server.h"

namespace bulkhead {

class NodeStatusPage {
 public:
  // Starts serving on options.metrics_listen; a port that cannot be bound is logged
  // (metrics_listen_failed) and the node runs on without it.
  NodeStatusPage(const Config& config, Metrics& metrics, NodeParts& parts, const Lease& lease);

  // Not ready any more, and the parts are no longer read. Idempotent.
  void StopServing();

  // Whether the server listens; the address it listens on when it does.
  bool ok() const { return server_.ok(); }

 private:
  std::string Scrape();
  std::vector<std::string> NotReadyBecause();

  const Config& config_;
  Metrics& metrics_;
  NodeParts& parts_;
  const Lease& lease_;
  std::vector<const Metrics::Tier*> tier_metrics_;  // one per config_.tiers, in order
  std::mutex mu_;
  bool serving_ = true;  // guarded by mu_
  // Last: its thread, which calls back into the members above, stops first.
  StatusServer server_;
};

}  // namespace bulkhead
