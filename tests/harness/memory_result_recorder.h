// MemoryResultRecorder: batches kept in memory instead of written, behind a ResultRecorder
// (worker/engine/record/result_recorder.h) that Recorder() hands to a CompletionWriter, for the
// tests of CompletionWriter's own logic: batching, flushing, retrying, halving a batch to find a
// poisoned result, the jobs held while a batch is being written. What the SQL does with a result is
// completion_writer_test's and the store's, against real PostgreSQL.
//
// It fails as the real one does, so that the writer classifies the failure as in production
// (store_failure.h): FailNext() throws pqxx::broken_connection (the database's: keep the batch,
// reset, back off), Refuse() a pqxx::data_exception with SQLSTATE 22021 (the data's: isolate
// the result and quarantine it). Hold() stops the next Record() until Release(), so a test can
// look at the writer while a batch is being written.
//
// Ownership: the test owns it and declares it before the writer; the writer owns the
// forwarding ResultRecorder, so the batches can still be read after the writer is destroyed
// (which writes what waits).
//
// Threads: Record() and Reset() on the writer thread; everything else from the test's. Its
// state is guarded by its own mutex. Waits take a timeout only so that a broken writer fails
// the test instead of hanging it; no test asserts how long anything took.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "result_recorder.h"

namespace bulkhead::testing {

class MemoryResultRecorder {
 public:
  // A ResultRecorder for a CompletionWriter, writing here; `this` must outlive it.
  std::unique_ptr<ResultRecorder> Recorder() { return std::make_unique<Forwarder>(*this); }

  int Record(const std::vector<AttemptResult>& results, const std::string& node) {
    std::unique_lock lock(mu_);
    ++calls_;
    if (hold_) {
      held_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !hold_; });
      held_ = false;
    }
    if (fail_next_ > 0) {
      --fail_next_;
      throw pqxx::broken_connection("server closed the connection unexpectedly");
    }
    for (const auto& result : results) {
      auto refused = refused_.find(result.id);
      if (refused != refused_.end() && result.error == refused->second) {
        throw pqxx::data_exception("invalid byte sequence for encoding \"UTF8\"", "Record",
                                   "22021");
      }
    }
    batches_.push_back(results);
    node_ = node;
    changed_.notify_all();
    return static_cast<int>(results.size());
  }

  void Reset() {
    std::lock_guard lock(mu_);
    ++resets_;
  }

  // The next `n` calls of Record() throw pqxx::broken_connection and record nothing.
  void FailNext(int n) {
    std::lock_guard lock(mu_);
    fail_next_ = n;
  }

  // Any batch holding `job`'s result with the error text `error` is refused for its data.
  void Refuse(int64_t job, std::string error) {
    std::lock_guard lock(mu_);
    refused_[job] = std::move(error);
  }

  // The next Record() waits, before it records or fails, until Release().
  void Hold() {
    std::lock_guard lock(mu_);
    hold_ = true;
  }
  void Release() {
    std::lock_guard lock(mu_);
    hold_ = false;
    changed_.notify_all();
  }
  // Whether a Record() is waiting in Hold() (within `timeout`).
  bool WaitUntilHeld(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return held_; });
  }

  // Whether `n` results in all have been recorded (within `timeout`).
  bool WaitForResults(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, timeout, [&] { return CountLocked() >= n; });
  }

  // The batches recorded, in order; refused and failed ones are not.
  std::vector<std::vector<AttemptResult>> batches() const {
    std::lock_guard lock(mu_);
    return batches_;
  }
  // Every result recorded, by job, the latest recorded last.
  std::map<int64_t, std::vector<AttemptResult>> results() const {
    std::lock_guard lock(mu_);
    std::map<int64_t, std::vector<AttemptResult>> by_job;
    for (const auto& batch : batches_) {
      for (const auto& result : batch) by_job[result.id].push_back(result);
    }
    return by_job;
  }
  int calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int resets() const {
    std::lock_guard lock(mu_);
    return resets_;
  }
  std::string node() const {
    std::lock_guard lock(mu_);
    return node_;
  }

 private:
  class Forwarder : public ResultRecorder {
   public:
    explicit Forwarder(MemoryResultRecorder& to) : to_(to) {}
    int Record(const std::vector<AttemptResult>& results, const std::string& node) override {
      return to_.Record(results, node);
    }
    void Reset() override { to_.Reset(); }

   private:
    MemoryResultRecorder& to_;
  };

  size_t CountLocked() const {
    size_t n = 0;
    for (const auto& batch : batches_) n += batch.size();
    return n;
  }

  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_.
  std::vector<std::vector<AttemptResult>> batches_;
  std::map<int64_t, std::string> refused_;
  std::string node_;
  int fail_next_ = 0;
  int calls_ = 0;
  int resets_ = 0;
  bool hold_ = false;
  bool held_ = false;
};

}  // namespace bulkhead::testing
