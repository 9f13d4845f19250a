// BreakerStore: what the breaker keeper runs — the breaker's transitions, each one
// compare-and-set statement that moves the channel's state with a batch of its backlog (open,
// close after a good probe, reopen after a bad one, expire a probe that ran out of time), the
// batches that move the rest of a backlog, and the fleet's not-closed breakers for the node's
// view. Its SQL is worker/store/breaker_store.sql; the store
// prepares only those statements. The probe's own transition (open → half_open) is
// ClaimStore::ClaimProbes: the runner that sends the probe claims it.
//
// One BreakerStore per connection, and both belong to the breaker keeper's thread. Database
// errors throw pqxx exceptions; the keeper catches them, resets its StoreConnection and retries.
// Construction throws std::logic_error when the build embedded no statement of a name it
// needs (named_queries.h).
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class BreakerStore {
 public:
  // Every statement of breaker_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // The jobs one statement moves at most: about 20 ms of parking on the 2-core development
  // machine (100,000 in 0.4 s, load/park_bench.sh), well inside any sane statement timeout.
  // A transition that moved `batch` jobs may have left more: ParkBacklog or UnparkBacklog.
  static constexpr int64_t kBacklogBatch = 5000;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit BreakerStore(pqxx::connection_base& conn);

  // closed → open, parking up to `batch` of the channel's waiting jobs; the probe may go after
  // cooldown_ms.
  BreakerTransition OpenBreaker(int64_t channel, int64_t cooldown_ms, const std::string& reason,
                                int64_t batch = kBacklogBatch);
  // half_open → closed after `probe_job` succeeded, unparking up to `batch` jobs.
  BreakerTransition CloseBreaker(int64_t channel, int64_t probe_job, int64_t batch = kBacklogBatch);
  // half_open → open after `probe_job` failed, parking up to `batch` jobs; the next probe waits
  // the grown cooldown: min(cooldown_ms × 2^(openings so far), cooldown_max_ms).
  BreakerTransition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
                                  int64_t cooldown_max_ms, const std::string& reason,
                                  int64_t batch = kBacklogBatch);
  // Parks up to `batch` more waiting jobs of `channel` while it does not flow; returns how many.
  int64_t ParkBacklog(int64_t channel, int64_t batch = kBacklogBatch);
  // Unparks up to `batch` more parked jobs of `channel` while it flows; returns how many.
  int64_t UnparkBacklog(int64_t channel, int64_t batch = kBacklogBatch);
  // Re-opens `queue`'s half-open breakers whose probe ran out of time. Returns how many.
  int ExpireProbes(const std::string& queue, int64_t cooldown_ms, int64_t cooldown_max_ms);
  // The channels whose breaker is not closed, fleet-wide.
  std::vector<int64_t> NotClosedBreakers();

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
