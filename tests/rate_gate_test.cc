// RateGate: a runner's side of the channels' rate limits — which tokens a claim's jobs need,
// how the buckets' grants split them into sent and handed back, how a channel with a backlog
// takes its tokens ahead of the claim and returns those it did not use, and how the gate
// narrows the claims until a left-out channel's bucket is predicted to hold a batch again. A
// fake clock; the buckets themselves are SQL's (rate_buckets_test).
#include "rate_gate.h"

#include <gtest/gtest.h>

namespace bulkhead {
namespace {

using namespace std::chrono_literals;
using Clock = RateGate::Clock;

ClaimedJob Job(int64_t id, int64_t channel, double rate) {
  ClaimedJob job;
  job.id = id;
  job.channel_id = channel;
  job.attempt = 1;
  job.rate_limit_per_s = rate;
  return job;
}

std::vector<int64_t> Ids(const std::vector<ClaimedJob>& jobs) {
  std::vector<int64_t> ids;
  for (const auto& j : jobs) ids.push_back(j.id);
  return ids;
}

// The window the claim of `limits` lets `channel` have, or -1 when it is not listed.
int WindowOf(const ClaimLimits& limits, int64_t channel) {
  for (size_t i = 0; i < limits.channels_in_flight.size(); ++i) {
    if (limits.channels_in_flight[i].first == channel) return limits.channel_windows.at(i);
  }
  return -1;
}

TEST(RateGate, AsksOneTokenPerJobOfEachLimitedChannelAndNoneForOthersOrProbes) {
  RateGate gate;
  std::vector<ClaimedJob> jobs = {Job(1, 10, 5), Job(2, 20, 0), Job(3, 10, 5), Job(4, 30, 2)};
  ClaimedJob probe = Job(5, 30, 2);
  probe.probe = true;
  jobs.push_back(probe);
  std::vector<TokenRequest> requests = gate.Requests(jobs);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].channel, 10);
  EXPECT_EQ(requests[0].wanted, 2);
  EXPECT_EQ(requests[1].channel, 30);
  EXPECT_EQ(requests[1].wanted, 1);
}

TEST(RateGate, SendsTheFirstGrantedJobsOfAChannelInClaimOrderAndHandsBackTheRest) {
  RateGate gate;
  const auto now = Clock::now();
  std::vector<ClaimedJob> jobs = {Job(1, 10, 2), Job(2, 20, 0), Job(3, 10, 2), Job(4, 10, 2)};
  RateGate::Split split = gate.Admit(jobs, {{10, 2, 2.0, 1000.0}}, now);
  EXPECT_EQ(Ids(split.go), (std::vector<int64_t>{1, 2, 3}));
  ASSERT_EQ(split.back.size(), 1u);
  EXPECT_EQ(split.back[0].id, 4);
  EXPECT_EQ(split.back[0].attempt, 1);
}

TEST(RateGate, AChannelTheBucketsDidNotAnswerForIsNotHeldBack) {
  RateGate gate;
  RateGate::Split split = gate.Admit({Job(1, 10, 2)}, {}, Clock::now());
  EXPECT_EQ(Ids(split.go), (std::vector<int64_t>{1}));
  EXPECT_TRUE(split.back.empty());
}

TEST(RateGate, AChannelWithoutABacklogIsNarrowedToItsPredictedTokens) {
  RateGate gate;
  const auto now = Clock::now();
  // 2/s, burst 2, every job granted, the bucket's arrival time 1 s ahead: empty now.
  gate.Admit({Job(1, 10, 2)}, {{10, 1, 2.0, 1000.0}}, now);
  EXPECT_FALSE(gate.backlog(10));
  EXPECT_EQ(gate.predicted(10, now), 0);
  ClaimLimits limits;
  limits.channel_cap = 10;
  gate.Narrow(limits, now);
  EXPECT_EQ(WindowOf(limits, 10), 0);  // left out: its rows are never locked
  EXPECT_EQ(limits.lend_windows.back(), 0);
  // Nothing waits for it: no claim is due for its sake.
  EXPECT_EQ(gate.next_due(now), Clock::time_point::max());
  ClaimLimits later;
  later.channel_cap = 10;
  gate.Narrow(later, now + 510ms);
  EXPECT_EQ(WindowOf(later, 10), 1);
}

