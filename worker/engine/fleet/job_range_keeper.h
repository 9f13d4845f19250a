// JobRangeKeeper: the leader's care of bulkhead.jobs's ranges of ids (migration 0021, ADR 0026).
//
// jobs is partitioned by ranges of id: jobs_first (the table as it was before 0021, every id
// below the first one drawn after it), the ranges this keeper adds, and a default range that
// takes any id no range covers, so that an enqueue never fails for want of a range. Once a prune
// round (a minute), on the leader's maintenance connection, Keep:
//
// 1. Ahead. When less than one range's size of ids is left above the highest id committed, adds
//    the next range, so one to two ranges stand ahead of the enqueues. A range's size is a
//    seventh of the retention at the enqueue rate: the ids drawn a second, the highest of the
//    recent rounds (it decays by a tenth a round), and at least `min_range_ids`. At a week's
//    retention that is a range a day and about nine ranges in all. The next range follows the
//    last; when ids have run past it into the default range (no leader for a while, or a rate
//    far above the recent rounds'), it starts above the highest id by ten seconds of ids, and
//    the ids between stay in the default range.
// 2. Behind. Walks the added ranges that ids have passed, oldest first. A range whose jobs all
//    finished before the retention is dropped whole, its idempotency keys first: no WAL a row,
//    where the row prune writes a delete and, a week after the write, a full-page image. A range
//    that a live job (parked for days, scheduled far ahead) holds is pruned row by row. The walk
//    stops at the first range holding a job that finished within the retention.
// 3. Returns the ids pruned row by row: jobs_first, the default range's ids, the held ranges.
//
// A range not added or not dropped (a lock not granted in time, an id drawn into the range
// meanwhile) is logged and tried again at the next round. The pure parts are free functions,
// tested without a database (tests/job_range_plan_test.cc).
//
// Threads: a JobRangeKeeper belongs to the maintenance thread, and so does the store it is given.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "fleet_store.h"
#include "store_types.h"

namespace bulkhead {

// The ids low to high, high excluded.
struct IdInterval {
  int64_t low;
  int64_t high;
  bool operator==(const IdInterval&) const = default;
};

// A range's size: a seventh of `retention` at `ids_per_s`, at least `min_ids`.
int64_t JobRangeSize(double ids_per_s, std::chrono::milliseconds retention, int64_t min_ids);

// The next range to add, or none while at least `size` ids are left above `highest` in the
// ranges. It follows the highest range; when `highest` has reached it, it starts `margin` ids
// above `highest`.
std::optional<IdInterval> NextJobRange(const std::vector<JobRange>& ranges, int64_t highest,
                                       int64_t size, int64_t margin);

// The ids outside every added range: jobs_first's, and those the default range holds (between
// two ranges, above the highest). In ascending order.
std::vector<IdInterval> RowPrunedIntervals(const std::vector<JobRange>& ranges);

class JobRangeKeeper {
 public:
  struct Options {
    std::chrono::milliseconds retention{7LL * 24 * 3600 * 1000};
    int64_t min_range_ids = 100'000;
  };

  explicit JobRangeKeeper(Options options) : options_(options) {}

  // One round (above). Throws pqxx errors but for a range not added or not dropped.
  std::vector<IdInterval> Keep(FleetStore& store, std::chrono::steady_clock::time_point now);

  uint64_t added() const { return added_; }
  uint64_t dropped() const { return dropped_; }

 private:
  const Options options_;
  // The highest id at the last round, and when: the enqueue rate between rounds.
  std::optional<std::pair<int64_t, std::chrono::steady_clock::time_point>> last_;
  double ids_per_s_ = 0;
  uint64_t added_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace bulkhead
