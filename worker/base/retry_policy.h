// RetryPolicy: how long a job waits before its next attempt after a failed one.
//
// A tier's schedule is a list of delays: the delay after the first failed attempt, after the
// second, and so on; past its end the last delay repeats. Jitter spreads each delay uniformly
// over [d·(1−j), d·(1+j)] so that a burst of jobs that failed together (a provider's outage)
// does not come back together and knock the provider over again. The caller supplies the
// random point in [0, 1): the policy holds no generator and no clock, so tests step it.
//
// The default schedule follows the Standard Webhooks retry guidance, cut off where
// bulkhead.jobs.max_attempts (DEFAULT 8) ends it: 8 attempts, 7 waits —
//
//   after attempt   1     2      3       4     5     6      7      (8th fails: discarded)
//   waits           5 s   5 min  30 min  2 h   5 h   10 h   10 h
//   retried at      5 s   5m05s  35m05s  2h35  7h35  17h35  27h35  after the first failure
//
// The trade-off in numbers: a receiver may be down for ≈ 27.6 h (99,305 s of waiting, ±10 %
// with the default jitter of 0.1) before a job is discarded, and each job costs a dead endpoint
// at most 8 requests over that span. The guidance's full table runs 10 attempts over ≈ 75.6 h:
// 2.7 times as long for a dead channel's rows to stay in the table, for 2 more tries. A
// receiver that recovers is served at its jobs' next attempt, so the delay in force is the
// worst lateness: at most 5 min late after an outage (counted from a job's first failure)
// shorter than 5 min, 30 min after one shorter than 35 min, 2 h after one shorter than
// 2 h 35 min, and up to 10 h in the tail.
//
// Immutable after construction; safe to call from any thread.
#pragma once

#include <array>
#include <chrono>
#include <vector>

namespace bulkhead {

// 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h: see the header comment.
inline constexpr std::array<std::chrono::milliseconds, 7> kDefaultRetryDelays = {
    std::chrono::seconds(5), std::chrono::minutes(5), std::chrono::minutes(30),
    std::chrono::hours(2),   std::chrono::hours(5),   std::chrono::hours(10),
    std::chrono::hours(10)};

// ±10 %: a burst that failed at one instant comes back spread over 20 % of the delay.
inline constexpr double kDefaultRetryJitter = 0.1;

class RetryPolicy {
 public:
  // `delays` must be non-empty with every delay positive, and `jitter` within [0, 1]
  // (TierOptions::Validate() guarantees both for a tier's file); throws std::invalid_argument
  // otherwise, a programming error.
  RetryPolicy(std::vector<std::chrono::milliseconds> delays, double jitter);

  // The wait after `failed_attempt` (1-based: attempt 1 failed → delays[0]; past the schedule,
  // the last delay). `unit_random` in [0, 1) picks the point within the jitter band: 0 gives
  // d·(1−j), values towards 1 give towards d·(1+j), 0.5 gives d; rounded to the nearest
  // millisecond, and never less than 1 ms. Values outside [0, 1) (and NaN, as 0) are clamped,
  // and a failed_attempt below 1 counts as 1.
  std::chrono::milliseconds NextDelay(int failed_attempt, double unit_random) const;

  const std::vector<std::chrono::milliseconds>& delays() const { return delays_; }
  double jitter() const { return jitter_; }

 private:
  // Constant after construction
  const std::vector<std::chrono::milliseconds> delays_;
  const double jitter_;
};

}  // namespace bulkhead
