// QueueRunner's claims, the runner thread's statements on its connection (queue_runner.h):
// ClaimOrBackOff (the claim, with its limits, tokens taken ahead and backoff), ClaimProbes (the
// half-open probes) and AdmitByRate (tokens for what a claim took, and the hand-back of what
// the buckets refused). Split from queue_runner.cc, which keeps the loop and the sending.
#include <algorithm>
#include <utility>

#include "logger.h"
#include "queue_runner.h"

namespace bulkhead {

std::vector<ClaimedJob> QueueRunner::ClaimOrBackOff(int limit, bool lend, int* taken,
                                                    bool* lending_withheld) {
  std::chrono::milliseconds wait{0};
  while (true) {
    try {
      int parked = 0;
      ClaimLimits limits;
      {
        std::lock_guard lock(mu_);
        caps_.Forget(std::chrono::steady_clock::now());
        limits = caps_.Limits(limit);
      }
      std::erase_if(handed_back_open_,
                    [&](int64_t channel) { return !keeper_.OpenPending(channel); });
      for (int64_t channel : handed_back_open_) CapLedger::LeaveOut(limits, channel);
      // Tokens for channels with a backlog, before any of their rows is locked (RateGate).
      if (std::vector<TokenRequest> ahead = rate_.Ahead(std::chrono::steady_clock::now());
          !ahead.empty()) {
        rate_.TookAhead(store_.TakeTokens(ahead), std::chrono::steady_clock::now());
      }
      rate_.Narrow(limits, std::chrono::steady_clock::now());
      const int lend_budget = limits.lend;
      const bool could_lend = lend_budget > 0;
      if (!lend) limits.lend = 0;
      limits.look_ahead = look_ahead_.next();
      heads_.Apply(limits);
      limits.claim_floor = claim_floor_;
      // While a backlog fills most of every claim, the front alone takes what the whole claim's
      // first window would (ADR 0031) at a third less a call (FrontChoice).
      limits.front = front_.next();
      ClaimWindows windows;
      const auto started = std::chrono::steady_clock::now();
      std::vector<ClaimedJob> jobs = store_.Claim(options_.tier.name, limit, options_.node, limits,
                                                  &parked, nullptr, &windows);
      look_ahead_.Saw(windows);
      heads_.Saw(windows);
      // A replay lowers the floor (ADR 0027); a claim that passed the old one and took nothing
      // may have missed the replayed jobs, so it runs again at once with the new one.
      const bool floor_fell = windows.claim_floor < limits.claim_floor;
      claim_floor_ = windows.claim_floor;
      // Lending takes from the skip scan's heads, which exist only when something was held
      // back: a claim that took rows without them had nothing to lend. (One that took nothing
      // reports nothing, and may have been held back entirely.)
      *lending_withheld = !lend && could_lend && (windows.heads > 0 || !windows.reported);
      claim_ok_ = true;
      ++claims_;
      claimed_ += jobs.size();
      parked_at_claim_ += parked;
      if (parked > 0) parked_log_.Add(parked);
      if (metrics_) {
        metrics_->claim_duration->Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        if (parked > 0) metrics_->parked->Increment(parked);
        for (const auto& job : jobs) metrics_->queue_wait->Observe(job.wait_s);
      }
      *taken = static_cast<int>(jobs.size()) + parked;
      if (limits.front) ++front_claims_;
      front_fell_short_ = front_.Saw(limits.front, limit, *taken, lend_budget, windows);
      // The service's backoff, seeded once: seeding one from std::random_device on every claim
      // was 1 % of the node's CPU at 8,000 deliveries a second (perf).
      service_.Succeeded();
      if (floor_fell && *taken == 0) continue;
      return jobs;
    } catch (const std::exception& e) {
      wait = service_.Failed();  // 100 ms doubling to 5 s, jittered
      claim_ok_ = false;
      sleep_.Lost();  // a restarted or promoted database has no mark of ours
      Log(LogLevel::kWarn, "claim_failed",
          {{"tier", options_.tier.name},
           {"error", FirstLine(e.what())},
           {"retry_in_ms", wait.count()}});
      store_.Reset();
    }
    std::unique_lock lock(mu_);
    if (service_.SleepFor(lock, wait)) return {};
  }
}

std::vector<ClaimedJob> QueueRunner::ClaimProbes(int limit) {
  TierOptions tier;
  {
    std::lock_guard lock(mu_);
    tier = tier_;
  }
  try {
    std::vector<ClaimedJob> probes =
        store_.ClaimProbes(tier.name, limit, options_.node,
                           tier.request_timeout_ms + BreakerKeeper::kProbeMargin.count());
    probes_ += probes.size();
    // Each probe moved its channel open → half_open. Logged as a summary (one line a minute),
    // not a line per probe: a hundred dead channels would otherwise write 100 lines a cooldown.
    if (!probes.empty()) {
      probes_log_.Add(probes.size());
      if (metrics_) metrics_->transitions_half_open->Increment(static_cast<double>(probes.size()));
    }
    return probes;
  } catch (const std::exception& e) {
    // The next claim backs off and reconnects; the probe waits for the next round.
    Log(LogLevel::kWarn, "probe_claim_failed",
        {{"tier", tier.name}, {"error", FirstLine(e.what())}});
    store_.Reset();
    return {};
  }
}

std::vector<ClaimedJob> QueueRunner::AdmitByRate(std::vector<ClaimedJob> jobs) {
  if (rate_.tracked() == 0 && std::none_of(jobs.begin(), jobs.end(), [](const ClaimedJob& j) {
        return j.rate_limit_per_s > 0;
      })) {
    return jobs;  // no limited channel in sight: nothing to take or return
  }
  const std::vector<TokenRequest> requests = rate_.Requests(jobs);
  std::vector<TokenGrant> grants;
  try {
    if (!requests.empty()) grants = store_.TakeTokens(requests);
  } catch (const std::exception& e) {
    // No token without the bucket: every limited job goes back (below). If the hand-back
    // fails too, they stay executing under this node's name, which holds none of them, and
    // the node's stranded sweep returns them (fleet_store.sql ReturnStranded).
    Log(LogLevel::kWarn, "take_tokens_failed",
        {{"tier", options_.tier.name}, {"error", FirstLine(e.what())}});
    store_.Reset();
    for (const auto& r : requests) grants.push_back({r.channel, 0, 0, 0});
  }
  RateGate::Split split = rate_.Admit(std::move(jobs), grants, std::chrono::steady_clock::now());
  if (!split.refund.empty()) {
    try {
      store_.ReturnTokens(split.refund);
    } catch (const std::exception& e) {
      // The tokens are lost: the channel sends less than its limit for a moment, never more.
      Log(LogLevel::kWarn, "return_tokens_failed",
          {{"tier", options_.tier.name}, {"error", FirstLine(e.what())}});
      store_.Reset();
    }
  }
  if (!split.back.empty()) {
    rate_limited_ += split.back.size();
    rate_limited_log_.Add(split.back.size());
    if (metrics_) metrics_->rate_limited->Increment(static_cast<double>(split.back.size()));
    try {
      store_.HandBack(split.back, options_.node);
    } catch (const std::exception& e) {
      Log(LogLevel::kWarn, "hand_back_failed",
          {{"tier", options_.tier.name},
           {"jobs", split.back.size()},
           {"error", FirstLine(e.what())}});
      store_.Reset();
    }
  }
  return std::move(split.go);
}

}  // namespace bulkhead
