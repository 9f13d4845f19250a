// The completion writer against real PostgreSQL: a result the database refuses (or that cannot
// even be encoded) is isolated by halving its batch and quarantined, so the results around it
// are written and later ones keep flowing.
#include "completion_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "all_stores.h"
#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::AllStores;
using testing::DatabaseTest;
using testing::QueryValue;

class CompletionWriterTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    channel_ = testing::CreateChannel(db(), testing::CreateTenant(db(), "acme"));
  }

  // Enqueues `n` deliveries and claims them for node-a: jobs the writer may finish.
  std::vector<ClaimedJob> Claimed(int n) {
    Exec("SELECT bulkhead.enqueue(" + std::to_string(channel_) +
         ", '{}'::jsonb) FROM generate_series(1, " + std::to_string(n) + ")");
    AllStores store(db());
    return store.Claim("default", n, "node-a");
  }

  static AttemptResult Delivered(const ClaimedJob& job) {
    AttemptResult r;
    r.id = job.id;
    r.attempt = job.attempt;
    r.delivered = true;
    r.status = 204;
    r.duration_ms = 3;
    return r;
  }

  static AttemptResult Failed(const ClaimedJob& job, std::string error) {
    AttemptResult r;
    r.id = job.id;
    r.attempt = job.attempt;
    r.error = std::move(error);
    r.duration_ms = 3;
    r.retry_delay_ms = 60000;
    return r;
  }

  int64_t Count(const std::string& where) {
    return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE " + where);
  }

  CompletionWriter::Options WriterOptions() {
    CompletionWriter::Options options;
    options.database = conninfo();
    options.node = "node-a";
    options.batch_size = 500;
    options.flush_interval = std::chrono::milliseconds(5);
    return options;
  }

  int64_t channel_ = 0;
};

// curl's error buffer may hold bytes that are not UTF-8: the batch cannot be encoded. Before
// the fix the whole batch went back to the front and was retried for ever, and every later
// result waited behind it.
TEST_F(CompletionWriterTest, AResultWithInvalidUtf8IsQuarantinedAndTheOthersAreWritten) {
  std::vector<ClaimedJob> jobs = Claimed(40);
  ASSERT_EQ(jobs.size(), 40u);
  CompletionWriter writer(WriterOptions());
  for (size_t i = 0; i < jobs.size(); ++i) {
    writer.Add(i == 17 ? Failed(jobs[i], "tls: bad record \xff\xfe from peer")
                       : Delivered(jobs[i]));
  }
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(5)));
  EXPECT_EQ(Count("state = 'completed'"), 39);
  // The poisoned attempt is not lost: its job got its retry, with the text made storable.
  EXPECT_EQ(Count("id = " + std::to_string(jobs[17].id) +
                  " AND state = 'available' AND last_error LIKE 'tls: bad record % from peer%'"),
            1);

  // Later results are not stuck behind it.
  std::vector<ClaimedJob> more = Claimed(3);
  for (const auto& job : more) writer.Add(Delivered(job));
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(5)));
  EXPECT_EQ(Count("state = 'completed'"), 42);
}

// A NUL byte encodes (as \u0000) but PostgreSQL refuses it as text (SQLSTATE 22P05): a statement
// failure on the data, not the connection's.
TEST_F(CompletionWriterTest, AResultThePostgresRefusesIsIsolatedByHalvingTheBatch) {
  std::vector<ClaimedJob> jobs = Claimed(100);
  ASSERT_EQ(jobs.size(), 100u);
  CompletionWriter writer(WriterOptions());
  for (size_t i = 0; i < jobs.size(); ++i) {
    writer.Add(i == 3 || i == 70 ? Failed(jobs[i], std::string("reset\0by peer", 13))
                                 : Delivered(jobs[i]));
  }
  ASSERT_TRUE(writer.Drain(std::chrono::seconds(5)));
  EXPECT_EQ(Count("state = 'completed'"), 98);
  EXPECT_EQ(Count("state = 'available' AND last_error IS NOT NULL"), 2);
  EXPECT_EQ(Count("state = 'executing'"), 0);
}

}  // namespace
}  // namespace bulkhead
