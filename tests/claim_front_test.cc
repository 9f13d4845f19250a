// The claim's front (ClaimFront, ADR 0031) against real PostgreSQL: whenever it takes its whole
// limit it takes exactly the jobs the whole claim (Claim) takes from the same rows, with the
// caps, slow start and a channel in flight at its cap; when it falls short it has taken only
// priority-1 jobs the whole claim would also have taken first, and leaves the rest (jobs back
// from parking, jobs past a capped front) to the whole claim; it parks a paused channel's job as
// the whole claim does; and a runner drains a backlog through the front and the jobs behind it
// without waiting for its poll.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "breaker_keeper.h"
#include "claim_store.h"
#include "completion_writer.h"
#include "delivery_test.h"
#include "http_receiver.h"
#include "http_sender.h"
#include "network_guard.h"
#include "queue_runner.h"
#include "runner_store.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using std::chrono::seconds;
using testing::DeliveryTest;
using testing::HttpReceiver;

class ClaimFrontTest : public DeliveryTest {
 protected:
  int64_t Channel(const std::string& tenant) {
    return testing::CreateChannel(db(), testing::CreateTenant(db(), tenant));
  }
  int64_t TenantOf(int64_t channel) {
    return testing::QueryValue<int64_t>(
        db(), "SELECT tenant_id FROM bulkhead.channels WHERE id = " + std::to_string(channel));
  }

  // `rounds` jobs on each of `channels`, one per channel in turn, so that every window reads
  // the channels interleaved.
  void Interleaved(const std::vector<int64_t>& channels, int rounds) {
    for (int i = 0; i < rounds; ++i) {
      for (int64_t channel : channels) EnqueueOne(channel);
    }
  }

  static std::vector<int64_t> Ids(const std::vector<ClaimedJob>& jobs) {
    std::vector<int64_t> ids;
    for (const auto& job : jobs) ids.push_back(job.id);
    return ids;
  }

  // The jobs `limits` lets a claim of `limit` take: by the whole claim, then, from the same
  // rows (the whole claim's handed back as they were), by the front alone. Both in claim order.
  struct Both {
    std::vector<int64_t> whole, front;
  };
  Both ClaimBoth(int limit, ClaimLimits limits) {
    ClaimStore store(db());
    limits.front = false;
    Both both;
    both.whole = Ids(store.Claim("default", limit, "node-a", limits));
    std::string ids;
    for (int64_t id : both.whole) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    if (!ids.empty()) {
      Exec(
          "UPDATE bulkhead.jobs SET state = 'available', attempt = attempt - 1, "
          "attempted_at = NULL, attempted_by = NULL WHERE id IN (" +
          ids + ")");
    }
    limits.front = true;
    both.front = Ids(store.Claim("default", limit, "node-a", limits));
    return both;
  }
};

TEST_F(ClaimFrontTest, WhenItTakesItsWholeLimitItTakesWhatTheWholeClaimTakes) {
  const int64_t a = Channel("a"), b = Channel("b"), c = Channel("c");
  Interleaved({a, b, c}, 10);

  // No caps: the first 12 due jobs in order.
  Both plain = ClaimBoth(12, ClaimLimits{});
  ASSERT_EQ(plain.whole.size(), 12u);
  EXPECT_EQ(plain.front, plain.whole);

  // Slow start: each channel up to its first window of 2, which 6 interleaved rows keep.
  ClaimLimits slow;
  slow.channel_cap = 10;
  slow.first_window = 2;
  Both windows = ClaimBoth(6, slow);
  ASSERT_EQ(windows.whole.size(), 6u);
  EXPECT_EQ(windows.front, windows.whole);

  // A channel at its cap on this node, left out before the window; a tenant with room for one
  // more. The rest fill the limit.
  ClaimLimits capped;
  capped.channel_cap = 5;
  capped.tenant_cap = 5;
  capped.channels_in_flight = {{a, 5}, {b, 4}};
  capped.tenants_in_flight = {{TenantOf(b), 4}};
  Both left_out = ClaimBoth(4, capped);
  ASSERT_EQ(left_out.whole.size(), 4u);
  EXPECT_EQ(left_out.front, left_out.whole);
}

