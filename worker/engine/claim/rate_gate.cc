#include "rate_gate.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "cap_ledger.h"

namespace bulkhead {

int RateGate::Tokens(const Bucket& b, Clock::time_point now) {
  // GCRA, as TakeTokens: a full bucket holds `burst` tokens, and each 1/rate seconds that the
  // arrival time lies ahead of now takes one away.
  const double ahead_s = std::max(0.0, std::chrono::duration<double>(b.tat - now).count());
  return std::max(0, static_cast<int>(std::floor(b.burst - ahead_s * b.rate + 1e-9)));
}

int RateGate::predicted(int64_t channel, Clock::time_point now) const {
  auto it = buckets_.find(channel);
  return it == buckets_.end() ? -1 : Tokens(it->second, now);
}

void RateGate::Narrow(ClaimLimits& limits, Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    if (it->second.tat + kKeep < now) {
      it = buckets_.erase(it);  // full again long since: nothing to narrow
      continue;
    }
    CapLedger::Narrow(limits, it->first, Tokens(it->second, now));
    ++it;
  }
}

std::vector<TokenRequest> RateGate::Requests(const std::vector<ClaimedJob>& jobs) const {
  std::vector<TokenRequest> requests;
  for (const auto& job : jobs) {
    if (job.probe || job.rate_limit_per_s <= 0) continue;
    auto it = std::find_if(requests.begin(), requests.end(),
                           [&](const TokenRequest& r) { return r.channel == job.channel_id; });
    if (it == requests.end()) {
      requests.push_back({job.channel_id, 1});
    } else {
      ++it->wanted;
    }
  }
  return requests;
}

RateGate::Split RateGate::Admit(std::vector<ClaimedJob> jobs,
                                const std::vector<TokenGrant>& grants, Clock::time_point now) {
  std::unordered_map<int64_t, int> granted;
  for (const auto& g : grants) {
    granted[g.channel] = g.granted;
    if (g.rate <= 0) {
      buckets_.erase(g.channel);  // the limit was removed
      continue;
    }
    Bucket& b = buckets_[g.channel];
    b.rate = g.rate;
    b.burst = std::max(1.0, std::floor(g.rate));
    b.tat = now + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double, std::milli>(g.tat_in_ms));
  }
  Split split;
  split.go.reserve(jobs.size());
  for (auto& job : jobs) {
    if (job.probe || job.rate_limit_per_s <= 0) {
      split.go.push_back(std::move(job));
      continue;
    }
    // A channel the buckets did not answer for (deleted meanwhile) is not held back: its
    // jobs end as any job of a deleted channel does.
    auto it = granted.find(job.channel_id);
    if (it == granted.end() || it->second > 0) {
      if (it != granted.end()) --it->second;
      split.go.push_back(std::move(job));
    } else {
      split.back.push_back({job.id, job.attempt});
    }
  }
  return split;
}

RateGate::Clock::time_point RateGate::next_due(Clock::time_point now) const {
  auto next = Clock::time_point::max();
  for (const auto& [channel, b] : buckets_) {
    if (Tokens(b, now) > 0) continue;
    // One token is back when the arrival time lies (burst - 1) / rate ahead of now.
    next = std::min(next, b.tat - std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>((b.burst - 1) / b.rate)));
  }
  return next;
}

}  // namespace bulkhead
