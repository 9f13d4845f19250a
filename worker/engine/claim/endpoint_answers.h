// EndpointAnswers: what a queue runner does about the answers that concern a whole channel,
// not only the job that got them (the Verdict says which: Verdict::gone, snooze_channel).
//
// - 410 Gone disables the channel: ClaimStore::DisableGone (channel disabled and paused, its
//   backlog and the answering job parked, in one statement) instead of handing the result to
//   the writer. A disable that fails (the database is away) is tried again after 500 ms, on a
//   new connection, up to 5 times; then, or when the runner is ending, the attempt is written
//   as an ordinary failure instead (its fallback), so the job is not left executing.
// - A 429 or 503 with a Retry-After slows its channel down: the channel's waiting jobs are
//   pushed to no earlier than the asked time (ClaimStore::SnoozeChannel), in one statement, at
//   most once a second per channel — a throttled channel answering 429 to every request in
//   flight costs one statement a second, not one per answer. A later, longer ask within the
//   second waits for the next; the latest ask wins.
//
// Jobs pushed later — by the channel's snooze, and answering jobs whose own wait a Retry-After
// lengthened (CountSnoozed) — are counted (bulkhead_snoozed_total) and logged as one summary
// a minute (deliveries_snoozed). Each disabled channel is logged on its own line at warn: rare,
// and each one needs an operator.
//
// Threads: the sender's I/O thread queues (Gone, Snooze, CountSnoozed); the runner thread
// applies, between claims, on the runner's store connection (Apply, Close). Gone(), Snooze(),
// CountSnoozed(), due() and the counters may be called from any thread (one mutex, never held
// during a statement). Apply() and Close() only on the thread that owns `store` (the runner
// thread). `store` and `writer` must outlive this object.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "claim_store.h"
#include "completion_writer.h"
#include "logger.h"
#include "metrics.h"
#include "runner_store.h"

namespace bulkhead {

class EndpointAnswers {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::string tier;  // for logs
    std::string node;  // the fence of DisableGone: only this node's claims are parked
    const Metrics::Tier* metrics = nullptr;  // nullptr: record nothing
  };

  EndpointAnswers(Options options, RunnerStore& store, CompletionWriter& writer);
  EndpointAnswers(const EndpointAnswers&) = delete;
  EndpointAnswers& operator=(const EndpointAnswers&) = delete;

  // A 410 Gone answered `answer`'s attempt: its channel is to be disabled. `fallback` is the
  // attempt's ordinary result, written instead if the disable cannot run. Returns false once
  // Close() has run: the caller writes `fallback` itself.
  bool Gone(bulkhead::GoneAnswer answer, AttemptResult fallback);

  // A Retry-After asked `channel`'s waiting jobs to wait until `until`.
  void Snooze(int64_t channel, Clock::time_point until);

  // A Retry-After lengthened an answering job's own wait.
  void CountSnoozed();

  // Appends the jobs whose 410 is queued or being applied: executing in the database, and
  // held here until the disable commits or their fallback is in the writer's hands.
  void HeldJobs(std::vector<int64_t>* jobs) const;

  // When Apply() should run next; time_point::max() when nothing is queued.
  Clock::time_point due() const;

  // Runs the queued disables and the snoozes that are due (the others wait for their
  // channel's second to pass; due() says when).
  void Apply(Clock::time_point now) { Run(now, /*last=*/false); }

  // The last Apply: the runner is ending. A disable that fails is not kept for later but
  // written as its fallback at once, and Gone() refuses from now on.
  void Close(Clock::time_point now) { Run(now, /*last=*/true); }

  // Jobs a Retry-After pushed later, and channels a 410 disabled (by this node), since start.
  uint64_t snoozed() const { return snoozed_.load(); }
  uint64_t channels_gone() const { return channels_gone_.load(); }

 private:
  void Run(Clock::time_point now, bool last);

  // Constant after construction.
  const Options options_;
  RunnerStore& store_;
  CompletionWriter& writer_;

  mutable std::mutex mu_;
  // Guarded by mu_.
  struct PendingGone {
    bulkhead::GoneAnswer answer;
    AttemptResult fallback;
    int tries = 0;
  };
  std::vector<PendingGone> gone_;
  std::vector<int64_t> applying_;  // the jobs of the gone_ that Run() took and is applying
  // Channels a Retry-After asked to wait, until when (the latest ask wins).
  std::unordered_map<int64_t, Clock::time_point> snoozes_;
  bool queued_ = false;  // Gone or Snooze queued something since Run took the queue
  Clock::time_point due_ = Clock::time_point::max();
  bool closed_ = false;

  // Only touched by the thread that owns the store: when each channel's waiting jobs were
  // last snoozed, at most once a second each.
  std::unordered_map<int64_t, Clock::time_point> snoozed_at_;

  std::atomic<uint64_t> snoozed_{0};
  std::atomic<uint64_t> channels_gone_{0};
  RepeatedEvent snoozed_log_;  // safe for concurrent Add()
};

}  // namespace bulkhead
