// RateGate: one runner's side of the channels' rate limits (channels.rate_limit_per_s,
// docs/events-rates-ordering.md, ADR 0021). The limit holds across the fleet through a token
// bucket per channel in PostgreSQL (bulkhead.rate_buckets, ClaimStore::TakeTokens); this class
// decides what to ask of it and keeps what it answered, so that a limited channel takes no
// worker slot while it waits for its turn:
//
// - After a claim, Requests() names the limited channels among the claimed jobs and how many
//   tokens each wants (a job each). The runner takes them (TakeTokens) and Split() keeps, of
//   each channel's jobs in claim order, as many as were granted: those go; the rest are handed
//   back at once, their attempt unspent, and keep their place in the queue.
// - The grant tells where the channel's bucket stands. Until the bucket is predicted to hold a
//   token again, Narrow() leaves the channel out of the runner's claims (a window of 0, as a
//   channel at its cap: its rows are never locked), and with k tokens predicted it lets a
//   claim take at most k of its jobs. The prediction knows only this node's takes: other nodes
//   take from the same bucket, and what it over-counts goes back at the next grant.
// - next_due() is when the first left-out channel's next token comes: the runner claims again
//   then, not only at its next poll.
//
// A 429 with a Retry-After still pushes the channel's jobs later on top of this (the runner's
// snooze); a probe is not rate-limited (one request per cooldown, while nothing else is sent).
//
// Bounded: a channel is kept only while its bucket is not yet full again (its arrival time
// lies ahead) or for kKeep after; a channel whose limit was removed is dropped at its next
// claim.
//
// Threads: the runner thread only (not thread-safe).
#pragma once

#include <chrono>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class RateGate {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a channel's bucket is remembered after it was full again.
  static constexpr auto kKeep = std::chrono::seconds(10);

  // Makes the claim of `limits` take at most the predicted tokens of each limited channel this
  // runner knows: none (left out) while its bucket is predicted empty.
  void Narrow(ClaimLimits& limits, Clock::time_point now);

  // The tokens a claim's `jobs` need: one per job of each limited channel (non-probes).
  std::vector<TokenRequest> Requests(const std::vector<ClaimedJob>& jobs) const;

  // Records the buckets' answers and splits `jobs`: `go` keeps every unlimited job and the
  // first `granted` of each limited channel's (claim order); `back` gets the others.
  struct Split {
    std::vector<ClaimedJob> go;
    std::vector<OwnedJob> back;
  };
  Split Admit(std::vector<ClaimedJob> jobs, const std::vector<TokenGrant>& grants,
              Clock::time_point now);

  // When the first channel left out by Narrow() has a token again; max() when none is.
  Clock::time_point next_due(Clock::time_point now) const;

  // Tokens predicted in `channel`'s bucket at `now` (tests); -1 for a channel not known.
  int predicted(int64_t channel, Clock::time_point now) const;
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double rate = 0;
    double burst = 1;           // tokens a full bucket holds: one second's worth, at least 1
    Clock::time_point tat{};    // the bucket's theoretical arrival time, on this clock
  };
  static int Tokens(const Bucket& b, Clock::time_point now);

  std::unordered_map<int64_t, Bucket> buckets_;
};

}  // namespace bulkhead
