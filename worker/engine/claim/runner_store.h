// RunnerStore: what a queue runner asks of the database — the seam between the runner's engine
// logic (slots, caps, look-ahead, sleep marks, the endpoints' answers) and ClaimStore's SQL.
//
// The node's is StoreRunnerStore: ClaimStore on the runner's own StoreConnection (named
// "claim:<tier>" in pg_stat_activity), which connects on first use and is dropped by Reset().
// A test of the runner's logic may pass one that keeps its jobs in memory; every statement
// keeps its tests against real PostgreSQL (queue_runner_test, caps_test, plan_cost_test, the
// store's tests), which this seam does not replace.
//
// Failures: each call throws what ClaimStore's throws (pqxx exceptions); the runner, the sleep
// mark and the endpoint answers tell a lost connection from a refused statement by the
// exception alone (store_failure.h), so a double that fails on purpose must throw what the real
// one would, and after any failure the caller calls Reset() before the next call.
//
// Threads: used by the runner thread only (and by QueueRunner::HandBackInFlight() once that
// thread has ended); SleepMark and EndpointAnswers are the runner's and run on its thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "claim_store.h"
#include "store_connection.h"
#include "store_types.h"

namespace bulkhead {

class RunnerStore {
 public:
  virtual ~RunnerStore() = default;

  // ClaimStore::Claim with caps: up to `limit` due jobs of `queue` for `node` within `limits`.
  virtual std::vector<ClaimedJob> Claim(const std::string& queue, int limit,
                                        const std::string& node, const ClaimLimits& limits,
                                        int* parked, int* held_back, ClaimWindows* windows) = 0;
  // ClaimStore::ClaimProbes: the probes of channels whose cooldown is over.
  virtual std::vector<ClaimedJob> ClaimProbes(const std::string& queue, int limit,
                                              const std::string& node, int64_t probe_window_ms) = 0;
  // ClaimStore::HandBack: `jobs` back to available, their attempt not spent.
  virtual int HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) = 0;
  // ClaimStore::SnoozeChannel (a Retry-After) and DisableGone (a 410).
  virtual int SnoozeChannel(int64_t channel, int64_t delay_ms) = 0;
  virtual GoneOutcome DisableGone(const GoneAnswer& answer, const std::string& node) = 0;
  // ClaimStore::TakeTokens and ReturnTokens: the rate buckets of limited channels.
  virtual std::vector<TokenGrant> TakeTokens(const std::vector<TokenRequest>& requests) = 0;
  virtual void ReturnTokens(const std::vector<TokenRequest>& unused) = 0;
  // ClaimStore::MarkAsleep and MarkAwake (bulkhead.sleepers, ADR 0019).
  virtual void MarkAsleep(const std::string& queue, const std::string& node) = 0;
  virtual void MarkAwake(const std::string& queue, const std::string& node) = 0;
  // ClaimStore::FellAsleep and RunningTransactions (the wake-up gate, migration 0027).
  virtual SleepStart FellAsleep() = 0;
  virtual RunningXids RunningTransactions() = 0;

  // Drops the connection after a failed call; the next call reconnects.
  virtual void Reset() = 0;
};

// The node's RunnerStore: ClaimStore on a connection of its own.
class StoreRunnerStore : public RunnerStore {
 public:
  // `database`: a libpq connection string; `name`: the connection's part in
  // application_name ("claim:default"); `pooling`: kTransaction when `database` is a pooler in
  // transaction mode (store_connection.h). Connects on the first call, not here.
  StoreRunnerStore(std::string database, std::string name, Pooling pooling = Pooling::kSession);

  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node,
                                const ClaimLimits& limits, int* parked, int* held_back,
                                ClaimWindows* windows) override;
  std::vector<ClaimedJob> ClaimProbes(const std::string& queue, int limit, const std::string& node,
                                      int64_t probe_window_ms) override;
  int HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) override;
  int SnoozeChannel(int64_t channel, int64_t delay_ms) override;
  GoneOutcome DisableGone(const GoneAnswer& answer, const std::string& node) override;
  std::vector<TokenGrant> TakeTokens(const std::vector<TokenRequest>& requests) override;
  void ReturnTokens(const std::vector<TokenRequest>& unused) override;
  void MarkAsleep(const std::string& queue, const std::string& node) override;
  void MarkAwake(const std::string& queue, const std::string& node) override;
  SleepStart FellAsleep() override;
  RunningXids RunningTransactions() override;
  void Reset() override;

 private:
  StoreConnection<ClaimStore> store_;
};

}  // namespace bulkhead
