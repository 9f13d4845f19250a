// SleepMark: when a queue runner writes and deletes its row in bulkhead.sleepers, the mark that
// makes enqueues of its queue notify it (ADR 0019, migration 0010).
//
// An enqueuing transaction notifies at COMMIT only if a runner of its queue has a row there, and
// the first such commit deletes the row as it notifies (migration 0014, ADR 0022). So a runner
// marks itself asleep when it is about to wait with free slots and its mark is not there, and
// one sleep costs the application one notification: the commits after it find no mark and
// share no lock. A runner that finds work by itself leaves its mark for the next enqueue to
// take; it never deletes it while it runs, so nothing it writes waits for an application's
// commit (which may hold the row it takes). Notified() records that the mark was taken.
//
// The race, and how it closes. An enqueue notifies only while the wake-up gate is open, and
// reads the gate at its INSERT (migration 0027); so the runner opens the gate after its mark
// committed (bulkhead.fell_asleep()) and finds by itself the jobs of enqueues that could not
// notify it:
//   - committed before the mark: the claim right after marking (Marked() asks for it) sees it;
//   - inserted before the gate opened and committed after that claim: a transaction running when
//     the gate opened, which the runner's SleepHorizon watches; it claims again when one of them
//     ends (Look()), and past the horizon's looks the fallback poll finds it.
// A mark can vanish without a notification: a crash empties the unlogged table, and the
// leader deletes the marks of a node whose lease lapsed. The runner calls Lost() after any
// database error and any lapse of its lease, and marks itself again before its next wait; and
// each fallback poll of a marked runner writes the mark again (a no-op when it is there) and
// opens the gate again (which a commit that closed it and then rolled back may have left shut).
// Write() runs ClaimStore::MarkAsleep, then FellAsleep; Look() RunningTransactions; Delete() (at
// stop) MarkAwake: on the runner's connection. A failure is logged and resets the connection.
// The rest is pure logic.
//
// Not thread-safe: the queue runner's thread alone owns it (and its connection). Time is passed
// in, except to Write(), which reads the clock when the mark has committed.
#pragma once

#include <chrono>
#include <string>

#include "claim_store.h"
#include "runner_store.h"
#include "sleep_horizon.h"

namespace bulkhead {

class SleepMark {
 public:
  using Clock = std::chrono::steady_clock;

  // The mark of `node`'s runner of `queue`.
  SleepMark(std::string queue, std::string node)
      : queue_(std::move(queue)), node_(std::move(node)) {}

  // Writes the mark and opens the wake-up gate (Marked(), or Failed() if the database refused).
  // Waiting unmarked costs a new job the fallback poll at worst; the runner's next claim
  // reconnects.
  void Write(RunnerStore& store);
  // Deletes the mark (Unmarked()), when the runner stops. On failure it stays: a mark left
  // behind costs one enqueue a notification, or the leader deletes it when the node's lease
  // lapses.
  void Delete(RunnerStore& store);
  // Reads the transactions running and tells the horizon: true when the runner must claim (one
  // it watched has ended, or the read failed and the claim is to reconnect).
  bool Look(RunnerStore& store, Clock::time_point now);

  // Whether the runner must write its mark before it waits: not after a failed attempt until a
  // claim has succeeded (the database may be down; the claim backs off, the mark need not).
  bool NeedsMark() const { return !marked_ && !failed_; }
  // Writing the mark failed.
  void Failed() { failed_ = true; }
  // The mark committed and the gate opened at `now`: claim again at once (the runner does), and
  // watch what was running then. Written again by the poll, it watches anew.
  void Marked(Clock::time_point now, const SleepStart& start) {
    marked_ = true;
    horizon_.Start(start, now);
  }
  // When the runner must Look(); time_point::max() when it watches nothing.
  Clock::time_point look_at() const { return horizon_.next_look(); }
  // A claim succeeded.
  void Claimed() { failed_ = false; }

  // An enqueue notified the runner: the commit that sent it took the mark (or a release of an
  // ordering key sent it and the mark may still be there; writing it again is a no-op). The
  // runner claims now and writes its mark again before its next wait, watching anew.
  void Notified() { Unmarked(); }
  // The mark is deleted, or may be gone: write it again before the next wait.
  void Unmarked() {
    marked_ = false;
    horizon_.Stop();
  }
  void Lost() { Unmarked(); }

  bool marked() const { return marked_; }

 private:
  const std::string queue_;
  const std::string node_;
  bool marked_ = false;
  bool failed_ = false;
  SleepHorizon horizon_;
};

}  // namespace bulkhead
