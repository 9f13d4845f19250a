#include "rate_sampler.h"

#include <exception>
#include <optional>

#include "logger.h"

namespace bulkhead::console {

RateSampler::RateSampler(ConsolePool& pool, Options options) : pool_(pool), options_(options) {
  thread_.Start([this] { Loop(); });
}

RateSampler::~RateSampler() { thread_.Stop(); }

void RateSampler::Loop() {
  std::unique_lock lock(mu_);
  while (!thread_.stopping()) {
    lock.unlock();
    bool counted = true;
    try {
      pool_.With([&](ConsoleStores& stores) { Count(stores); });
    } catch (const std::exception& e) {
      counted = false;
      Log(LogLevel::kWarn, "console_rates_failed", {{"error", FirstLine(e.what())}});
    }
    lock.lock();
    if (counted) {
      thread_.Succeeded();
      thread_.SleepFor(lock, options_.every);
    } else {
      thread_.SleepFor(lock, std::max(thread_.Failed(), options_.every));
    }
  }
}

void RateSampler::Count(ConsoleStores& stores) {
  std::optional<std::string> start;
  {
    std::lock_guard lock(mu_);
    if (!last_end_.empty()) start = last_end_;
  }
  const ConsoleStore::Window window =
      stores.console.WindowEnd(start, std::chrono::duration<double>(options_.settle).count());
  Sample sample{.span_s = window.span_s, .by_queue = {}};
  if (start) {  // the first count only sets where the windows begin
    for (FinishedCount& count : stores.console.FinishedBetween(*start, window.end)) {
      sample.by_queue[count.queue] = count;
    }
  }
  std::lock_guard lock(mu_);
  last_end_ = window.end;
  if (!start) return;
  samples_.push_back(std::move(sample));
  double covered = 0;
  for (const Sample& s : samples_) covered += s.span_s;
  while (samples_.size() > 1 &&
         covered - samples_.front().span_s >= std::chrono::duration<double>(kWindow).count()) {
    covered -= samples_.front().span_s;
    samples_.pop_front();
  }
}

std::map<std::string, TierRates> RateSampler::Rates() const {
  std::lock_guard lock(mu_);
  double window_s = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> totals;
  for (const Sample& s : samples_) {
    window_s += s.span_s;
    for (const auto& [queue, count] : s.by_queue) {
      totals[queue].first += count.completed;
      totals[queue].second += count.discarded;
    }
  }
  std::map<std::string, TierRates> rates;
  if (window_s <= 0) return rates;
  for (const auto& [queue, total] : totals) {
    const auto [completed, discarded] = total;
    TierRates& r = rates[queue];
    r.completed_per_s = static_cast<double>(completed) / window_s;
    r.discarded_per_s = static_cast<double>(discarded) / window_s;
    r.failure_rate = completed + discarded == 0 ? 0
                                                : static_cast<double>(discarded) /
                                                      static_cast<double>(completed + discarded);
    r.window_s = window_s;
  }
  return rates;
}

}  // namespace bulkhead::console
