#include "rate_gate.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "cap_ledger.h"

namespace bulkhead {

int RateGate::Bucket::batch() const {
  return static_cast<int>(std::clamp(std::floor(rate / 20), 1.0, burst));
}

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

bool RateGate::backlog(int64_t channel) const {
  auto it = buckets_.find(channel);
  return it != buckets_.end() && it->second.backlog;
}

void RateGate::Record(const TokenGrant& g, Clock::time_point now) {
  if (g.rate <= 0) {
    buckets_.erase(g.channel);  // the limit was removed
    return;
  }
  Bucket& b = buckets_[g.channel];
  b.rate = g.rate;
  b.burst = std::max(1.0, std::floor(g.rate));
  b.tat = now + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(g.tat_in_ms));
}

std::vector<TokenRequest> RateGate::Ahead(Clock::time_point now) {
  std::vector<TokenRequest> requests;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    Bucket& b = it->second;
    b.ahead = 0;
    if (!b.backlog && b.tat + kKeep < now) {
      it = buckets_.erase(it);  // full again long since, and nothing waits: forget it
      continue;
    }
    const int tokens = Tokens(b, now);
    if (b.backlog && tokens >= b.batch()) requests.push_back({it->first, tokens});
    ++it;
  }
  return requests;
}

void RateGate::TookAhead(const std::vector<TokenGrant>& grants, Clock::time_point now) {
  for (const auto& g : grants) {
    Record(g, now);
    auto it = buckets_.find(g.channel);
    if (it != buckets_.end()) it->second.ahead = g.granted;
  }
}

void RateGate::Narrow(ClaimLimits& limits, Clock::time_point now) const {
  for (const auto& [channel, b] : buckets_) {
    CapLedger::Narrow(limits, channel, b.backlog ? b.ahead : Tokens(b, now));
  }
}

std::vector<TokenRequest> RateGate::Requests(const std::vector<ClaimedJob>& jobs) const {
  std::vector<TokenRequest> requests;
  std::unordered_map<int64_t, int> ahead;
  for (const auto& [channel, b] : buckets_) ahead[channel] = b.ahead;
  for (const auto& job : jobs) {
    if (job.probe || job.rate_limit_per_s <= 0) continue;
    if (int& left = ahead[job.channel_id]; left > 0) {
      --left;  // covered by a token taken ahead
      continue;
    }
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

RateGate::Split RateGate::Admit(std::vector<ClaimedJob> jobs, const std::vector<TokenGrant>& grants,
                                Clock::time_point now) {
  std::unordered_map<int64_t, int> granted;  // tokens taken after the claim, not yet given
  for (const auto& g : grants) granted[g.channel] = g.granted;
  std::unordered_map<int64_t, int> used;  // tokens taken ahead that a job of the claim used
  std::unordered_map<int64_t, bool> denied;
  Split split;
  split.go.reserve(jobs.size());
  for (auto& job : jobs) {
    if (job.probe || job.rate_limit_per_s <= 0) {
      split.go.push_back(std::move(job));
      continue;
    }
    auto b = buckets_.find(job.channel_id);
    if (b != buckets_.end() && used[job.channel_id] < b->second.ahead) {
      ++used[job.channel_id];
      split.go.push_back(std::move(job));
      continue;
    }
    // A channel the buckets did not answer for (deleted meanwhile) is not held back: its
    // jobs end as any job of a deleted channel does.
    auto g = granted.find(job.channel_id);
    if (g == granted.end() || g->second > 0) {
      if (g != granted.end()) --g->second;
      split.go.push_back(std::move(job));
    } else {
      split.back.push_back({job.id, job.attempt});
      denied[job.channel_id] = true;
    }
  }
  for (const auto& g : grants) Record(g, now);
  for (auto& [channel, b] : buckets_) {
    const auto u = used.find(channel);
    const int n = u == used.end() ? 0 : u->second;
    if (b.ahead > n) {
      // Fewer of its jobs than tokens: its backlog ran out (or other work filled the claim).
      // The tokens go back, and first contact finds what comes next.
      split.refund.push_back({channel, b.ahead - n});
      b.backlog = false;
    }
    b.ahead = 0;
    // Jobs handed back: it has a backlog, and from the next claim on its tokens are taken
    // ahead.
    if (denied.count(channel)) b.backlog = true;
  }
  return split;
}

RateGate::Clock::time_point RateGate::next_due(Clock::time_point now) const {
  auto next = Clock::time_point::max();
  for (const auto& [channel, b] : buckets_) {
    if (!b.backlog || Tokens(b, now) >= b.batch()) continue;
    // A batch is in the bucket when its arrival time lies (burst - batch) / rate ahead of now.
    next =
        std::min(next, b.tat - std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>((b.burst - b.batch()) / b.rate)));
  }
  return next;
}

}  // namespace bulkhead
