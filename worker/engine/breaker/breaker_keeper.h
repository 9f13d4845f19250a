// BreakerKeeper: the node's one thread that moves channel breakers in Postgres, and the owner
// of each served tier's BreakerBoard.
//
// It runs the breaker's transition statements (BreakerStore): opening when a board trips,
// closing or re-opening when this node's probe answers, each moving the channel's state with a
// batch of its backlog; and, on a timer:
// - every 250 ms: each board's slow-call check, so a hanging endpoint trips without waiting
//   for any attempt to end;
// - every second: re-opening of this node's tiers' half-open breakers whose probe ran out of
//   time (the prober died, or its answer was lost), so none stays half-open for ever;
// - every 5 s: a resync of the boards from the database, in case a NOTIFY was missed.
// The fleet-wide repairs (parking jobs that slipped in behind an opening breaker, the parked
// reconciler) are the leader's (Maintenance).
// Probes themselves are claimed by the queue runners, which own the worker slots.
//
// Requests (RequestOpen, ProbeAnswered) wait in a queue bounded by the channels in play: one
// open request per channel at a time, one answer per probe. A transition that moved a whole
// batch (Options::backlog_batch) queues the rest of the backlog's move behind everything else,
// one batch a turn, so no backlog, however long, holds up another channel's transition, and
// the timers run whenever due between requests (issue 31: one statement for 200,000 jobs
// outlasted a 250 ms statement timeout and was retried at the front of the queue for ever).
// A request that fails on a database error goes to the back of the queue and is retried on a
// new connection after a backoff; a statement timeout also halves the batch (down to 100). A
// transition another node made first is simply not made again (compare-and-set), and a batch
// for a channel whose state moved on meanwhile moves nothing. A request
// refused for its data (store_failure.h: its reason text, say, is one PostgreSQL cannot hold)
// would block the queue for ever, so it is quarantined instead: made once more with its reason
// made storable (StorableText), and dropped if even that is refused; either way logged
// (breaker_request_quarantined) and counted (bulkhead_quarantined_total{writer="breaker"}):
// PoisonQuarantine, shared with the completion writer.
//
// The database is behind a BreakerLedger (breaker_ledger.h): the node's runs BreakerStore on a
// connection of its own; a test of the logic above may pass one that keeps breakers in memory.
//
// Threads: the keeper's thread (a ServiceThread, started by the constructor and joined by the
// destructor) owns the ledger and its connection. Every public method may be called from
// any thread: RequestOpen and ProbeAnswered from the HTTP sender's I/O thread (they only
// queue), Learn from the NOTIFY listener's, Reconfigure from the node's main thread. board() hands
// out a reference that lives as long as the keeper.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "breaker_board.h"
#include "breaker_ledger.h"
#include "breaker_store.h"
#include "config.h"
#include "metrics.h"
#include "poison_quarantine.h"
#include "service_thread.h"

namespace bulkhead {

class BreakerKeeper {
 public:
  struct Options {
    std::string database;  // libpq connection string (unused when a ledger is passed)
    std::vector<TierOptions> tiers;
    Pooling pooling = Pooling::kSession;  // kTransaction: `database` is a transaction pooler
    std::chrono::milliseconds slow_check_every{250};
    std::chrono::milliseconds expire_every{1000};
    std::chrono::milliseconds reconcile_every{5000};
    // The most jobs one statement parks or unparks; halved on a statement timeout.
    int64_t backlog_batch = BreakerStore::kBacklogBatch;
    // Transitions this keeper makes and the jobs they park; nullptr records nothing.
    Metrics* metrics = nullptr;
  };

  // A probe has until its request timeout plus this to answer before any node re-opens.
  static constexpr std::chrono::milliseconds kProbeMargin{5000};

  // Moves breakers with StoreBreakerLedger on `options.database`: the node's keeper.
  explicit BreakerKeeper(Options options);
  // Moves breakers with `ledger` (a test's, in memory); `options.database` is not used.
  BreakerKeeper(Options options, std::unique_ptr<BreakerLedger> ledger);
  // Stops the thread; requests still queued are dropped (boards and the fleet catch up: an
  // open not made is made again by the next failures, a probe not answered expires, and the
  // leader parks or unparks what a backlog's batches left, ParkBehindOpen and ReconcileParked).
  ~BreakerKeeper();
  BreakerKeeper(const BreakerKeeper&) = delete;
  BreakerKeeper& operator=(const BreakerKeeper&) = delete;

