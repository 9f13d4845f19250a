#include "runner_store.h"

#include <utility>

namespace bulkhead {

StoreRunnerStore::StoreRunnerStore(std::string database, std::string name, Pooling pooling)
    : store_(std::move(database), std::move(name), pooling) {}

std::vector<ClaimedJob> StoreRunnerStore::Claim(const std::string& queue, int limit,
                                                const std::string& node, const ClaimLimits& limits,
                                                int* parked, int* held_back,
                                                ClaimWindows* windows) {
  return store_.Get().Claim(queue, limit, node, limits, parked, held_back, windows);
}

std::vector<ClaimedJob> StoreRunnerStore::ClaimProbes(const std::string& queue, int limit,
                                                      const std::string& node,
                                                      int64_t probe_window_ms) {
  return store_.Get().ClaimProbes(queue, limit, node, probe_window_ms);
}

int StoreRunnerStore::HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) {
  return store_.Get().HandBack(jobs, node);
}

int StoreRunnerStore::SnoozeChannel(int64_t channel, int64_t delay_ms) {
  return store_.Get().SnoozeChannel(channel, delay_ms);
}

GoneOutcome StoreRunnerStore::DisableGone(const GoneAnswer& answer, const std::string& node) {
  return store_.Get().DisableGone(answer, node);
}

std::vector<TokenGrant> StoreRunnerStore::TakeTokens(const std::vector<TokenRequest>& requests) {
  return store_.Get().TakeTokens(requests);
}

void StoreRunnerStore::ReturnTokens(const std::vector<TokenRequest>& unused) {
  store_.Get().ReturnTokens(unused);
}

void StoreRunnerStore::MarkAsleep(const std::string& queue, const std::string& node) {
  store_.Get().MarkAsleep(queue, node);
}

void StoreRunnerStore::MarkAwake(const std::string& queue, const std::string& node) {
  store_.Get().MarkAwake(queue, node);
}

SleepStart StoreRunnerStore::FellAsleep() { return store_.Get().FellAsleep(); }

RunningXids StoreRunnerStore::RunningTransactions() { return store_.Get().RunningTransactions(); }

void StoreRunnerStore::Reset() { store_.Reset(); }

}  // namespace bulkhead
