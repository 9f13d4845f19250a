// QueueRunner's own logic, without a database: its store (MemoryRunnerStore), writer
// (MemoryResultRecorder) and keeper (MemoryBreakerLedger) in memory, its requests real, over
// loopback to the harness's HttpReceiver. That every claimed job is sent once and its result
// recorded, that a claim never asks for more than the free slots, that a lost connection costs
// no job, and that a stop hands back what is in flight with its attempt. What the claim takes
// from a real queue is queue_runner_test's and caps_test's, against real PostgreSQL.
//
// No test times anything: a wait's timeout only turns a runner that never gets there into a
// failure instead of a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "breaker_keeper.h"
#include "completion_writer.h"
#include "http_receiver.h"
#include "http_sender.h"
#include "memory_breaker_ledger.h"
#include "memory_result_recorder.h"
#include "memory_runner_store.h"
#include "network_guard.h"
#include "poll.h"
#include "queue_runner.h"

namespace bulkhead {
namespace {

using std::chrono::seconds;
using testing::HttpReceiver;
using testing::MemoryBreakerLedger;
using testing::MemoryResultRecorder;
using testing::MemoryRunnerStore;
using testing::Reply;

constexpr std::chrono::milliseconds kPatience{30000};
constexpr int64_t kChannel = 7;

// The runner and its collaborators in the node's order, in memory but for the sender; the
// poll is a minute, so only the start and Wake() make it claim.
class QueueRunnerLogic : public ::testing::Test {
 protected:
  void Start(int workers) {
    tier_.name = "default";
    tier_.workers = workers;
    tier_.stalled_after_ms = tier_.request_timeout_ms = 600000;  // nothing stalls meanwhile
    tier_.slow_call_ms = 600000;
    CompletionWriter::Options writer_options;
    writer_options.node = "node-a";
    writer_ = std::make_unique<CompletionWriter>(writer_options, recorder_.Recorder());
    BreakerKeeper::Options keeper_options;
    keeper_options.tiers = {tier_};
    keeper_ = std::make_unique<BreakerKeeper>(keeper_options, ledger_.Ledger());
    HttpSender::Options sender_options;
    sender_options.guard = NetworkGuard({std::get<Network>(ParseCidr("127.0.0.0/8"))});
    sender_ = std::make_unique<HttpSender>(std::move(sender_options));
    runner_ =
        std::make_unique<QueueRunner>(QueueRunner::Options{tier_, "node-a", seconds(60), nullptr},
                                      store_, *sender_, *writer_, *keeper_);
  }

  // The node's shutdown order: stop claiming, then the sender before the runner.
  void TearDown() override {
    if (runner_) runner_->StopClaiming();
    sender_.reset();
    runner_.reset();
    keeper_.reset();
    writer_.reset();
  }

  // The ids of every result recorded so far, delivered or not.
  std::vector<int64_t> Recorded() {
    std::vector<int64_t> ids;
    for (const auto& batch : recorder_.batches()) {
      for (const auto& result : batch) ids.push_back(result.id);
    }
    return ids;
  }

  MemoryRunnerStore store_;
  MemoryResultRecorder recorder_;
  MemoryBreakerLedger ledger_;
  TierOptions tier_;
  std::unique_ptr<HttpReceiver> receiver_;  // outlives the sender
  std::unique_ptr<CompletionWriter> writer_;
  std::unique_ptr<BreakerKeeper> keeper_;
  std::unique_ptr<HttpSender> sender_;
  std::unique_ptr<QueueRunner> runner_;
};

TEST_F(QueueRunnerLogic, EveryClaimedJobIsSentOnceAndItsResultRecorded) {
  receiver_ = std::make_unique<HttpReceiver>();
  for (int64_t id = 1; id <= 10; ++id) store_.Add(id, kChannel, receiver_->Url("/hook"));
  Start(4);
  ASSERT_TRUE(testing::PollUntil([&] { return Recorded().size() >= 10; }, kPatience));
  runner_->StopClaiming();
  std::vector<int64_t> ids = Recorded();
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(receiver_->request_count(), 10u);  // each sent once
  for (const auto& batch : recorder_.batches()) {
    for (const auto& result : batch) EXPECT_TRUE(result.delivered) << result.id;
  }
  // Never more than the free slots: 4 workers.
  for (int limit : store_.limits()) EXPECT_LE(limit, 4);
}

TEST_F(QueueRunnerLogic, ALostConnectionIsResetAndCostsNoJob) {
  receiver_ = std::make_unique<HttpReceiver>();
  store_.FailNext(2);
  for (int64_t id = 1; id <= 3; ++id) store_.Add(id, kChannel, receiver_->Url("/hook"));
  Start(4);
  ASSERT_TRUE(testing::PollUntil([&] { return Recorded().size() >= 3; }, kPatience));
  EXPECT_GE(store_.resets(), 2);
  EXPECT_EQ(receiver_->request_count(), 3u);
}

TEST_F(QueueRunnerLogic, AStopHandsBackWhatIsInFlightWithItsAttempt) {
  receiver_ = std::make_unique<HttpReceiver>([](const testing::ReceivedRequest&) {
    Reply reply;
    reply.hang = true;
    return reply;
  });
  store_.Add(1, kChannel, receiver_->Url("/hook"));
  store_.Add(2, kChannel, receiver_->Url("/hook"));
  Start(4);
  ASSERT_TRUE(receiver_->WaitForRequests(2, kPatience));
  runner_->StopClaiming();
  EXPECT_EQ(runner_->HandBackInFlight(), 2);
  std::vector<OwnedJob> back = store_.handed_back();
  ASSERT_EQ(back.size(), 2u);
  std::set<int64_t> ids;
  for (const OwnedJob& job : back) {
    ids.insert(job.id);
    EXPECT_EQ(job.attempt, 1);  // the attempt it was sent as: not spent
  }
  EXPECT_EQ(ids, (std::set<int64_t>{1, 2}));
  EXPECT_TRUE(Recorded().empty());  // nothing was answered
}

}  // namespace
}  // namespace bulkhead
