// RateSampler: deliveries/s and the failure rate per tier over the last minutes, for the
// console's overview. Every kEvery it counts, per tier, the deliveries that completed and that
// were discarded since its last count (ConsoleStore::FinishedBetween: one range of
// jobs_finished, whatever the history holds), and keeps the counts of the last kWindow.
// A page asks Rates(), which reads only those counts: the overview never counts finished rows
// itself.
//
// The windows are on the database's clock, and each ends Options::settle before the time it is
// taken, so that a result written just before (its finished_at) but committed just after the count
// is counted in the next window instead of never.
//
// Threads: one ServiceThread of its own counts; Rates() is called from the request threads.
// Both take mu_. Stop (or destruction) ends the thread within one count.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "console_pool.h"
#include "service_thread.h"

namespace bulkhead::console {

struct TierRates {
  double completed_per_s = 0, discarded_per_s = 0;
  double failure_rate = 0;  // discarded ÷ (completed + discarded); 0 when nothing finished
  double window_s = 0;      // how long the counts cover (up to kWindow)
};

class RateSampler {
 public:
  static constexpr auto kWindow = std::chrono::minutes(5);

  struct Options {
    std::chrono::milliseconds every{5000};   // how often it counts
    std::chrono::milliseconds settle{2000};  // how far behind the database's now a window ends
  };

  explicit RateSampler(ConsolePool& pool) : RateSampler(pool, Options{}) {}
  RateSampler(ConsolePool& pool, Options options);
  ~RateSampler();

  // Per tier (queue), over the counts held; a tier with nothing finished is absent.
  std::map<std::string, TierRates> Rates() const;

 private:
  struct Sample {
    double span_s = 0;  // the window this sample covers
    std::map<std::string, FinishedCount> by_queue;
  };

  void Loop();
  // One count: the window from the last end to now - Options::settle.
  void Count(ConsoleStores& stores);

  ConsolePool& pool_;
  const Options options_;
  mutable std::mutex mu_;
  std::string last_end_;        // guarded by mu_; the database's time the last window ended
  std::deque<Sample> samples_;  // guarded by mu_; newest last, covering at most kWindow
  ServiceThread thread_{mu_};   // last: stopped before the members it uses go
};

}  // namespace bulkhead::console
