// BreakerStore: what the breaker keeper runs — the breaker's transitions, each one
// compare-and-set statement that moves the channel's backlog with its state (open, close after
// a good probe, reopen after a bad one, expire a probe that ran out of time), and the fleet's
// not-closed breakers for the node's view. Its SQL is worker/store/breaker_store.sql; the store
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
#include <string>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class BreakerStore {
 public:
  // The names (worker/store/breaker_store.sql) of the statements it prepares.
  static constexpr std::string_view kStatements[] = {"OpenBreaker", "CloseBreaker", "ReopenBreaker",
                                                     "ExpireProbes", "NotClosedBreakers"};

  // Prepares its statements on `conn`, which must outlive the store.
  explicit BreakerStore(pqxx::connection_base& conn);

  // closed → open, parking the channel's waiting backlog; the probe may go after cooldown_ms.
  BreakerTransition OpenBreaker(int64_t channel, int64_t cooldown_ms, const std::string& reason);
  // half_open → closed after `probe_job` succeeded, unparking the backlog.
  BreakerTransition CloseBreaker(int64_t channel, int64_t probe_job);
  // half_open → open after `probe_job` failed; the next probe waits the grown cooldown:
  // min(cooldown_ms × 2^(openings so far), cooldown_max_ms).
  BreakerTransition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
                                  int64_t cooldown_max_ms, const std::string& reason);
  // Re-opens `queue`'s half-open breakers whose probe ran out of time. Returns how many.
  int ExpireProbes(const std::string& queue, int64_t cooldown_ms, int64_t cooldown_max_ms);
  // The channels whose breaker is not closed, fleet-wide.
  std::vector<int64_t> NotClosedBreakers();

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
