// The breaker keeper's queue against real PostgreSQL: a request the database refuses for its
// data is set aside, so the requests behind it are still made.
#include "breaker_keeper.h"

#include <gtest/gtest.h>

#include <string>

#include "database_test.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DatabaseTest;
using testing::QueryValue;

class BreakerKeeperTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    int64_t tenant = testing::CreateTenant(db(), "acme");
    first_ = testing::CreateChannel(db(), tenant);
    second_ = testing::CreateChannel(db(), tenant);
    tier_.name = "default";
  }

  std::string Breaker(int64_t channel) {
    return QueryValue<std::string>(db(),
                                   "SELECT breaker_state || ' ' || coalesce(breaker_reason, "
                                   "'') FROM bulkhead.channels WHERE id = " +
                                       std::to_string(channel));
  }

  TierOptions tier_;
  int64_t first_ = 0;
  int64_t second_ = 0;
};

// The reason holds bytes that are not UTF-8: PostgreSQL refuses the parameter (22021). Before
// the fix the request stayed at the front of the queue for ever and no later one was made.
TEST_F(BreakerKeeperTest, ARequestRefusedForItsTextIsQuarantinedAndTheQueueMovesOn) {
  BreakerKeeper keeper(BreakerKeeper::Options{conninfo(), {tier_}});
  keeper.RequestOpen("default", {first_, "5 failures in a row: tls: bad \xff\xfe record"});
  keeper.RequestOpen("default", {second_, "5 failures in a row: HTTP 503"});
  ASSERT_TRUE(WaitFor("(SELECT count(*) = 2 FROM bulkhead.channels WHERE breaker_state = 'open')",
                      std::chrono::seconds(5)))
      << Breaker(first_) << " / " << Breaker(second_);
  EXPECT_EQ(Breaker(second_), "open 5 failures in a row: HTTP 503");
  // Made with the text made storable, and a note saying so.
  EXPECT_EQ(Breaker(first_).rfind("open 5 failures in a row: tls: bad \uFFFD\uFFFD record [", 0),
            0u)
      << Breaker(first_);
  EXPECT_EQ(keeper.quarantined(), 1u);
  EXPECT_EQ(keeper.opened(), 2u);
}

}  // namespace
}  // namespace bulkhead
