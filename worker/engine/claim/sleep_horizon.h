// SleepHorizon: the transactions a sleeping runner waits out itself, because their enqueues
// could not notify it (migration 0027, ADR 0030).
//
// An enqueue's wake-up trigger runs only while the wake-up gate is open, and whether it is open
// is read when the job's row is inserted, not at COMMIT. So a transaction that inserted a job
// while the gate was closed, and commits after a runner fell asleep, notifies nobody. When the
// runner falls asleep (its mark committed, the gate opened: bulkhead.fell_asleep()) it learns
// the next transaction id and the transactions running. Every such enqueue has an id below that
// next id and had not committed when the runner claimed right after, so it is one of those
// running then. The runner claims again whenever one of them has ended since the last look, and
// stops looking when all have: a job such a transaction committed is claimed within one look's
// interval of its commit, not at the fallback poll.
//
// The watched ids: those `running` below the next id, plus every id from the snapshot's xmax up
// to the next id (assigned after the last transaction to end, so still running, but not listed
// until a later snapshot's xmax passes them). A look compares them with a new snapshot: an id
// below its xmax and not among its running has ended. A subtransaction's id is never listed, so
// it reads as ended the first time a snapshot's xmax passes it: one claim more, never one less.
//
// Looks come 2 ms after the start, then at twice the interval, at most kLongestInterval apart;
// the runner's fallback poll (which writes the mark and starts a new horizon) bounds the rest.
// A long transaction open elsewhere keeps the runner looking, about ten looks a second, each
// one snapshot read; the other transactions end within the first looks.
//
// Pure logic, time passed in. Not thread-safe: the queue runner's SleepMark owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class SleepHorizon {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kFirstInterval{2};
  static constexpr std::chrono::milliseconds kLongestInterval{100};

  // Watches the transactions of `start` (bulkhead.fell_asleep()), replacing any watched before.
  void Start(const SleepStart& start, Clock::time_point now);
  // Compares the watched transactions with `now_running`, read at `now`: true if one of them has
  // ended since the last look (claim, then). Schedules the next look, or stops when none is left.
  bool Look(const RunningXids& now_running, Clock::time_point now);
  void Stop();

  bool watching() const { return !listed_.empty() || unlisted_from_ < unlisted_to_; }
  // When the next look is due; time_point::max() when nothing is watched.
  Clock::time_point next_look() const { return watching() ? next_look_ : Clock::time_point::max(); }

 private:
  std::vector<int64_t> listed_;  // watched ids a snapshot listed as running, ascending
  int64_t unlisted_from_ = 0;    // [from, to): watched ids no snapshot has listed yet
  int64_t unlisted_to_ = 0;
  std::chrono::milliseconds interval_{kFirstInterval};
  Clock::time_point next_look_ = Clock::time_point::max();
};

}  // namespace bulkhead