TEST_F(ClaimFrontTest, ItFallsShortOfJobsBackFromParkingAndLeavesThemToTheWholeClaim) {
  const int64_t a = Channel("a"), b = Channel("b");
  EnqueueMany(a, 2);
  EnqueueMany(b, 3,
              "UPDATE bulkhead.jobs SET priority = 3 WHERE channel_id = " + std::to_string(b));
  ClaimStore store(db());
  ClaimLimits front;
  front.front = true;
  const auto fresh = store.Claim("default", 5, "node-a", front);
  ASSERT_EQ(fresh.size(), 2u);
  for (const auto& job : fresh) EXPECT_EQ(job.channel_id, a);
  const auto rest = store.Claim("default", 5, "node-a", ClaimLimits{});
  ASSERT_EQ(rest.size(), 3u);
  for (const auto& job : rest) EXPECT_EQ(job.channel_id, b);
}

// Past a front the caps hold back, the whole claim's skip scan finds the next channel's jobs;
// the front, which has no skip scan, takes what its window keeps and no more.
TEST_F(ClaimFrontTest, ItTakesOnlyWhatItsWindowKeepsPastACappedFront) {
  const int64_t busy = Channel("busy"), behind = Channel("behind");
  Enqueue(busy, 30);
  Enqueue(behind, 3);
  ClaimLimits limits;
  limits.channel_cap = 10;
  limits.look_ahead = ClaimLimits::kShortLookAhead;
  Both both = ClaimBoth(20, limits);
  ASSERT_EQ(both.whole.size(), 13u);  // busy's 10 (its cap), then behind's 3
  ASSERT_EQ(both.front.size(), 10u);
  EXPECT_TRUE(std::equal(both.front.begin(), both.front.end(), both.whole.begin()));
}

TEST_F(ClaimFrontTest, ItParksAJobOfAPausedChannelAsTheWholeClaimDoes) {
  const int64_t paused = Channel("paused"), open = Channel("open");
  EnqueueOne(paused);
  EnqueueOne(open);
  Exec("UPDATE bulkhead.channels SET paused = true WHERE id = " + std::to_string(paused));
  ClaimStore store(db());
  ClaimLimits front;
  front.front = true;
  int parked = 0;
  const auto jobs = store.Claim("default", 2, "node-a", front, &parked);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].channel_id, open);
  EXPECT_EQ(parked, 1);
  EXPECT_EQ(Count("state = 'parked' AND channel_id = " + std::to_string(paused)), 1);
}

// A runner with a minute's poll: the backlog fills its claims, which then run the front; when
// the front falls short, the whole claim takes the jobs back from parking behind the fresh ones
// at once, and after them.
TEST_F(ClaimFrontTest, ARunnerDrainsABacklogThroughTheFrontAndTheJobsBehindItWithoutThePoll) {
  HttpReceiver receiver;
  // Four tenants of one channel each, their jobs interleaved: at the shipped shares a channel
  // and a tenant may hold half the 4 workers, so a claim of 4 fills only across channels.
  std::vector<int64_t> fresh;
  for (const char* name : {"a", "b", "c", "d"}) {
    fresh.push_back(
        testing::CreateChannel(db(), testing::CreateTenant(db(), name), receiver.Url("/fresh")));
  }
  Interleaved(fresh, 10);
  const int64_t back =
      testing::CreateChannel(db(), testing::CreateTenant(db(), "e"), receiver.Url("/back"));
  EnqueueMany(back, 3,
              "UPDATE bulkhead.jobs SET priority = 3 WHERE channel_id = " + std::to_string(back));

  TierOptions tier;
  tier.name = "default";
  tier.workers = 4;
  const std::string node = "node-a";
  CompletionWriter writer(CompletionWriter::Options{conninfo(), node});
  BreakerKeeper keeper(BreakerKeeper::Options{conninfo(), {tier}});
  StoreRunnerStore store(conninfo(), "claim:default");
  HttpSender::Options sender_options;
  sender_options.guard = NetworkGuard({std::get<Network>(ParseCidr("127.0.0.0/8"))});
  auto sender = std::make_unique<HttpSender>(std::move(sender_options));
  auto runner = std::make_unique<QueueRunner>(
      QueueRunner::Options{tier, node, seconds(60), nullptr}, store, *sender, writer, keeper);

  EXPECT_TRUE(WaitFor("count(*) = 43 FROM bulkhead.jobs WHERE state = 'completed'"));
  EXPECT_GT(runner->front_claims(), 0u) << runner->claims() << " claims, " << runner->claimed();
  // Fetch order: every fresh job was claimed before any job back from parking.
  EXPECT_EQ(Count("channel_id = " + std::to_string(back) + " AND attempted_at < (SELECT " +
                  "max(attempted_at) FROM bulkhead.jobs WHERE channel_id <> " +
                  std::to_string(back) + ")"),
            0);
  runner->StopClaiming();
  sender.reset();
  runner.reset();
}

}  // namespace
}  // namespace bulkhead
