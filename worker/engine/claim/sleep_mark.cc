#include "sleep_mark.h"

#include "logger.h"

namespace bulkhead {

void SleepMark::Write(RunnerStore& store) {
  try {
    store.MarkAsleep(queue_, node_);
    Marked(Clock::now());
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

}  // namespace bulkhead
