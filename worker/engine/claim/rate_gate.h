// RateGate: one runner's side of the channels' rate limits (channels.rate_limit_per_s,
// docs/events-rates-ordering.md, ADR 0021). The limit holds across the fleet through a token
// bucket per channel in PostgreSQL (bulkhead.rate_buckets, ClaimStore::TakeTokens and
// ReturnTokens); this class decides what to ask of the buckets and keeps what they answered, so
// that a limited channel takes no worker slot while it waits for its turn.
//
// Two ways a limited channel's jobs get their tokens:
//
// - First contact. A channel this runner has no backlog of is claimed as any other (at most
//   the tokens its bucket is predicted to hold). After the claim, Requests() asks a token for
//   each of its jobs, and Admit() keeps, in claim order, as many as were granted: those go;
//   the rest are handed back at once, their attempt unspent, and keep their place in the
//   queue. A channel that had jobs handed back has a backlog.
// - Ahead. For a channel with a backlog, tokens are taken before the claim (Ahead(), then
//   TookAhead()) and the claim may take exactly that many of its jobs (Narrow()): nothing is
//   handed back. Taking them after, every node that predicted the same next token claimed a
//   job for it and all but one handed theirs back: with two nodes, 540 hand-backs for 600
//   deliveries (load/events_bench.sh nodes); ahead, the bucket chooses before any row is
//   locked. Tokens the claim did not use are returned (Admit()'s `refund`), and the channel
//   has no backlog any more: it is claimed by first contact again when it has work.
//
// A channel with a backlog and no token is left out of the claims (a window of 0, as a channel
// at its cap: its rows are never locked), and next_due() is when its bucket will hold a batch
// (a twentieth of a second's worth, at least one token): the runner claims again then, so a
// limited channel costs each node at most about 20 claims a second however high its limit.
//
// The prediction (the bucket's arrival time as of this runner's last take) knows nothing of
// other nodes' takes; the bucket's grants correct it. A 429 with a Retry-After still pushes the
// channel's jobs later on top of this (the runner's snooze); a probe is not rate-limited (one
// request per cooldown, while nothing else is sent).
//
// Bounded: a channel is kept only while its bucket is not yet full again, or has a backlog,
// and for kKeep after; a channel whose limit was removed is dropped at its next grant.
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

  // Before a claim: the tokens to take ahead, for each channel with a backlog whose bucket is
  // predicted to hold a batch. Forgets what earlier claims took ahead.
  std::vector<TokenRequest> Ahead(Clock::time_point now);
  // The buckets' answer to Ahead().
  void TookAhead(const std::vector<TokenGrant>& grants, Clock::time_point now);
  // Makes the claim of `limits` take, of each limited channel this runner knows, at most what
  // it took ahead (a channel with a backlog) or what its bucket is predicted to hold (others).
  void Narrow(ClaimLimits& limits, Clock::time_point now) const;

  // After the claim: the tokens its `jobs` still need, one per job of each limited channel
  // beyond what was taken ahead for it (probes need none).
  std::vector<TokenRequest> Requests(const std::vector<ClaimedJob>& jobs) const;
  // Records the answer to Requests() and splits `jobs`: `go` keeps every unlimited job and, of
  // each limited channel's, in claim order, those with a token; `back` gets the others; `refund`
  // the tokens taken ahead that no job used.
  struct Split {
    std::vector<ClaimedJob> go;
    std::vector<OwnedJob> back;
    std::vector<TokenRequest> refund;
  };
  Split Admit(std::vector<ClaimedJob> jobs, const std::vector<TokenGrant>& grants,
              Clock::time_point now);

  // When the first channel with a backlog left out by Narrow() will have a batch of tokens;
  // max() when none waits.
  Clock::time_point next_due(Clock::time_point now) const;

  // Tokens predicted in `channel`'s bucket at `now` (tests); -1 for a channel not known.
  int predicted(int64_t channel, Clock::time_point now) const;
  bool backlog(int64_t channel) const;
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double rate = 0;
    double burst = 1;         // tokens a full bucket holds: one second's worth, at least 1
    Clock::time_point tat{};  // the bucket's theoretical arrival time, on this clock
    bool backlog = false;     // jobs were handed back, or every token taken ahead was used
    int ahead = 0;            // tokens taken ahead for the coming claim
    int batch() const;        // tokens worth a claim: a twentieth of a second's, at least 1
  };
  static int Tokens(const Bucket& b, Clock::time_point now);
  void Record(const TokenGrant& grant, Clock::time_point now);

  std::unordered_map<int64_t, Bucket> buckets_;
};

}  // namespace bulkhead
