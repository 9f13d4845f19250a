#include "completion_writer.h"

#include <algorithm>

#include "logger.h"
#include "store_failure.h"

namespace bulkhead {
namespace {

PoisonQuarantine::Options QuarantineOptions(Metrics* metrics) {
  PoisonQuarantine::Options options;
  options.event = "completion_result_quarantined";
  options.text = "error text";
  options.writer = Metrics::QuarantineWriter::kCompletion;
  options.metrics = metrics;
  options.recorded_detail =
      "the database refused this result; recorded again with its error text made storable, so "
      "the job still gets its retry or discard";
  options.dropped_detail =
      "the database refused this result even with its error text made storable; dropped: the "
      "job stays executing until handed back or rescued";
  return options;
}

}  // namespace

std::chrono::milliseconds CompletionWriter::DefaultStalledAfter(
    std::chrono::milliseconds flush_interval) {
  return std::max<std::chrono::milliseconds>(std::chrono::seconds(5), 1000 * flush_interval);
}

std::string CompletionWriter::Progress::Describe() const {
  return "completion writer: " + std::to_string(waiting) + " results waiting, none written for " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(since_write).count()) +
         " s";
}

CompletionWriter::CompletionWriter(Options options)
    : CompletionWriter(options,
                       std::make_unique<StoreResultRecorder>(options.database, options.pooling)) {}

CompletionWriter::CompletionWriter(Options options, std::unique_ptr<ResultRecorder> recorder)
    : options_(std::move(options)),
      stalled_after_(options_.stalled_after.count() > 0
                         ? options_.stalled_after
                         : DefaultStalledAfter(options_.flush_interval)),
      quarantine_(QuarantineOptions(options_.metrics)),
      recorder_(std::move(recorder)) {
  service_.Start([this] { Run(); });
}

CompletionWriter::~CompletionWriter() { service_.Stop(); }

void CompletionWriter::Add(AttemptResult result) {
  {
    std::lock_guard lock(mu_);
    bool first = pending_.empty();
    if (first) oldest_pending_ = std::chrono::steady_clock::now();
    if (added_ == written_) last_progress_ = oldest_pending_;  // nothing was waiting
    pending_.push_back(std::move(result));
    ++added_;
    // The writer needs waking for the first result (it starts the flush clock) and for a full
    // batch; in between it is already waiting for one or the other.
    if (!first && static_cast<int>(pending_.size()) != options_.batch_size) return;
  }
  service_.Wake();
}

bool CompletionWriter::Drain(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  uint64_t target = added_;
  service_.Wake();
  return drained_.wait_for(lock, timeout, [&] { return written_ >= target; });
}

bool CompletionWriter::Saturated() const {
  std::lock_guard lock(mu_);
  return pending_.size() + writing_.size() >= static_cast<size_t>(options_.batch_size);
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

CompletionWriter::Progress CompletionWriter::progress() const {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  Progress p;
  p.waiting = static_cast<size_t>(added_ - written_);
  if (p.waiting == 0) return p;
  p.since_write = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_progress_);
  p.stalled = p.since_write >= stalled_after_;
  return p;
}

void CompletionWriter::Write(const std::vector<AttemptResult>& batch, size_t begin, size_t end,
                             size_t& handled) {
  const bool whole = begin == 0 && end == batch.size();
  try {
    if (whole) {
      recorder_->Record(batch, options_.node);
    } else {  // a half, while looking for a poisoned result: a copy is cheap next to the search
      std::vector<AttemptResult> part(batch.begin() + begin, batch.begin() + end);
      recorder_->Record(part, options_.node);
    }
  } catch (const std::exception& e) {
    if (!IsDataFailure(e)) throw;
    if (end - begin == 1) {
      const AttemptResult& result = batch[begin];
      quarantine_.Take(e, result.error, {{"job", result.id}, {"attempt", result.attempt}},
                       [&](const std::string& storable) {
                         AttemptResult safe = result;
                         safe.error = storable;
                         recorder_->Record({safe}, options_.node);
                       });
      ++handled;
      return;
    }
    if (whole) {
      Log(LogLevel::kWarn, "completion_batch_split",
          {{"results", batch.size()},
           {"sqlstate", SqlState(e)},
           {"error", FirstLine(e.what())},
           {"detail", "the database refused this batch's data; halving it to find the result"}});
    }
    size_t middle = begin + (end - begin) / 2;
    Write(batch, begin, middle, handled);
    Write(batch, middle, end, handled);
    return;
  }
  if (options_.metrics) {
    options_.metrics->completion_batch_size().Observe(static_cast<double>(end - begin));
  }
  handled += end - begin;
}

void CompletionWriter::Run() {
  std::chrono::milliseconds wait{0};  // before the next try, after a failed write
  std::vector<AttemptResult> batch;
  std::unique_lock lock(mu_);
  while (true) {
    // Wait for a full batch, the flush interval of the oldest result, or stop.
    service_.Wait(lock, [&] { return !pending_.empty(); });
    if (pending_.empty()) return;  // stopping with nothing left
    if (!service_.stopping() && static_cast<int>(pending_.size()) < options_.batch_size) {
      service_.WaitUntil(lock, oldest_pending_ + options_.flush_interval,
                         [&] { return static_cast<int>(pending_.size()) >= options_.batch_size; });
    }
    size_t n = std::min<size_t>(pending_.size(), options_.batch_size);
    batch.assign(std::make_move_iterator(pending_.begin()),
                 std::make_move_iterator(pending_.begin() + n));
    pending_.erase(pending_.begin(), pending_.begin() + n);
    for (const auto& result : batch) writing_.push_back(result.id);
    if (!pending_.empty()) oldest_pending_ = std::chrono::steady_clock::now();
    lock.unlock();

    size_t handled = 0;  // written or quarantined: a prefix of the batch
    bool ok = false;
    try {
      Write(batch, 0, batch.size(), handled);
      ok = true;
      service_.Succeeded();
    } catch (const std::exception& e) {
      wait = service_.Failed();  // 100 ms doubling to 5 s, jittered
      Log(LogLevel::kWarn, "completion_write_failed",
          {{"results", batch.size() - handled},
           {"sqlstate", SqlState(e)},
           {"error", FirstLine(e.what())},
           {"retry_in_ms", wait.count()}});
      recorder_->Reset();
    }

    lock.lock();
    writing_.clear();  // written, or back in pending_ below
    if (handled > 0) {
      written_ += handled;
      last_progress_ = std::chrono::steady_clock::now();
      drained_.notify_all();
    }
    if (!ok && service_.stopping()) {
      // Shutting down and the database is gone: these jobs stay `executing` under this node
      // and come back through the rescue of expired leases. Delivery stays at-least-once.
      size_t left = batch.size() - handled + pending_.size();
      Log(LogLevel::kError, "completion_results_abandoned", {{"results", left}});
      written_ += left;
      pending_.clear();
      drained_.notify_all();
      return;
    }
    if (!ok) {
      // Put what is left of the batch back in front and wait before the next try (a stop does
      // not skip it: the node's shutdown bounds the whole drain with its grace period). Any
      // wake-up cuts the wait short: a Drain() tries again at once.
      pending_.insert(pending_.begin(), std::make_move_iterator(batch.begin() + handled),
                      std::make_move_iterator(batch.end()));
      service_.Nap(lock, wait);
    }
    batch.clear();
  }
}

}  // namespace bulkhead
