// The leader's plan for the ranges of bulkhead.jobs (job_range_keeper.h), without a database:
// a range's size, where the next one starts, and which ids are pruned row by row.
#include <gtest/gtest.h>

#include <limits>

#include "job_range_keeper.h"

namespace bulkhead {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

constexpr int64_t kLowest = std::numeric_limits<int64_t>::min();
constexpr int64_t kHighest = std::numeric_limits<int64_t>::max();

// jobs_first below `first_high`, the given ranges, and the default range: as job_ranges() lists
// them.
std::vector<JobRange> Ranges(int64_t first_high, std::vector<IdInterval> added) {
  std::vector<JobRange> ranges{{"jobs_first", std::nullopt, first_high, false}};
  for (const IdInterval& ids : added) {
    ranges.push_back({"jobs_from_" + std::to_string(ids.low), ids.low, ids.high, false});
  }
  ranges.push_back({"jobs_beyond", std::nullopt, std::nullopt, true});
  return ranges;
}

TEST(JobRangePlanTest, ARangeIsASeventhOfTheRetentionAtTheRateAndNoSmallerThanTheFloor) {
  const milliseconds week = hours(24 * 7);
  EXPECT_EQ(JobRangeSize(1000, week, 100'000), 86'400'000);  // a day at 1,000 a second
  EXPECT_EQ(JobRangeSize(0, week, 100'000), 100'000);
  EXPECT_EQ(JobRangeSize(0.5, milliseconds(60'000), 10), 10);
  EXPECT_EQ(JobRangeSize(7, milliseconds(10'000), 1), 10);
  EXPECT_LE(JobRangeSize(1e300, week, 1), kHighest / 1000);
}

TEST(JobRangePlanTest, TheNextRangeFollowsTheLastWhileIdsAreBelowIt) {
  // A fresh database: jobs_first below 1, no id drawn.
  EXPECT_EQ(NextJobRange(Ranges(1, {}), 0, 10, 1000), (IdInterval{1, 11}));
  // Ids 1-4 drawn, 6 left of a size of 10: the next one follows.
  EXPECT_EQ(NextJobRange(Ranges(1, {{1, 11}}), 4, 10, 1000), (IdInterval{11, 21}));
  // A range and more ahead: nothing to add.
  EXPECT_EQ(NextJobRange(Ranges(1, {{1, 11}, {11, 21}}), 4, 10, 1000), std::nullopt);
  EXPECT_EQ(NextJobRange(Ranges(1, {{1, 11}, {11, 21}}), 10, 10, 1000), std::nullopt);
  EXPECT_EQ(NextJobRange(Ranges(1, {{1, 11}, {11, 21}}), 11, 10, 1000), (IdInterval{21, 31}));
}

TEST(JobRangePlanTest, IdsPastTheLastRangeMakeTheNextStartAboveThemByTheMargin) {
  // A table migrated at id 5,000 with ids drawn up to 7,000 into the default range.
  EXPECT_EQ(NextJobRange(Ranges(5000, {}), 7000, 100, 1000), (IdInterval{8001, 8101}));
  // The last range ends at 21 and ids reached 21 (into the default range).
  EXPECT_EQ(NextJobRange(Ranges(1, {{1, 11}, {11, 21}}), 21, 10, 50), (IdInterval{72, 82}));
}

TEST(JobRangePlanTest, RowsArePrunedOneByOneInJobsFirstAndWhereverTheDefaultRangeTakesIds) {
  EXPECT_EQ(RowPrunedIntervals(Ranges(1, {})),
            (std::vector<IdInterval>{{kLowest, 1}, {1, kHighest}}));
  EXPECT_EQ(RowPrunedIntervals(Ranges(5000, {{8001, 8101}, {8101, 8201}})),
            (std::vector<IdInterval>{{kLowest, 5000}, {5000, 8001}, {8201, kHighest}}));
  // The ids of a dropped range join the default range's interval, which finds none of them.
  EXPECT_EQ(RowPrunedIntervals(Ranges(1, {{11, 21}, {21, 31}})),
            (std::vector<IdInterval>{{kLowest, 1}, {1, 11}, {31, kHighest}}));
}

}  // namespace
}  // namespace bulkhead
