// Phase statistics: what the provider saw of one phase's messages, from the application's
// record of what it sent and the mock provider's record of what arrived. Pure; any thread.
//
// A message is matched by its webhook-id (the job id). Its latency is the first arrival's
// receive time minus the send time stamped in its payload (send → provider, as in the seed);
// later arrivals of the same id are duplicates. A message that never arrived is lost.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app_sender.h"
#include "mock_client.h"

namespace bulkhead::load {

struct PhaseStats {
  int sent = 0;
  int delivered = 0;   // distinct messages that arrived
  int duplicates = 0;  // arrivals beyond the first of a message
  int lost = 0;
  int bad_signatures = 0;  // arrivals whose signature the mock found missing or invalid
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  // The latency split at the COMMIT: the application's own INSERT (send → commit), and the
  // node's pick-up and send with the receiver's reading of it (commit → provider). Not gated;
  // they say which side a slow p95 is on.
  double enqueue_p95_ms = 0, pickup_p95_ms = 0, pickup_p99_ms = 0;
  double deliveries_per_s = 0;  // delivered / (last first arrival − phase start)
  // Every delivered message: seconds after the phase start it was sent, and its latency.
  std::vector<std::pair<double, double>> points;

  nlohmann::json ToJson() const;  // the fields docs/load.md lists (points left out)
};

// `arrivals` maps a webhook-id to its arrivals, in order.
PhaseStats Summarize(const std::vector<SentMessage>& sent,
                     const std::map<std::string, std::vector<const MockRecord*>>& arrivals,
                     int64_t phase_start_us);

// The nearest-rank percentile (0 < p ≤ 1) of sorted values; 0 for none.
double Percentile(const std::vector<double>& sorted, double p);

}  // namespace bulkhead::load
