// A burst: deliveries enqueued up front behind paused channels and then released at once, so
// that a scenario times the drain alone, not the application's enqueueing. Used by the
// throughput, crash, pg_restart and fleet scenarios. Functions run on the calling thread with
// the caller's connection.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "mock_client.h"

namespace bulkhead::load {

// {1,2,3}: a bigint[] literal for a statement's parameter.
std::string BigintArray(const std::vector<int64_t>& values);

struct Burst {
  std::vector<int64_t> channels;
  std::vector<std::string> secrets;  // one per channel, for the mock's signature checks
  std::set<std::string> ids;         // the webhook-ids the provider should see, once each
  double enqueue_s = 0;              // how long the enqueueing took
  std::string ChannelArray() const { return BigintArray(channels); }
};

// `channels` new tenants on `tier`, one paused channel each to `url`, and `jobs` deliveries
// spread over them round robin through bulkhead.enqueue_many, 1,000 per transaction; they are
// inserted parked (the channels are paused). `run` names the tenants.
Burst EnqueueBurst(pqxx::connection& conn, const std::string& run, const std::string& url,
                   const std::string& tier, int jobs, int channels);

// Resumes the burst's channels in one transaction: the node's parked reconciler returns the
// backlog within 5 s. Returns the Unix µs of the commit.
int64_t ReleaseBurst(pqxx::connection& conn, const Burst& burst);

// Cancels the waiting (available and parked) jobs of `channels`, so that the next scenario on
// the same stack starts without them.
void CancelWaiting(pqxx::connection& conn, const std::vector<int64_t>& channels);

// What the provider saw of a burst's deliveries.
struct Arrivals {
  int delivered = 0;       // distinct ids of the burst that arrived
  int lost = 0;            // ids of the burst that never arrived
  int duplicates = 0;      // requests beyond the first for an id
  int bad_signatures = 0;  // requests whose signature was missing or invalid
  int64_t first_us = 0;    // the first and last receive time (0 when none arrived)
  int64_t last_us = 0;
  std::set<std::string> duplicated_ids;
  double drain_s() const { return last_us > first_us ? (last_us - first_us) / 1e6 : 0; }
  double rate() const { return drain_s() > 0 ? delivered / drain_s() : 0; }
  // The results JSON's common fields: sent, delivered, duplicates, lost, bad_signatures,
  // drain_s and deliveries_per_s.
  nlohmann::json ToJson(size_t sent) const;
};
Arrivals TallyArrivals(const std::vector<MockRecord>& records, const std::set<std::string>& ids);

// Requests a second that reached the provider, per `bucket_s` from `start_us` (Unix µs) to the
// last record: (seconds after start, rate) points for a Chart. Records before start are left out.
std::vector<std::pair<double, double>> RatePerInterval(const std::vector<MockRecord>& records,
                                                       int64_t start_us, double bucket_s);

}  // namespace bulkhead::load
