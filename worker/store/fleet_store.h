// FleetStore: what keeps the fleet — a node's registration, heartbeat and removal (Node), and
// the maintenance leader's rounds (Maintenance): leadership by advisory lock, deposing a lost
// leader, rescuing the jobs of lost nodes, the breaker's two repairs (parking behind open
// breakers, unparking stranded jobs), pruning, and the fleet-wide samples for the metrics. Its
// SQL is worker/store/fleet_store.sql; the store prepares only those statements.
//
// One FleetStore per connection, and both belong to one thread: the node's main thread, or the
// maintenance thread (whose connection is the one that holds the leadership lock). Database
// errors throw pqxx exceptions; callers catch them, reset their StoreConnection and retry.
// Construction throws std::logic_error when the build embedded no statement of a name it
// needs (named_queries.h).
#pragma once

#include <cstdint>
#include <limits>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class FleetStore {
 public:
  // Every statement of fleet_store.sql, listed by the build from it (named_queries.cmake); the
  // constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit FleetStore(pqxx::connection_base& conn);

  // ---- The node (Node) ----

  // Makes the tiers known to the database (no-op for known ones).
  void RegisterTiers(const std::vector<std::string>& tiers);
  // Inserts or refreshes this node's row, with a lease of `lease_ms` from now.
  void RegisterNode(const std::string& node, const std::string& host, int pid,
                    const std::string& version, const std::vector<std::string>& tiers,
                    int64_t lease_ms);
  // Moves the node's heartbeat to now and its lease to now + lease_ms. Returns false when the
  // node has no row (the leader forgot it): the caller registers it again.
  bool Heartbeat(const std::string& node, int64_t lease_ms);
  // Returns to the queue, attempt unspent, the node's executing jobs claimed over `min_age_ms`
  // ago that are not in `held` (every job the node holds in memory).
  Stranded ReturnStranded(const std::string& node, const std::vector<int64_t>& held,
                          int64_t min_age_ms);
  // Removes the node's row and its sleeping marks (clean shutdown).
  void RemoveNode(const std::string& node);

  // ---- Fleet maintenance (the leader's) ----

  // Takes the fleet's leadership for this connection's session, which it names after `node`,
  // if no other session holds it (or this one already does). It ends with the connection.
  bool TryLead(const std::string& node);
  // Terminates the leader's connection if it belongs to no node with a running lease (a frozen
  // or cut-off leader). Returns the connections terminated (0 or 1).
  int DeposeLostLeader();
  // Returns the executing jobs of nodes whose lease ran out, and of the node `also` (a node
  // restarting under its old name; empty for none), to the queue, or discards those that used
  // their last attempt.
  Rescue RescueLost(const std::string& also = "");
  // Removes the rows of nodes whose lease ended over `after_ms` ago and that own no job.
  int ForgetNodes(int64_t after_ms);
  // Deletes the sleeping marks (bulkhead.sleepers) of nodes that hold no lease. Returns them.
  int ForgetSleepers();
  // Deletes up to `batch` jobs with ids in [low, high) finished over `retention_ms` ago.
  // Returns how many.
  int PruneFinished(int64_t retention_ms, int batch,
                    int64_t low = std::numeric_limits<int64_t>::min(),
                    int64_t high = std::numeric_limits<int64_t>::max());
  // ---- The ranges of jobs (JobRangeKeeper, migration 0021) ----
  // The highest id of a committed job, 0 for none.
  int64_t HighestJobId();
  // Every range of jobs, lowest first, the default range last.
  std::vector<JobRange> JobRanges();
  // Adds the range [low, high). Throws when an id at or above `low` was drawn meanwhile or a lock
  // waited too long (pqxx errors); the caller tries again later.
  void AddJobRange(int64_t low, int64_t high);
  // Whether the jobs in [low, high) all finished over `retention_ms` ago (or none finished), and
  // whether one is live (available, executing, parked).
  RangeFacts ReadRangeFacts(int64_t low, int64_t high, int64_t retention_ms);
  // Deletes the idempotency keys of the range [low, high), then drops the range `range` if every
  // job in it finished over `retention_ms` ago. Returns whether it dropped it.
  bool DropJobRange(const JobRange& range, int64_t retention_ms);
  // Moves the claim floor (ADR 0027): settles its pending bound when the transactions that
  // held bulkhead.job_rows at its reading have ended, then raises the floor to the first
  // unfinished job, passing at most `step` ids. Each statement in its own transaction, in that
  // order. Returns 1 when the floor rose, 0 when it stayed.
  int RaiseClaimFloor(int64_t step);
  // Deletes old channel secrets whose rotation window ended and clears the claim's gate of
  // channels left without any. Returns the secrets deleted.
  int PruneOldSecrets();
  // Unparks the jobs of closed, unpaused channels. Returns {jobs, channels}.
  std::pair<int64_t, int64_t> ReconcileParked();
  // Parks the available jobs of channels whose breaker is not closed. Returns {jobs, channels}.
  std::pair<int64_t, int64_t> ParkBehindOpenBreakers();
  // Reads the four samples in one snapshot; each reads partial indexes of unfinished rows only,
  // never finished rows (the ordering sample: only held entries, at most 100,001 a tier).
  FleetCounts SampleFleet();

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
