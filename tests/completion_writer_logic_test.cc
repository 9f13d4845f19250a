// CompletionWriter's own logic, in memory (MemoryResultRecorder): when a batch goes out, that a
// lost connection loses no result, that a poisoned result is set aside while the rest of its
// batch is recorded, and which jobs the writer holds while a batch is being written. What the
// statement does with the results is completion_writer_test's, against real PostgreSQL.
//
// No test times anything: a wait's timeout only turns a writer that never gets there into a
// failure instead of a hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "completion_writer.h"
#include "memory_result_recorder.h"
#include "poll.h"

namespace bulkhead {
namespace {

using testing::MemoryResultRecorder;

constexpr std::chrono::milliseconds kPatience{30000};  // a broken writer fails, never hangs
constexpr std::chrono::hours kNever{1};                // a flush interval no test reaches

CompletionWriter::Options WriterOptions(int batch_size, std::chrono::milliseconds flush) {
  CompletionWriter::Options options;
  options.node = "node-a";
  options.batch_size = batch_size;
  options.flush_interval = flush;
  return options;
}

AttemptResult Failed(int64_t job, std::string error = "HTTP 503") {
  AttemptResult result;
  result.id = job;
  result.attempt = 1;
  result.status = 503;
  result.error = std::move(error);
  result.retry_delay_ms = 1000;
  return result;
}

std::vector<int64_t> Jobs(const std::vector<AttemptResult>& batch) {
  std::vector<int64_t> jobs;
  for (const auto& result : batch) jobs.push_back(result.id);
  return jobs;
}

TEST(CompletionWriterLogic, AFullBatchGoesOutWithoutWaitingForTheFlush) {
  MemoryResultRecorder memory;
  CompletionWriter writer(WriterOptions(3, kNever), memory.Recorder());
  for (int64_t job = 1; job <= 6; ++job) writer.Add(Failed(job));
  ASSERT_TRUE(writer.Drain(kPatience));
  auto batches = memory.batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(Jobs(batches[0]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Jobs(batches[1]), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(memory.node(), "node-a");  // the fence: this node's claims only
  EXPECT_EQ(writer.written(), 6u);
}

TEST(CompletionWriterLogic, FewerResultsThanABatchGoOutAtTheFlush) {
  MemoryResultRecorder memory;
  CompletionWriter writer(WriterOptions(500, std::chrono::milliseconds(1)), memory.Recorder());
  for (int64_t job = 1; job <= 5; ++job) writer.Add(Failed(job));
  // No Drain(), no full batch: only the flush interval sends them.
  ASSERT_TRUE(memory.WaitForResults(5, kPatience));
  auto results = memory.results();
  EXPECT_EQ(results.size(), 5u);
  for (const auto& [job, recorded] : results) EXPECT_EQ(recorded.size(), 1u) << job;
}

TEST(CompletionWriterLogic, ALostConnectionIsRetriedAndLosesNoResult) {
  MemoryResultRecorder memory;
  memory.FailNext(2);
  CompletionWriter writer(WriterOptions(500, std::chrono::milliseconds(1)), memory.Recorder());
  for (int64_t job = 1; job <= 10; ++job) writer.Add(Failed(job));
  ASSERT_TRUE(writer.Drain(kPatience));
  auto results = memory.results();
  EXPECT_EQ(results.size(), 10u);
  for (const auto& [job, recorded] : results) EXPECT_EQ(recorded.size(), 1u) << job;
  EXPECT_EQ(memory.resets(), 2);  // one new connection after each failure
  EXPECT_EQ(writer.written(), 10u);
  EXPECT_EQ(writer.quarantined(), 0u);  // the database's failure, not the data's
}

TEST(CompletionWriterLogic, APoisonedResultIsQuarantinedAndTheRestOfItsBatchIsRecorded) {
  MemoryResultRecorder memory;
  memory.Refuse(4, "tls: bad \xff record");
  CompletionWriter writer(WriterOptions(8, kNever), memory.Recorder());
  for (int64_t job = 1; job <= 8; ++job) {
    writer.Add(job == 4 ? Failed(job, "tls: bad \xff record") : Failed(job));
  }
  ASSERT_TRUE(writer.Drain(kPatience));
  auto results = memory.results();
  ASSERT_EQ(results.size(), 8u);
  for (const auto& [job, recorded] : results) {
    ASSERT_EQ(recorded.size(), 1u) << job;
    if (job != 4) {
      EXPECT_EQ(recorded[0].error, "HTTP 503") << job;
    }
  }
  // Recorded once more with its text made storable and a note saying why.
  EXPECT_EQ(results[4][0].error,
            "tls: bad \uFFFD record [the original error text could not be stored: SQLSTATE "
            "22021]");
  EXPECT_EQ(writer.quarantined(), 1u);
  EXPECT_EQ(memory.resets(), 0);  // a data failure keeps the connection
}

TEST(CompletionWriterLogic, TheJobsOfABatchBeingWrittenAndOfThoseWaitingAreHeld) {
  MemoryResultRecorder memory;
  memory.Hold();
  CompletionWriter writer(WriterOptions(2, kNever), memory.Recorder());
  writer.Add(Failed(1));
  writer.Add(Failed(2));  // a full batch: being written, held in Record()
  if (!memory.WaitUntilHeld(kPatience)) {
    memory.Release();
    FAIL() << "the full batch never reached the recorder";
  }
  writer.Add(Failed(3));  // waiting behind it
  std::vector<int64_t> held;
  writer.HeldJobs(&held);
  std::sort(held.begin(), held.end());
  EXPECT_EQ(held, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(writer.Saturated());  // a batch's worth unwritten: claims wait
  memory.Release();

  // Written, while 3 waits for a flush that does not come in this test.
  ASSERT_TRUE(testing::PollUntil([&] { return writer.written() == 2; }, kPatience));
  held.clear();
  writer.HeldJobs(&held);
  EXPECT_EQ(held, (std::vector<int64_t>{3}));
  EXPECT_FALSE(writer.Saturated());
}

}  // namespace
}  // namespace bulkhead
