// NewsClaims: whether the claim an enqueue's wake-up starts lends nothing (ADR 0015).
//
// Beside a borrower (a tenant lent the idle slots, ADR 0013), the claim that takes a new job
// also locked and wrote the borrower's lent jobs, which had piled up while the claim before it
// ran: the new job waited for both. So a wake-up's claim lends nothing, and the runner claims
// again at once to lend.
//
// A lone borrower's own enqueues are held by its cap, so there each wake-up's claim takes
// nothing and is one claim more. After kMisses such claims in a row, wake-ups claim as any
// claim does (lending at once) until `quiet` has passed since the last miss (the runner passes
// its poll interval), and then news claims are tried again: at most kMisses claims for nothing
// a quiet period while a lone borrower enqueues, and a neighbour that starts enqueueing is
// noticed within one. A wake-up's claim that takes anything clears the misses.
//
// Not thread-safe: the queue runner's thread alone owns it. Time is passed in.
#pragma once

#include <chrono>

namespace bulkhead {

class NewsClaims {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kMisses = 3;

  explicit NewsClaims(Clock::duration quiet) : quiet_(quiet) {}

  // Whether a claim a wake-up starts at `now` lends nothing.
  bool WithoutLending(Clock::time_point now) {
    if (misses_ >= kMisses && now - missed_at_ >= quiet_) misses_ = 0;
    return misses_ < kMisses;
  }

  // A wake-up's claim, started at `now` without lending, took `taken` rows.
  void Took(int taken, Clock::time_point now) {
    if (taken > 0) {
      misses_ = 0;
    } else {
      ++misses_;
      missed_at_ = now;
    }
  }

 private:
  Clock::duration quiet_;
  int misses_ = 0;  // wake-up claims in a row that took nothing
  Clock::time_point missed_at_{};
};

}  // namespace bulkhead
