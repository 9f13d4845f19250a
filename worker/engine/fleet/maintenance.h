// Maintenance: the fleet's housekeeping, run by exactly one node at a time — the leader.
//
// Every node runs a Maintenance thread with a connection of its own. Every `elect_every` it
// tries to take a session-level advisory lock on that connection (FleetStore::TryLead); the node
// that holds it is the leader. The lock lives exactly as long as the connection: when the
// leader dies (kill -9, OOM, a deploy) or loses its connection, Postgres releases it and
// another node takes over at its next try — within `elect_every`, two seconds by default. No
// row names the leader, so no crash can leave a stale one behind.
//
// What the leader does:
// - every `rescue_every` (2 s): returns the executing jobs of nodes whose lease ran out to
//   the queue (FleetStore::RescueLost), so a node killed mid-delivery costs its jobs one lease
//   (15 s by default) plus up to 2 s, not a fixed job timeout; then raises the claim floor, the
//   lowest id a claimable job can have (FleetStore::RaiseClaimFloor, ADR 0027);
// - every second: parks jobs that slipped in as available behind an opening breaker;
// - every 5 s: the parked reconciler (no parked job behind a closed, unpaused breaker);
// - every minute: keeps the ranges of bulkhead.jobs (JobRangeKeeper: adds one ahead, drops the
//   ones whose jobs all finished before the retention), then prunes the other finished jobs
//   older than the retention, in batches of 10,000 until a batch comes back short (at most 100
//   batches a run), forgets the rows of nodes whose lease ended over an hour ago, and deletes
//   old channel secrets whose rotation window ended (the claim ignores them already; ADR 0008).
// - every `sample_every` (15 s): the fleet-wide counts for the metrics (FleetStore::SampleFleet:
//   jobs by state, breakers by state, queue lag per tier), which only the leader exports
//   (see metrics.h for how a dashboard aggregates them).
// A leader that loses its connection stops being leader; on reconnect it competes again. With
// `close_when_following`, a node that did not win closes its connection until its next try. A
// leader that keeps its connection but not its lease — frozen by SIGSTOP, or cut off from the
// fleet while its maintenance connection lives — would hold the lock for ever: a node that
// fails to take the lock checks whether its holder's node still has a lease, and if not,
// terminates that connection (FleetStore::DeposeLostLeader), so leadership moves within a lease.
//
// Threads: the maintenance thread (a ServiceThread, started by the constructor and joined by the
// destructor) owns the connection; is_leader() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "fleet_store.h"
#include "job_range_keeper.h"
#include "logger.h"
#include "metrics.h"
#include "service_thread.h"
#include "store_connection.h"

namespace bulkhead {

class Maintenance {
 public:
  struct Options {
    std::string database;  // libpq connection string
    std::string node;      // this node's name (the maintenance connection is named after it)
    std::chrono::milliseconds retention{7LL * 24 * 3600 * 1000};
    std::chrono::milliseconds elect_every{2000};
    std::chrono::milliseconds rescue_every{2000};
    std::chrono::milliseconds park_every{1000};
    std::chrono::milliseconds reconcile_every{5000};
    std::chrono::milliseconds prune_every{60000};
    int prune_batch = 10000;
    // The smallest range of job ids the leader adds (JobRangeKeeper); tests make it small.
    int64_t min_range_ids = 100'000;
    std::chrono::milliseconds sample_every{15000};
    Metrics* metrics = nullptr;  // rescues and the fleet samples; nullptr records nothing
    // A follower closes its connection after each try instead of holding it (a node with a
    // `database_pool`, whose other traffic holds no session): each try costs a connection
    // (through a session pooler, a client login), and no follower holds a server connection.
    bool close_when_following = false;
  };

  explicit Maintenance(Options options);
  ~Maintenance();  // stops the thread; closing the connection hands leadership on
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  bool is_leader() const { return leader_.load(); }
  // Jobs this node rescued and pruned as leader, since start.
  uint64_t rescued() const { return rescued_.load(); }
  uint64_t pruned() const { return pruned_.load(); }

 private:
  void Run();
  // One round of the leader's duties that are due at `now`. Throws pqxx errors.
  void Lead(std::chrono::steady_clock::time_point now);

  // Constant after construction.
  const Options options_;

  std::mutex mu_;  // service_'s: the thread waits under it for its next round or stop

  std::atomic<bool> leader_{false};
  std::atomic<uint64_t> rescued_{0};
  std::atomic<uint64_t> pruned_{0};

  // Only touched by the maintenance thread.
  StoreConnection<FleetStore> store_;
  JobRangeKeeper ranges_;
  std::chrono::steady_clock::time_point next_rescue_{};
  std::chrono::steady_clock::time_point next_park_{};
  std::chrono::steady_clock::time_point next_reconcile_{};
  std::chrono::steady_clock::time_point next_prune_{};
  std::chrono::steady_clock::time_point next_sample_{};
  // Jobs parked behind an opening breaker, logged as one summary a minute (this runs every
  // second while a breaker opens).
  RepeatedEvent parked_log_{LogLevel::kInfo,
                            "parked_behind_open",
                            {{"detail", "parked jobs enqueued while their breaker was opening"}}};

  ServiceThread service_{mu_};  // the maintenance thread: started last, joined first
};

}  // namespace bulkhead
