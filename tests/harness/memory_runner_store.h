// MemoryRunnerStore: a queue's due jobs kept in memory, behind the RunnerStore
// (worker/engine/claim/runner_store.h) a QueueRunner is given, for the tests of the runner's own
// logic: what it claims into free slots, that it sends each claimed job once, that a lost
// connection costs it no job, that a stop hands back what is in flight. What the claim
// statement takes and in which order — the caps, the windows, lending, parking — is the SQL's,
// tested against real PostgreSQL (queue_runner_test, caps_test, plan_cost_test).
//
// Claim() takes the oldest jobs up to its limit, ignoring every cap; ClaimProbes() finds none.
// Every claim's limit is logged (limits()). FailNext(n) makes the next n claims throw
// pqxx::broken_connection, as a connection the database dropped does, so that the runner
// classifies the failure as in production (store_failure.h). A test that wants its jobs
// delivered gives them a URL its own loopback receiver answers (HttpReceiver).
//
// Ownership: the test owns it and declares it before the runner, which holds a reference.
// Threads: the store's calls come on the runner's thread; everything else from the test's; its
// state is guarded by its own mutex.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "runner_store.h"

namespace bulkhead::testing {

class MemoryRunnerStore : public RunnerStore {
 public:
  // A due job for `url`, first attempt of `max_attempts`.
  void Add(int64_t id, int64_t channel, const std::string& url) {
    ClaimedJob job;
    job.id = id;
    job.channel_id = channel;
    job.tenant_id = 1;
    job.attempt = 1;
    job.max_attempts = 5;
    job.payload = R"({"n": )" + std::to_string(id) + "}";
    job.url = url;
    job.secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";  // the Standard Webhooks example
    std::lock_guard lock(mu_);
    due_.push_back(std::move(job));
  }
  void FailNext(int n) {
    std::lock_guard lock(mu_);
    fail_next_ = n;
  }

  std::vector<int> limits() const {
    std::lock_guard lock(mu_);
    return limits_;
  }
  std::vector<OwnedJob> handed_back() const {
    std::lock_guard lock(mu_);
    return handed_back_;
  }
  int resets() const {
    std::lock_guard lock(mu_);
    return resets_;
  }

  std::vector<ClaimedJob> Claim(const std::string&, int limit, const std::string&,
                                const ClaimLimits&, int* parked, int* held_back,
                                ClaimWindows*) override {
    std::lock_guard lock(mu_);
    if (fail_next_ > 0) {
      --fail_next_;
      throw pqxx::broken_connection("memory: the connection was lost");
    }
    limits_.push_back(limit);
    std::vector<ClaimedJob> jobs;
    while (!due_.empty() && static_cast<int>(jobs.size()) < limit) {
      jobs.push_back(std::move(due_.front()));
      due_.pop_front();
    }
    if (parked) *parked = 0;
    if (held_back) *held_back = 0;
    return jobs;
  }
  std::vector<ClaimedJob> ClaimProbes(const std::string&, int, const std::string&,
                                      int64_t) override {
    return {};
  }
  int HandBack(const std::vector<OwnedJob>& jobs, const std::string&) override {
    std::lock_guard lock(mu_);
    handed_back_.insert(handed_back_.end(), jobs.begin(), jobs.end());
    return static_cast<int>(jobs.size());
  }
  int SnoozeChannel(int64_t, int64_t) override { return 0; }
  GoneOutcome DisableGone(const GoneAnswer&, const std::string&) override { return {}; }
  // Every token granted: the rate buckets are SQL's, tested against PostgreSQL.
  std::vector<TokenGrant> TakeTokens(const std::vector<TokenRequest>& requests) override {
    std::vector<TokenGrant> grants;
    for (const auto& r : requests) grants.push_back({r.channel, r.wanted, 0, 0});
    return grants;
  }
  void ReturnTokens(const std::vector<TokenRequest>&) override {}
  void MarkAsleep(const std::string&, const std::string&) override {}
  void MarkAwake(const std::string&, const std::string&) override {}
  // Nothing running: a horizon with nothing to watch.
  SleepStart FellAsleep() override { return {}; }
  RunningXids RunningTransactions() override { return {}; }
  void Reset() override {
    std::lock_guard lock(mu_);
    ++resets_;
  }

 private:
  mutable std::mutex mu_;
  std::deque<ClaimedJob> due_;
  int fail_next_ = 0;
  std::vector<int> limits_;
  std::vector<OwnedJob> handed_back_;
  int resets_ = 0;
};

}  // namespace bulkhead::testing
