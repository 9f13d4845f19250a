#include "completion_writer.h"

#include "completion_store.h"
#include "logger.h"
#include "reconnect_backoff.h"
#include "store_connection.h"

namespace bulkhead {

CompletionWriter::CompletionWriter(Options options)
    : options_(std::move(options)), thread_([this] { Run(); }) {}

CompletionWriter::~CompletionWriter() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void CompletionWriter::Add(AttemptResult result) {
  {
    std::lock_guard lock(mu_);
    bool first = pending_.empty();
    if (first) oldest_pending_ = std::chrono::steady_clock::now();
    pending_.push_back(std::move(result));
    ++added_;
    // The writer needs waking for the first result (it starts the flush clock) and for a full
    // batch; in between it is already waiting for one or the other.
    if (!first && static_cast<int>(pending_.size()) != options_.batch_size) return;
  }
  wake_.notify_one();
}

bool CompletionWriter::Drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  uint64_t target = added_;
  wake_.notify_one();
  return drained_.wait_for(lock, timeout, [&] { return written_ >= target; });
}

bool CompletionWriter::Saturated() const {
  std::lock_guard lock(mu_);
  return pending_.size() >= static_cast<size_t>(options_.batch_size) * 20;
}

void CompletionWriter::HeldJobs(std::vector<int64_t>* jobs) const {
  std::lock_guard lock(mu_);
  for (const auto& result : pending_) jobs->push_back(result.id);
  jobs->insert(jobs->end(), writing_.begin(), writing_.end());
}

uint64_t CompletionWriter::written() const {
  std::lock_guard lock(mu_);
  return written_;
}

void CompletionWriter::Run() {
  StoreConnection<CompletionStore> store(options_.database);
  ReconnectBackoff backoff;           // 100 ms doubling to 5 s, jittered
  std::chrono::milliseconds wait{0};  // before the next try, after a failed write
  std::vector<AttemptResult> batch;
  std::unique_lock lock(mu_);
  while (true) {
    // Wait for a full batch, the flush interval of the oldest result, or stop.
    wake_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping with nothing left
    if (!stopping_ && static_cast<int>(pending_.size()) < options_.batch_size) {
      wake_.wait_until(lock, oldest_pending_ + options_.flush_interval, [&] {
        return stopping_ || static_cast<int>(pending_.size()) >= options_.batch_size;
      });
    }
    size_t n = std::min<size_t>(pending_.size(), options_.batch_size);
    batch.assign(std::make_move_iterator(pending_.begin()),
                 std::make_move_iterator(pending_.begin() + n));
    pending_.erase(pending_.begin(), pending_.begin() + n);
    for (const auto& result : batch) writing_.push_back(result.id);
    if (!pending_.empty()) oldest_pending_ = std::chrono::steady_clock::now();
    lock.unlock();

    bool ok = false;
    try {
      store.Get().Record(batch, options_.node);
      ok = true;
      if (options_.metrics) {
        options_.metrics->completion_batch_size().Observe(static_cast<double>(batch.size()));
      }
      backoff.Reset();
    } catch (const std::exception& e) {
      wait = backoff.Next();
      Log(LogLevel::kWarn, "completion_write_failed",
          {{"results", batch.size()},
           {"error", FirstLine(e.what())},
           {"retry_in_ms", wait.count()}});
      store.Reset();
    }

    lock.lock();
    writing_.clear();  // written, or back in pending_ below
    if (!ok && stopping_) {
      // Shutting down and the database is gone: these jobs stay `executing` under this node
      // and come back through the rescue of expired leases. Delivery stays at-least-once.
      Log(LogLevel::kError, "completion_results_abandoned",
          {{"results", batch.size() + pending_.size()}});
      written_ += batch.size() + pending_.size();
      pending_.clear();
      drained_.notify_all();
      return;
    }
    if (ok) {
      written_ += batch.size();
      drained_.notify_all();
    } else {
      // Put the batch back in front and wait before the next try (a stop does not skip it:
      // the node's shutdown bounds the whole drain with its grace period).
      pending_.insert(pending_.begin(), std::make_move_iterator(batch.begin()),
                      std::make_move_iterator(batch.end()));
      wake_.wait_for(lock, wait);
    }
    batch.clear();
  }
}

}  // namespace bulkhead
