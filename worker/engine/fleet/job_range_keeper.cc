#include "job_range_keeper.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <pqxx/pqxx>
#include <utility>

#include "logger.h"

namespace bulkhead {
namespace {

constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();
// Ranges in a retention: a range a day at a week's.
constexpr double kRangesPerRetention = 7;
// How fast the remembered rate forgets a burst: a tenth a round.
constexpr double kRateDecay = 0.9;
// The margin above the highest id when ids ran past the ranges: this many seconds of ids, and
// at least kMinMargin.
constexpr double kMarginSeconds = 10;
constexpr int64_t kMinMargin = 1000;

}  // namespace

int64_t JobRangeSize(double ids_per_s, std::chrono::milliseconds retention, int64_t min_ids) {
  const double ids =
      ids_per_s * static_cast<double>(retention.count()) / 1000.0 / kRangesPerRetention;
  // Capped far above any rate: a thousandth of the id space.
  constexpr int64_t kCap = kHighest / 1000;
  if (ids >= static_cast<double>(kCap)) return std::max(min_ids, kCap);
  return std::max(min_ids, static_cast<int64_t>(std::ceil(ids)));
}

std::optional<IdInterval> NextJobRange(const std::vector<JobRange>& ranges, int64_t highest,
                                       int64_t size, int64_t margin) {
  int64_t top = 1;  // ids start at 1
  for (const JobRange& range : ranges) {
    if (!range.is_default && range.high) top = std::max(top, *range.high);
  }
  if (top - (highest + 1) >= size) return std::nullopt;
  const int64_t low = top > highest ? top : highest + 1 + margin;
  return IdInterval{low, low + size};
}

std::vector<IdInterval> RowPrunedIntervals(const std::vector<JobRange>& ranges) {
  std::vector<IdInterval> intervals;
  int64_t cursor = kLowest;
  for (const JobRange& range : ranges) {  // lowest first, the default last
    if (range.is_default || !range.high) continue;
    if (!range.low) {  // jobs_first
      intervals.push_back({kLowest, *range.high});
      cursor = std::max(cursor, *range.high);
      continue;
    }
    if (*range.low > cursor) intervals.push_back({cursor, *range.low});
    cursor = std::max(cursor, *range.high);
  }
  if (cursor < kHighest) intervals.push_back({cursor, kHighest});
  return intervals;
}

std::vector<IdInterval> JobRangeKeeper::Keep(FleetStore& store,
                                             std::chrono::steady_clock::time_point now) {
  const int64_t highest = store.HighestJobId();
  if (last_ && now > last_->second) {
    const double seconds = std::chrono::duration<double>(now - last_->second).count();
    const double rate = static_cast<double>(std::max<int64_t>(highest - last_->first, 0)) / seconds;
    ids_per_s_ = std::max(rate, ids_per_s_ * kRateDecay);
  }
  last_ = {highest, now};

  std::vector<JobRange> ranges = store.JobRanges();
  const int64_t size = JobRangeSize(ids_per_s_, options_.retention, options_.min_range_ids);
  const auto margin = std::max(kMinMargin, static_cast<int64_t>(ids_per_s_ * kMarginSeconds));
  if (std::optional<IdInterval> next = NextJobRange(ranges, highest, size, margin)) {
    try {
      store.AddJobRange(next->low, next->high);
      ++added_;
      Log(LogLevel::kInfo, "job_range_added",
          {{"low", next->low}, {"high", next->high}, {"ids_per_s", std::lround(ids_per_s_)}});
      ranges = store.JobRanges();
    } catch (const pqxx::sql_error& e) {
      Log(LogLevel::kWarn, "job_range_not_added",
          {{"low", next->low},
           {"high", next->high},
           {"sqlstate", e.sqlstate()},
           {"error", FirstLine(e.what())},
           {"detail", "tried again at the next round"}});
    }
  }

  std::vector<IdInterval> intervals = RowPrunedIntervals(ranges);
  const int64_t retention_ms = options_.retention.count();
  for (const JobRange& range : ranges) {
    if (range.is_default || !range.low || !range.high) continue;
    if (*range.high > highest + 1) break;  // ids still to come
    const RangeFacts facts = store.ReadRangeFacts(*range.low, *range.high, retention_ms);
    if (!facts.expired) break;
    if (facts.live) {
      intervals.push_back({*range.low, *range.high});
      continue;
    }
    try {
      if (!store.DropJobRange(range, retention_ms)) break;  // a job came back meanwhile
      ++dropped_;
      Log(LogLevel::kInfo, "job_range_dropped",
          {{"range", range.name},
           {"low", *range.low},
           {"high", *range.high},
           {"retention_ms", retention_ms}});
    } catch (const pqxx::sql_error& e) {
      Log(LogLevel::kWarn, "job_range_not_dropped",
          {{"range", range.name},
           {"sqlstate", e.sqlstate()},
           {"error", FirstLine(e.what())},
           {"detail", "tried again at the next round"}});
      break;
    }
  }
  return intervals;
}

}  // namespace bulkhead
