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
// The race, and how it closes. An enqueue whose trigger looked before the mark committed sends
// nothing; the runner must find its job itself:
//   - committed before the mark: the claim right after marking (Marked() asks for it) sees it;
//   - committing while the mark commits (its trigger looked, its flush had not ended): the
//     recheck, one claim kRecheck after marking, sees it, and past that the fallback poll.
// A mark can vanish without a notification: a crash empties the unlogged table, and the
// leader deletes the marks of a node whose lease lapsed. The runner calls Lost() after any
// database error and any lapse of its lease, and marks itself again before its next wait; and
// each fallback poll of a marked runner writes the mark again (a no-op when it is there).
//
// Write() and Delete() (at stop) run ClaimStore::MarkAsleep and MarkAwake on the runner's
// connection; a failure is logged and resets the connection. The rest is pure logic.
//
// Not thread-safe: the queue runner's thread alone owns it (and its connection). Time is passed
// in, except to Write(), which reads the clock when the mark has committed.
#pragma once

#include <chrono>
#include <string>

#include "claim_store.h"
#include "runner_store.h"

namespace bulkhead {

class SleepMark {
 public:
  using Clock = std::chrono::steady_clock;

  // The mark of `node`'s runner of `queue`.
  SleepMark(std::string queue, std::string node)
      : queue_(std::move(queue)), node_(std::move(node)) {}

  // Writes the mark (Marked(), or Failed() if the database refused). Waiting unmarked costs a
  // new job the fallback poll at worst; the runner's next claim reconnects.
  void Write(RunnerStore& store);
  // Deletes the mark (Unmarked()), when the runner stops. On failure it stays: a mark left
  // behind costs one enqueue a notification, or the leader deletes it when the node's lease
  // lapses.
  void Delete(RunnerStore& store);
  // Long enough for an enqueue's commit to end after its trigger looked (a flush, a
  // synchronous standby's round trip), short enough to stay below the pick-up targets.
  static constexpr std::chrono::milliseconds kRecheck{20};

  // Whether the runner must write its mark before it waits: not after a failed attempt until a
  // claim has succeeded (the database may be down; the claim backs off, the mark need not).
  bool NeedsMark() const { return !marked_ && !failed_; }
  // Writing the mark failed.
  void Failed() { failed_ = true; }
  // The mark committed at `now`. Written anew (not rewritten by the poll): claim again at
  // once, and once more at recheck_at().
  void Marked(Clock::time_point now) {
    if (!marked_) recheck_at_ = now + kRecheck;
    marked_ = true;
  }
  // When the recheck claim is due; time_point::max() when none is.
  Clock::time_point recheck_at() const { return recheck_at_; }
  // A claim started at `started` succeeded; one started at or after recheck_at() was the
  // recheck.
  void Claimed(Clock::time_point started) {
    failed_ = false;
    if (started >= recheck_at_) recheck_at_ = Clock::time_point::max();
  }

  // An enqueue notified the runner: the commit that sent it took the mark (or a release of an
  // ordering key sent it and the mark may still be there; writing it again is a no-op).
  void Notified() { Unmarked(); }
  // The mark is deleted, or may be gone: write it again before the next wait.
  void Unmarked() {
    marked_ = false;
    recheck_at_ = Clock::time_point::max();
  }
  void Lost() { Unmarked(); }

  bool marked() const { return marked_; }

 private:
  const std::string queue_;
  const std::string node_;
  bool marked_ = false;
  bool failed_ = false;
  Clock::time_point recheck_at_ = Clock::time_point::max();
};

}  // namespace bulkhead
