// CompletionWriter: writes attempt results to Postgres in batches, on a thread of its own.
//
// Queue runners hand it results as their requests finish; it writes them with one set-based
// statement (CompletionStore::Record) per batch: when `batch_size` results are waiting, or
// `flush_ms` after the oldest waiting one arrived, whichever comes first. At 10,000 deliveries
// a second and the defaults (500, 5 ms) a batch holds about 50 results when the flush comes
// first: some 200 statements a second instead of 10,000 transactions; the price is up to 5 ms
// before a delivered job reads `completed`.
//
// Losing the database loses no result while the node runs: a write that fails for the
// database's sake (store_failure.h: the connection lost, a read-only standby, privileges, a
// timeout) keeps the batch and retries with backoff (ReconnectBackoff: 100 ms doubling to 5 s,
// jittered) on a new connection. Only when the writer is destroyed during an outage does it give
// up, logging how many results it dropped; those jobs stay `executing` and return through lease
// rescue, so delivery stays at-least-once.
//
// Poison: a write that fails for the data's sake (a text PostgreSQL cannot hold, a value out of
// range, a text that is not UTF-8 and cannot even be encoded) would fail the same way for ever,
// so the batch is halved and each half written, again and again, until each offending result is
// alone: about 2 × log2(500) ≈ 18 statements for one bad result in a full batch, once; the good
// results around it are written as usual. Each one left alone is quarantined: logged once
// (completion_result_quarantined, with its job, attempt, SQLSTATE and error) and counted
// (bulkhead_quarantined_total{writer="completion"}), then written again with its error text
// replaced by a storable one (StorableText, with a note that the original could not be
// stored), so its job still gets its retry or discard (outcome "recorded"). Only if even that
// fails is it dropped (outcome "dropped"): its job stays `executing` under this node until it is
// handed back or its lease is rescued.
//
// Progress: progress() says whether results have waited `stalled_after` (default: a thousand
// flush intervals, at least 5 s) without any being written; the node's /readyz reports it, since
// a writer that cannot write also stops the claims (below) while the heartbeat may still pass.
//
// Bounded: Saturated() turns true once one batch's worth of results (batch_size, 500 at the
// defaults) is unwritten, waiting or being written, and queue runners stop claiming until it
// clears. So a slow or failing database holds the node's memory flat, and a crash (kill -9)
// repeats at most batch_size delivered results plus the requests in flight: their jobs are
// still `executing` and go out again after rescue (docs/fleet.md). A healthy writer is far from
// the bound: at 7,000 deliveries a second with the 5 ms flush, a batch holds about 50.
//
// The database is behind a ResultRecorder (result_recorder.h): the node's writes with
// CompletionStore on a connection of its own; a test of the logic above may pass one that
// records in memory.
//
// Threads: Add(), Drain(), progress() and the counters from any thread; the writer thread (a
// ServiceThread, started by the constructor and joined by the destructor) owns the recorder and
// its connection.
// The quarantine is PoisonQuarantine's, shared with the breaker keeper.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "metrics.h"
#include "poison_quarantine.h"
#include "result_recorder.h"
#include "service_thread.h"
#include "store_types.h"

namespace bulkhead {

class CompletionWriter {
 public:
  struct Options {
    std::string database;  // libpq connection string (unused when a recorder is passed)
    std::string node;      // the fence: results are written for this node's claims only
    int batch_size = 500;
    std::chrono::milliseconds flush_interval{5};
    // bulkhead_completion_batch_size, bulkhead_quarantined_total; nullptr records nothing
    Metrics* metrics = nullptr;
    // Results waiting this long with none written is "not making progress"; 0 means
    // DefaultStalledAfter(flush_interval).
    std::chrono::milliseconds stalled_after{0};
    Pooling pooling = Pooling::kSession;  // kTransaction: `database` is a transaction pooler
  };

  // A thousand flush intervals, and no less than 5 s. A healthy writer writes a result within
  // one flush interval plus a statement (a few ms), so 1000 × flush is far past any healthy
  // batch; the 5 s floor rides out a slow statement, a checkpoint and the first reconnects of a
  // database blip (backoff 100 ms doubling to 5 s) without flapping readiness.
  static std::chrono::milliseconds DefaultStalledAfter(std::chrono::milliseconds flush_interval);

  // Whether the writer keeps up.
  struct Progress {
    size_t waiting = 0;  // results added and not yet written (or quarantined)
    // Since the last write, or since the oldest waiting result arrived when that is later.
    std::chrono::milliseconds since_write{0};
    bool stalled = false;  // waiting > 0 and since_write >= stalled_after
    // "completion writer: 120 results waiting, none written for 12 s", for /readyz.
    std::string Describe() const;
  };

  // Writes with StoreResultRecorder on `options.database`: the node's writer.
  explicit CompletionWriter(Options options);
  // Writes with `recorder` (a test's, in memory); `options.database` is not used.
  CompletionWriter(Options options, std::unique_ptr<ResultRecorder> recorder);
  // Writes what is waiting (as Drain) and stops the thread.
  ~CompletionWriter();
  CompletionWriter(const CompletionWriter&) = delete;
  CompletionWriter& operator=(const CompletionWriter&) = delete;

  void Add(AttemptResult result);

  // Blocks until every result added before the call is written, or `timeout` passes.
  // Returns whether everything was written.
  bool Drain(std::chrono::milliseconds timeout);

  // Results written so far, quarantined ones included (for the node's progress log and tests).
  uint64_t written() const;

  // Appends the jobs whose results wait here or are being written: executing in the database
  // until their batch commits (the node's stranded-job sweep must not return them).
  void HeldJobs(std::vector<int64_t>* jobs) const;

  // Results quarantined so far (recorded with their text replaced, or dropped).
  uint64_t quarantined() const { return quarantine_.count(); }

  // How many results wait and for how long none was written; stalled after `stalled_after`
  // (the node's /readyz reports it).
  Progress progress() const;

  // Whether so many results are unwritten (a batch's worth) that new claims should wait.
  bool Saturated() const;

 private:
  void Run();
  // Writes batch[begin, end) as one statement; on a data failure, halves it and writes each
  // half, down to single results, which are quarantined (quarantine_: recorded with a storable
  // error text if that can be written). `handled` (results written or quarantined) always grows
  // over a prefix of the batch, the left half going first. Throws on a failure that is not the
  // data's; the caller keeps batch[handled, end).
  void Write(const std::vector<AttemptResult>& batch, size_t begin, size_t end, size_t& handled);

  // Constant after construction.
  const Options options_;
  const std::chrono::milliseconds stalled_after_;

  // Counts from any thread; Take() on the writer thread.
  PoisonQuarantine quarantine_;

  // Only touched by the writer thread (after construction).
  const std::unique_ptr<ResultRecorder> recorder_;

  mutable std::mutex mu_;  // also service_'s: the writer waits under it for results or stop
  std::condition_variable drained_;  // Drain() waits here
  // Guarded by mu_.
  std::deque<AttemptResult> pending_;
  std::vector<int64_t> writing_;  // the jobs of the batch being written
  std::chrono::steady_clock::time_point oldest_pending_;
  uint64_t added_ = 0;
  uint64_t written_ = 0;  // results handed to Record(), stale and quarantined ones included
  // The last write, or the Add() that found nothing waiting: what progress() measures from.
  std::chrono::steady_clock::time_point last_progress_;

  ServiceThread service_{mu_};  // the writer thread: started last, joined first
};

}  // namespace bulkhead