  // The board of a served tier.
  BreakerBoard& board(const std::string& tier);

  // New settings for a served tier (a reload): its board's and its transitions' from now on.
  void Reconfigure(const TierOptions& tier);

  // Open `trip.channel`'s breaker (a board of `tier` tripped).
  void RequestOpen(const std::string& tier, BreakerBoard::Trip trip);

  // This node's probe `job` of `channel` answered: close on success, re-open otherwise.
  void ProbeAnswered(const std::string& tier, int64_t channel, int64_t job, bool success,
                     const std::string& detail);

  // Whether an open of `channel` is queued or under way here (RequestOpen, not yet made or
  // found made by another node).
  bool OpenPending(int64_t channel) const;

  // A NOTIFY bulkhead_breakers payload: "<channel id> <state>". Unknown payloads are ignored.
  void Learn(const std::string& payload);

  // Transitions this node made, since start (tests, logs).
  uint64_t opened() const { return opened_.load(); }
  uint64_t closed() const { return closed_.load(); }
  uint64_t reopened() const { return reopened_.load(); }
  // Requests set aside because the database refused their data (recorded or dropped).
  uint64_t quarantined() const { return quarantine_.count(); }

 private:
  static constexpr int64_t kMinBatch = 100;  // what statement timeouts can halve the batch to

  struct Request {
    // kParkRest and kUnparkRest: the rest of a backlog after a transition moved a full batch.
    enum Kind { kOpen, kProbeAnswer, kParkRest, kUnparkRest } kind;
    std::string tier;
    int64_t channel = 0;
    int64_t job = 0;  // the probe's
    bool success = false;
    std::string detail;
    int64_t moved = 0;  // kParkRest, kUnparkRest: the backlog's jobs moved so far
  };

  void Run();
  // Runs one request; false if the database failed (the caller queues it again). A request
  // refused for its data is quarantined and counts as done. The rest of a backlog to move
  // is appended to `next`.
  bool Execute(const Request& request, std::vector<Request>& next);
  // The request's transition or batch. Throws the store's exceptions.
  void Transition(const TierOptions& tier, const Request& request, std::vector<Request>& next);
  // After a transition or batch moved `jobs`: the rest of the backlog, if it filled the batch.
  void FollowUp(const Request& request, Request::Kind kind, int64_t moved, int64_t jobs,
                std::vector<Request>& next);
  // Counts `transitions` into the state `to` (open, closed) and the jobs they parked.
  void Count(const std::string& tier, std::string_view to, int64_t parked, int64_t transitions = 1);
  // The timers' work; false if the database failed.
  bool Maintain(std::chrono::steady_clock::time_point now);
  TierOptions Tier(const std::string& name);  // a copy of the current settings

  // Constant after construction.
  const Options options_;
  std::map<std::string, std::unique_ptr<BreakerBoard>> boards_;  // the map itself is constant

  mutable std::mutex mu_;  // also service_'s: the keeper waits under it for requests or stop
  // Guarded by mu_.
  std::vector<TierOptions> tiers_;  // current settings (Reconfigure)
  std::deque<Request> queue_;
  std::set<int64_t> open_requested_;  // channels with a kOpen in queue_

  // Only touched by the keeper's thread.
  const std::unique_ptr<BreakerLedger> ledger_;
  std::chrono::steady_clock::time_point next_slow_check_{};
  std::chrono::steady_clock::time_point next_expire_{};
  std::chrono::steady_clock::time_point next_reconcile_{};
  int64_t batch_;        // Options::backlog_batch, halved by statement timeouts
  bool halved_ = false;  // the last failure halved batch_: retry without a backoff

  std::atomic<uint64_t> opened_{0};
  std::atomic<uint64_t> closed_{0};
  std::atomic<uint64_t> reopened_{0};
  PoisonQuarantine quarantine_;  // counts from any thread; Take() on the keeper's

  ServiceThread service_{mu_};  // the keeper's thread: started last, joined first
};

}  // namespace bulkhead
