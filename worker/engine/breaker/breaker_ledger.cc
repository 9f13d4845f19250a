#include "breaker_ledger.h"

namespace bulkhead {

StoreBreakerLedger::StoreBreakerLedger(std::string database, Pooling pooling)
    : store_(std::move(database), "breaker", pooling) {}

BreakerTransition StoreBreakerLedger::OpenBreaker(int64_t channel, int64_t cooldown_ms,
                                                  const std::string& reason, int64_t batch) {
  return store_.Get().OpenBreaker(channel, cooldown_ms, reason, batch);
}

BreakerTransition StoreBreakerLedger::CloseBreaker(int64_t channel, int64_t probe_job,
                                                   int64_t batch) {
  return store_.Get().CloseBreaker(channel, probe_job, batch);
}

BreakerTransition StoreBreakerLedger::ReopenBreaker(int64_t channel, int64_t probe_job,
                                                    int64_t cooldown_ms, int64_t cooldown_max_ms,
                                                    const std::string& reason, int64_t batch) {
  return store_.Get().ReopenBreaker(channel, probe_job, cooldown_ms, cooldown_max_ms, reason,
                                    batch);
}

int64_t StoreBreakerLedger::ParkBacklog(int64_t channel, int64_t batch) {
  return store_.Get().ParkBacklog(channel, batch);
}

int64_t StoreBreakerLedger::UnparkBacklog(int64_t channel, int64_t batch) {
  return store_.Get().UnparkBacklog(channel, batch);
}

int StoreBreakerLedger::ExpireProbes(const std::string& queue, int64_t cooldown_ms,
                                     int64_t cooldown_max_ms) {
  return store_.Get().ExpireProbes(queue, cooldown_ms, cooldown_max_ms);
}

std::vector<int64_t> StoreBreakerLedger::NotClosedBreakers() {
  return store_.Get().NotClosedBreakers();
}

void StoreBreakerLedger::Reset() { store_.Reset(); }

}  // namespace bulkhead
