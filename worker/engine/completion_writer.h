// CompletionWriter: writes attempt results to Postgres in batches, on a thread of its own.
//
// Queue runners hand it results as their requests finish; it writes them with one set-based
// statement (CompletionStore::Record) per batch: when `batch_size` results are waiting, or
// `flush_ms` after the oldest waiting one arrived, whichever comes first. At 10,000 deliveries
// a second and the defaults (500, 5 ms) a batch holds about 50 results when the flush comes
// first: some 200 statements a second instead of 10,000 transactions; the price is up to 5 ms
// before a delivered job reads `completed`.
//
// Losing the database loses no result while the node runs: a failed write keeps the batch and
// retries with backoff (ReconnectBackoff: 100 ms doubling to 5 s, jittered) on a new connection.
// Only when the writer is destroyed during an outage does it give up, logging how many results it
// dropped; those jobs stay `executing` and return through lease rescue, so delivery stays
// at-least-once.
//
// Bounded: Saturated() turns true at 20 batches waiting (10,000 results at the defaults), and
// queue runners stop claiming until it clears, so a slow or failing database holds the node's
// memory flat instead of letting results pile up.
//
// Threads: Add() and Drain() from any thread; the writer thread owns the connection.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "metrics.h"
#include "store_types.h"

namespace bulkhead {

class CompletionWriter {
 public:
  struct Options {
    std::string database;  // libpq connection string
    std::string node;      // the fence: results are written for this node's claims only
    int batch_size = 500;
    std::chrono::milliseconds flush_interval{5};
    Metrics* metrics = nullptr;  // bulkhead_completion_batch_size; nullptr records nothing
  };

  explicit CompletionWriter(Options options);
  // Writes what is waiting (as Drain) and stops the thread.
  ~CompletionWriter();
  CompletionWriter(const CompletionWriter&) = delete;
  CompletionWriter& operator=(const CompletionWriter&) = delete;

  void Add(AttemptResult result);

  // Blocks until every result added before the call is written, or `timeout` passes.
  // Returns whether everything was written.
  bool Drain(std::chrono::milliseconds timeout);

  // Results written so far (for the node's progress log and tests).
  uint64_t written() const;

  // Appends the jobs whose results wait here or are being written: executing in the database
  // until their batch commits (the node's stranded-job sweep must not return them).
  void HeldJobs(std::vector<int64_t>* jobs) const;

  // Whether so many results wait that new claims should wait too.
  bool Saturated() const;

 private:
  void Run();

  // Constant after construction.
  const Options options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;     // the writer waits here for results or stop
  std::condition_variable drained_;  // Drain() waits here
  // Guarded by mu_.
  std::deque<AttemptResult> pending_;
  std::vector<int64_t> writing_;  // the jobs of the batch being written
  std::chrono::steady_clock::time_point oldest_pending_;
  uint64_t added_ = 0;
  uint64_t written_ = 0;  // results handed to Record(), stale ones included
  bool stopping_ = false;

  std::thread thread_;  // started last, joined first
};

}  // namespace bulkhead