TEST(RateGate, AChannelThatHadJobsHandedBackTakesItsTokensAheadOfTheClaim) {
  RateGate gate;
  const auto now = Clock::now();
  // 2/s: of three jobs, one granted, two handed back; the bucket 1 s ahead (empty).
  RateGate::Split first =
      gate.Admit({Job(1, 10, 2), Job(2, 10, 2), Job(3, 10, 2)}, {{10, 1, 2.0, 1000.0}}, now);
  EXPECT_EQ(first.back.size(), 2u);
  EXPECT_TRUE(gate.backlog(10));
  // Empty: no tokens asked ahead, the channel left out, the runner due when a token is back.
  EXPECT_TRUE(gate.Ahead(now).empty());
  ClaimLimits limits;
  limits.channel_cap = 10;
  gate.Narrow(limits, now);
  EXPECT_EQ(WindowOf(limits, 10), 0);
  const auto due = gate.next_due(now);
  EXPECT_GT(due, now + 400ms);
  EXPECT_LT(due, now + 600ms);
  // Half a second on: one token predicted, asked ahead; the bucket grants it, and the claim
  // may take exactly one of the channel's jobs.
  const auto later = now + 510ms;
  std::vector<TokenRequest> ahead = gate.Ahead(later);
  ASSERT_EQ(ahead.size(), 1u);
  EXPECT_EQ(ahead[0].channel, 10);
  EXPECT_EQ(ahead[0].wanted, 1);
  gate.TookAhead({{10, 1, 2.0, 1000.0}}, later);
  ClaimLimits narrowed;
  narrowed.channel_cap = 10;
  gate.Narrow(narrowed, later);
  EXPECT_EQ(WindowOf(narrowed, 10), 1);
  // Its job needs no token after the claim, and goes.
  std::vector<ClaimedJob> claimed = {Job(2, 10, 2)};
  EXPECT_TRUE(gate.Requests(claimed).empty());
  RateGate::Split split = gate.Admit(claimed, {}, later);
  EXPECT_EQ(Ids(split.go), (std::vector<int64_t>{2}));
  EXPECT_TRUE(split.back.empty());
  EXPECT_TRUE(split.refund.empty());
  EXPECT_TRUE(gate.backlog(10));  // every token used: more may wait
}

TEST(RateGate, TokensTakenAheadThatNoJobUsedGoBackAndTheBacklogIsOver) {
  RateGate gate;
  const auto now = Clock::now();
  gate.Admit({Job(1, 10, 100), Job(2, 10, 100)}, {{10, 1, 100.0, 1000.0}}, now);
  ASSERT_TRUE(gate.backlog(10));
  const auto later = now + 200ms;  // 20 tokens back
  std::vector<TokenRequest> ahead = gate.Ahead(later);
  ASSERT_EQ(ahead.size(), 1u);
  EXPECT_EQ(ahead[0].wanted, 20);
  gate.TookAhead({{10, 20, 100.0, 1000.0}}, later);
  // The claim found only two of its jobs.
  RateGate::Split split = gate.Admit({Job(2, 10, 100), Job(3, 10, 100)}, {}, later);
  EXPECT_EQ(split.go.size(), 2u);
  ASSERT_EQ(split.refund.size(), 1u);
  EXPECT_EQ(split.refund[0].channel, 10);
  EXPECT_EQ(split.refund[0].wanted, 18);
  EXPECT_FALSE(gate.backlog(10));
  EXPECT_TRUE(gate.Ahead(later).empty());  // first contact again
}

TEST(RateGate, AHighLimitIsClaimedInBatchesOfATwentiethOfASecond) {
  RateGate gate;
  const auto now = Clock::now();
  // 1,000/s with a backlog, its bucket just emptied: the next claim is due when 50 tokens are
  // back (50 ms), not at each token (1 ms).
  gate.Admit({Job(1, 10, 1000), Job(2, 10, 1000)}, {{10, 1, 1000.0, 1000.0}}, now);
  const auto due = gate.next_due(now);
  EXPECT_GT(due, now + 45ms);
  EXPECT_LT(due, now + 55ms);
  EXPECT_TRUE(gate.Ahead(now + 20ms).empty());
  ASSERT_EQ(gate.Ahead(now + 51ms).size(), 1u);
}

TEST(RateGate, NarrowsAChannelInFlightToItsCountPlusItsTokensAndNeverWidensIt) {
  RateGate gate;
  const auto now = Clock::now();
  gate.Admit({Job(1, 10, 100)}, {{10, 1, 100.0, 990.0}}, now);  // one token of 100 left
  ClaimLimits limits;
  limits.channel_cap = 50;
  limits.channels_in_flight = {{10, 3}, {20, 1}};
  limits.channel_windows = {8, 4};
  limits.lend_windows = {8, 4};
  gate.Narrow(limits, now);
  EXPECT_EQ(WindowOf(limits, 10), 4);  // 3 in flight + 1 token
  EXPECT_EQ(limits.lend_windows[0], 0);
  EXPECT_EQ(WindowOf(limits, 20), 4);  // untouched
  EXPECT_EQ(limits.lend_windows[1], 4);
}

TEST(RateGate, ForgetsAChannelWhoseLimitWasRemovedOrWhoseBucketIsLongFull) {
  RateGate gate;
  const auto now = Clock::now();
  gate.Admit({Job(1, 10, 2), Job(2, 20, 2)}, {{10, 1, 2.0, 500.0}, {20, 1, 2.0, 500.0}}, now);
  EXPECT_EQ(gate.tracked(), 2u);
  gate.Admit({Job(3, 10, 2)}, {{10, 1, 0.0, 0.0}}, now);  // 10's limit removed
  EXPECT_EQ(gate.predicted(10, now), -1);
  // Each claim's Ahead() forgets what is long full and waits for nothing.
  EXPECT_TRUE(gate.Ahead(now + RateGate::kKeep + 1s).empty());
  ClaimLimits limits;
  gate.Narrow(limits, now + RateGate::kKeep + 1s);
  EXPECT_EQ(gate.tracked(), 0u);
  EXPECT_TRUE(limits.channels_in_flight.empty());
}

}  // namespace
}  // namespace bulkhead
