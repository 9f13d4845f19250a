#include "sleep_mark.h"

#include "logger.h"

namespace bulkhead {

void SleepMark::Write(RunnerStore& store) {
  try {
    store.MarkAsleep(queue_, node_);
    const SleepStart start = store.FellAsleep();  // after the mark committed: see the header
    Marked(Clock::now(), start);
  } catch (const std::exception& e) {
    Failed();
    Log(LogLevel::kWarn, "sleep_mark_failed", {{"tier", queue_}, {"error", FirstLine(e.what())}});
    store.Reset();
  }
}

void SleepMark::Delete(RunnerStore& store) {
  try {
    store.MarkAwake(queue_, node_);
    Unmarked();
  } catch (const std::exception& e) {
    Log(LogLevel::kWarn, "sleep_mark_failed", {{"tier", queue_}, {"error", FirstLine(e.what())}});
    store.Reset();
  }
}

bool SleepMark::Look(RunnerStore& store, Clock::time_point now) {
  try {
    return horizon_.Look(store.RunningTransactions(), now);
  } catch (const std::exception& e) {
    Log(LogLevel::kWarn, "sleep_mark_failed", {{"tier", queue_}, {"error", FirstLine(e.what())}});
    store.Reset();
    Lost();  // the claim that follows reconnects, and the mark is written again before the wait
    return true;
  }
}

}  // namespace bulkhead
