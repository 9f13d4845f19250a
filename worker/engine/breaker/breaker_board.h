// BreakerBoard: one tier's in-memory view, on this node, of its channels' breakers — the
// counting that decides when this node asks Postgres to open a channel's breaker.
//
// What counts (docs/breaker.md), per channel, in the order attempts finish: each
// attempt's BreakerSignal, decided once per answer by the verdict (verdict.h says which answer
// is which, and why). A failure (timeout, no connection, 5xx, 429, an SSRF refusal) counts; a
// success (2xx) resets the count — the endpoint works, and earlier failures were a blip;
// neither (3xx, 4xx other than 429) leaves it as it is. One rule is the board's own:
// - A slow call: an attempt still in flight after `slow_call` counts as a failure for as long
//   as it stays in flight. This is what opens the breaker of an endpoint that hangs before its
//   requests time out: with the defaults (5, 2 s) a channel with five requests hanging trips
//   two seconds after they were sent, not after the 10 s request timeout. A slow call that then
//   succeeds is a success.
// When failures in a row plus slow calls in flight reach `failure_threshold` — or slow calls
// alone reach `slow_quorum`, every attempt the channel may have in flight here — the board
// returns a Trip once, and from then on treats the channel as open — it counts nothing for it
// — until it learns that the breaker closed (Learn, or Resync from the database).
//
// Counting is per node: each node counts what it sent. The verdict is shared — the first node
// to trip opens the breaker in Postgres for the whole fleet — so with N nodes a failing
// channel costs at most N × failure_threshold attempts before it opens.
//
// Probes are not counted here: their answer moves the breaker directly (BreakerKeeper).
//
// Memory: one entry per channel with attempts in flight, failures, or an open breaker.
//
// Threads: every method may be called from any thread (one mutex; each call is a few map
// operations). Time is passed in, so tests drive it with a fake clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "verdict.h"  // BreakerSignal, ClassifyForBreaker

namespace bulkhead {

class BreakerBoard {
 public:
  using Clock = std::chrono::steady_clock;

  struct Settings {
    int failure_threshold = 5;
    std::chrono::milliseconds slow_call{2000};
    // Slow calls alone that trip the breaker: at most failure_threshold, and no more than a
    // channel can have in flight on this node (its cap). Without it, a tier whose channel cap
    // is below the threshold (the bulk tier: 2 of 5 workers) could never trip on slow calls.
    int slow_quorum = 5;
  };

  // The board's request to open a channel's breaker, with the reason for operators.
  struct Trip {
    int64_t channel = 0;
    std::string reason;
  };

  explicit BreakerBoard(Settings settings);

  // New settings (a reload); counts so far are kept.
  void SetSettings(Settings settings);

  // An attempt of `job` to `channel` was sent at `now`.
  void Started(int64_t channel, int64_t job, Clock::time_point now);

  // The attempt of `job` ended with `signal`; `detail` says how ("timeout: …", "HTTP 503").
  // Returns a Trip when this makes the channel reach its threshold.
  std::optional<Trip> Finished(int64_t channel, int64_t job, BreakerSignal signal,
                               const std::string& detail, Clock::time_point now);

  // Trips of channels whose slow calls in flight, with their failures, reach the threshold.
  std::vector<Trip> CheckSlow(Clock::time_point now);

  // The fleet's breaker of `channel` is now closed (true) or not (false): from NOTIFY.
  void Learn(int64_t channel, bool closed);

  // The full list of channels whose breaker is not closed: every other channel is closed.
  void Resync(const std::vector<int64_t>& not_closed);

  // Whether the board treats `channel` as open (it counts nothing for it).
  bool KnownOpen(int64_t channel) const;

  // Channels the board holds an entry for (memory bound checks).
  size_t tracked() const;

 private:
  struct Channel {
    bool open = false;  // tripped here, or learned not closed
    int failures = 0;   // in a row, since the last success
    std::string last_failure;
    std::unordered_map<int64_t, Clock::time_point> in_flight;  // job → sent at
  };

  // Forgets a channel with nothing to remember. Needs mu_.
  void Prune(std::unordered_map<int64_t, Channel>::iterator it);
  // Counts slow calls of `c` at `now`. Needs mu_.
  int SlowCalls(const Channel& c, Clock::time_point now) const;
  // Marks the channel open and builds the Trip. Needs mu_.
  Trip TripNow(int64_t id, Channel& c, int slow);

  mutable std::mutex mu_;
  // Guarded by mu_.
  Settings settings_;
  std::unordered_map<int64_t, Channel> channels_;
};

}  // namespace bulkhead
