// CapLedger: what one tier's runner has in flight per channel and per tenant on this node,
// against the per-node caps (docs/caps.md).
//
// The caps. With `workers` slots, a channel may hold channel_share × workers of them and a
// tenant tenant_share × workers (both default 0.5: 100 of the default tier's 200), rounded down,
// at least 1 and, unless the share is 1 (no cap), at most workers − 1, so that one channel or
// tenant never takes the last slot — the rule of seed 000 (a recipient gets at most
// min(8, global − 1) slots). The tenant cap is what stops a tenant with a hundred channels on
// one dead endpoint (seed 004) from taking every worker: each channel stays under its own cap,
// yet together they would not.
//
// Caps are per node. With N nodes serving a tier, a channel may hold N × its cap fleet-wide:
// counting in the database would put a hot row per channel on every claim's and every result's
// path, and what the caps protect — a node's workers, so that other tenants on that node keep
// flowing — is a per-node resource. The breaker is what is fleet-wide.
//
// Slow start. A channel may have in flight only its window, at most its cap: kFirstWindow (10)
// when this node has no record of it, one more with each attempt that succeeds quickly, back to
// the first after a failure. A channel that answers fast grows to its cap within its first
// hundred answers (milliseconds at a fast endpoint, a few round trips at a slow one); one that
// dies takes at most 10 slots in its first wave, not its cap of 100 (the default tier's 200
// workers): the dead_channel scenario's dead endpoint got 101 requests without it, and the
// seed's bar is under 15. The window bounds what one claim takes of a channel (Claim's $10,
// $11); reaching it is not reaching the cap. Off when channel_share is 1 (no caps).
//
// Lending (ADR 0013). The caps bind while anyone else has due work; slots nobody else wants
// are lent. A claim first takes everything the caps let through, then may take more jobs of
// the channels the caps held back, up to its free slots less the reserve (the tier's
// reserve_share of the workers, at least 1), which stay free for everyone else's next jobs.
// Only a channel that has answered quickly since its last failure (its window grew) is lent
// to, and only up to its window, which may then grow past the cap, up to the workers less the
// reserve: a channel that never answered (forty hanging ones of one tenant) or is failing
// borrows nothing, and a channel that dies holds at most the window its quick answers earned.
// Holds() still answers for the caps: a borrower's ending job wakes the runner, whose next
// claim gives that slot to anyone else first. Lending needs slow start, so it is off with
// channel_share 1; reserve_share 1 turns it off too.
//
// Failing channels. A channel whose last attempt failed (a timeout, a connection error, a 5xx,
// a 429) or that has a request stalled (QueueRunner) gets a cap of 1 until an attempt of it
// succeeds: its cap is for a channel that answers, and a failing one would spend it on
// requests that hold slots and fail. Without this, each wave of a misbehaving channel's jobs
// takes up to its full cap of slots before failing again; with several misbehaving at once
// (the hostile load scenario) those waves starve everyone else until their breakers open. A
// busy healthy channel with an occasional error drops to 1 only until its next success. Any
// success clears the mark, a slow one too: an endpoint that always answers 200 slower than
// `stalled_after_ms` stalls on every request, and when only a quick success cleared the mark
// it was served one request at a time forever (a 1.5 s receiver: 0.67 deliveries/s a node).
// Only a quick success grows the window, so such an endpoint is served up to the first window
// (10) at once. The mark is forgotten 60 s after the channel's last activity.
//
// Memory, and what a claim carries (issue 34). A channel with jobs in flight has an entry, so
// those are at most the tier's workers. A channel with nothing in flight keeps one only to
// remember a grown window (10 s) or a failing mark (60 s), and of those idle entries the ledger
// keeps the most recently idle, at most max(workers, kIdleFloor): a channel forgotten sooner
// starts from the first window and, if it was failing, from the channel cap — the breaker still
// counts its failures. Every entry goes into every claim's arrays (Limits), so a claim carries
// at most twice the workers' worth of channels however many the node has served: with 60,000
// tenants of one delivery each, it had carried every channel that answered in the last 10 s,
// 14 ms of a claim spent unnesting them before any row was read.
//
// Not thread-safe: the runner guards it with its own mutex. Time is passed in.
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class CapLedger {
 public:
  using Clock = std::chrono::steady_clock;

  struct Caps {
    int channel = 1;
    int tenant = 1;
    // Slow start: a channel's window when it has no record here (0: none, the channel cap).
    int first_window = 0;
    // Lending: the tier's slots, and how many of them a claim leaves free when it lends
    // beyond the caps (0: no lending).
    int workers = 0;
    int reserve = 0;
  };
  // The caps for a tier of `workers` slots and the two shares (rules above); with caps on
  // (channel_share below 1), slow start from kFirstWindow and lending with a reserve of
  // ceil(reserve_share × workers), at least 1 (reserve_share 1: no lending).
  static Caps For(int workers, double channel_share, double tenant_share,
                  double reserve_share = kReserveShare);
  // A channel's first window: the old default tier's channel cap, and under the seed's bar of
  // 15 requests to a dead endpoint in the first wave.
  static constexpr int kFirstWindow = 10;
  // The default share of a tier's workers that lending never takes (ADR 0013, the tier key
  // reserve_share): 20 of the default tier's 200, the old default tier's whole width, for
  // everyone else's next jobs while a lone tenant borrows the rest.
  static constexpr double kReserveShare = 0.1;

  explicit CapLedger(Caps caps) : caps_(caps) {}
  void SetCaps(Caps caps) { caps_ = caps; }
  const Caps& caps() const { return caps_; }

  // Which cap a new job in flight made its channel or tenant reach.
  struct Reached {
    bool channel = false;
    bool tenant = false;
  };
  // A job of `channel` (of `tenant`) is now in flight.
  Reached Add(int64_t channel, int64_t tenant);
  // Whether `channel` is at its window or cap, or `tenant` at its cap: the caps may be holding
  // jobs of it back, and when one of its jobs ends a slot opens for them (the runner claims
  // again). Read before the job's answer grows or shrinks the channel's window.
  bool Holds(int64_t channel, int64_t tenant) const;
  // A job of `channel` (of `tenant`) ended.
  void Remove(int64_t channel, int64_t tenant);

  // An attempt of `channel` failed, or one stalled: its cap is 1 until Succeeded() or
  // Answered().
  void Failed(int64_t channel, Clock::time_point now);
  // An attempt of `channel` succeeded quickly: it is no longer failing, and its window grows by
  // one (up to its cap).
  void Succeeded(int64_t channel);
  // An attempt of `channel` succeeded, but slower than a quick answer: it is no longer failing,
  // and its window stays as it is (the first window after a failure).
  void Answered(int64_t channel);
  bool failing(int64_t channel) const;

  // Drops failing channels idle for 60 s; a channel idle for 10 s starts from the first window
  // again.
  void Forget(Clock::time_point now);

  // How many idle entries (nothing in flight) the ledger keeps at least, whatever the workers.
  static constexpr size_t kIdleFloor = 64;

  // Channels (with their tenant) and tenants that reached their cap (QueueRunner::Dispatch).
  struct AtCap {
    std::vector<std::pair<int64_t, int64_t>> channels;  // channel, its tenant
    std::vector<int64_t> tenants;
  };

  // What the next claim of up to `free` jobs must respect: counts in flight, windows, the caps,
  // and how much it may lend (free less the reserve).
  ClaimLimits Limits(int free) const;
  // Makes the claim of `limits` leave `channel` out, as a channel at its cap, with nothing to
  // lend it (the runner's channels whose open is pending, QueueRunner::handed_back_open_).
  static void LeaveOut(ClaimLimits& limits, int64_t channel);
  // Makes the claim of `limits` take at most `room` more jobs of `channel` (0: none, its rows
  // left out), and lend it nothing (the rate limits' RateGate). Never widens its window.
  static void Narrow(ClaimLimits& limits, int64_t channel, int room);

  int in_flight(int64_t channel) const;
  int tenant_in_flight(int64_t tenant) const;
  // Channels and tenants with an entry (memory bound checks).
  size_t tracked() const;

 private:
  struct Count {
    int n = 0;
    int window = 0;                  // slow start: 0 is the first window
    Clock::time_point idle_since{};  // when Forget() first saw it at 0 in flight; epoch: busy
    bool failing = false;
    Clock::time_point failed_at{};
    // Channels only: its place in idle_ while it has nothing in flight (idle_.end(): busy).
    std::list<int64_t>::iterator idle;
  };
  using Channels = std::unordered_map<int64_t, Count>;

  // A new channel entry, busy (not in idle_).
  Count& Track(int64_t channel);
  // The entry has nothing in flight: kept (idle) if it remembers something, else erased.
  void Settle(Channels::iterator it);
  Channels::iterator Erase(Channels::iterator it);
  size_t IdleMax() const;
  // The channel's cap: 1 while failing, else the tier's. What it may have in flight now: its
  // window, at most that cap — or, lent slots included, at most what lending leaves.
  int ChannelCap(const Count& c) const { return c.failing ? 1 : caps_.channel; }
  int WindowMax() const;
  int Window(const Count& c) const;

  Caps caps_;
  Channels channels_;
  std::unordered_map<int64_t, Count> tenants_;
  // Channels with an entry and nothing in flight, the most recently idle first.
  std::list<int64_t> idle_;
};

}  // namespace bulkhead
