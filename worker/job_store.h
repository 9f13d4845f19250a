// JobStore: every statement a worker node runs, in one place, as named prepared statements.
//
// Each statement has a one-line contract here and its reasons beside its SQL in job_store.cc.
// Batches travel as one JSON parameter unpacked by jsonb_to_recordset(), so one round trip
// finishes hundreds of jobs without building array literals by hand.
//
// One JobStore per connection, and both belong to one thread (a queue runner, the completion
// writer, the node's main thread). Database errors throw pqxx exceptions; callers that must
// survive an outage catch pqxx::broken_connection and reconnect.
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace bulkhead {

// A job this node has just claimed, with what the request needs.
struct ClaimedJob {
  int64_t id = 0;
  int64_t channel_id = 0;
  int64_t tenant_id = 0;
  int attempt = 0;  // this attempt, 1-based
  int max_attempts = 0;
  std::string payload;  // the request body: payload::text
  std::string url;
  std::string secret;
};

// The outcome of one attempt, to be written back.
struct AttemptResult {
  int64_t id = 0;
  int attempt = 0;         // the attempt it answers; a result for another attempt is stale
  bool delivered = false;  // a 2xx arrived
  int status = 0;          // HTTP status, 0 if none arrived
  std::string error;       // why it failed; empty when delivered
  double duration_ms = 0;
  int64_t retry_delay_ms = 0;  // when not delivered: wait this long before the next attempt
};

// A claimed job to give back unattempted (shutdown).
struct OwnedJob {
  int64_t id = 0;
  int attempt = 0;
};

class JobStore {
 public:
  // Prepares every statement on `conn`, which must outlive the store.
  explicit JobStore(pqxx::connection_base& conn);

  // Claims up to `limit` due jobs of `queue` for `node`, in (priority, scheduled_at, id)
  // order, marking them executing with attempt + 1.
  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node);

  // Writes a batch of results for jobs `node` still owns at the given attempt: completes the
  // delivered, reschedules the failed, discards those out of attempts. Stale results (the job
  // was handed back, rescued or claimed again) change nothing. Returns the rows written.
  int Record(const std::vector<AttemptResult>& results, const std::string& node);

  // Gives claimed jobs back as available without spending their attempt. Returns the rows.
  int HandBack(const std::vector<OwnedJob>& jobs, const std::string& node);

  // Makes the tiers known to the database (no-op for known ones).
  void RegisterTiers(const std::vector<std::string>& tiers);

  // Inserts or refreshes this node's row, with a lease of `lease_ms` from now.
  void RegisterNode(const std::string& node, const std::string& host, int pid,
                    const std::string& version, const std::vector<std::string>& tiers,
                    int64_t lease_ms);
  // Moves the node's heartbeat to now and its lease to now + lease_ms.
  void Heartbeat(const std::string& node, int64_t lease_ms);
  // Removes the node's row (clean shutdown).
  void RemoveNode(const std::string& node);

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
