// Claims of several nodes on one database against real PostgreSQL: a claim never locks a row
// that another node took after the claim's snapshot was taken (claim_fragments.sql, the fragment
// untouched), so the other node's result write for that row never waits for it.
//
// Nor does a claim's window spend its look-ahead on rows another claim holds: it reads past
// them, as the lock step would leave them anyway.
//
// A READ COMMITTED claim cannot be stopped between its snapshot and its locks, so the tests
// take the snapshot in a REPEATABLE READ transaction, let another node claim, and then run the
// claim statement in that transaction. There a lock on a row changed since the snapshot is an
// error (40001, could not serialize access), where READ COMMITTED would have locked the newest
// version and held it: the claim must leave the row before it tries.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "claim_store.h"
#include "delivery_test.h"
#include "skip_scan_cursor.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DeliveryTest;

class ClaimRaceTest : public DeliveryTest {
 protected:
  // The claim statement (prepared as "claim" by a ClaimStore on `tx`'s connection) as a runner
  // sends it for `node` with nothing in flight and the caps out of the way, run in `tx`: $1
  // queue, $2 limit, $3 node, $4–$7 nothing in flight, $8 and $9 caps of 100, $10 windows, $11
  // first window, $12 no lending, $13 lend windows, $14 look-ahead, $15–$16 the skip scan from
  // the start, $17 its bound, $18 no claim floor. The ids it took, in order.
  static std::vector<int64_t> ClaimIn(pqxx::transaction_base& tx, const std::string& node,
                                      int limit) {
    std::vector<int64_t> ids;
    for (const auto& row :
         tx.exec_prepared("claim", "default", limit, node, "{}", "{}", "{}", "{}", 100, 100, "{}",
                          100, 0, "{}", 1000, 0, 0, ClaimLimits::HeadsFor(limit), 0)) {
      if (!row["id"].is_null()) ids.push_back(row["id"].as<int64_t>());
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }
};

TEST_F(ClaimRaceTest, AClaimLeavesARowAnotherNodeTookAfterItsSnapshotAndLocksNothingOfIt) {
  int64_t channel = testing::CreateChannel(db(), testing::CreateTenant(db(), "t"));
  std::vector<int64_t> ids = EnqueueMany(channel, 3);
  auto a = Connect(), b = Connect();
  ClaimStore node_a(*a), node_b(*b);

  pqxx::transaction<pqxx::isolation_level::repeatable_read> claim(*a, "claim_race");
  claim.exec("SELECT 1");  // the snapshot: all three available
  std::vector<ClaimedJob> taken = node_b.Claim("default", 1, "node-b");
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].id, ids[0]);

  // Node a's claim still sees ids[0] available; it takes the other two and leaves that one
  // before locking it (locking it here would raise 40001).
  EXPECT_EQ(ClaimIn(claim, "node-a", 3), (std::vector<int64_t>{ids[1], ids[2]}));

  // Nothing of node a's open transaction holds ids[0]: node b can write to it at once, as its
  // result write does (lock_timeout: a wait would fail the update instead of hanging).
  pqxx::work write(*b, "write");
  write.exec("SET LOCAL lock_timeout = '2s'");
  EXPECT_EQ(write
                .exec("UPDATE bulkhead.jobs SET attempted_at = now() WHERE id = " +
                      std::to_string(ids[0]) + " AND attempted_by = 'node-b'")
                .affected_rows(),
            1u);
  write.commit();
  claim.commit();
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-a'"), 2);
  EXPECT_EQ(Count("state = 'executing' AND attempted_by = 'node-b'"), 1);
}

TEST_F(ClaimRaceTest, RowsThatEndedClaimsLockedAndLeftAreClaimedAsBefore) {
  // A claim that locked rows and left them (held back by a cap) leaves its transaction id in
  // their xmax; once that claim has ended, the rows are as claimable as untouched ones.
  int64_t channel = testing::CreateChannel(db(), testing::CreateTenant(db(), "t"));
  std::vector<int64_t> ids = EnqueueMany(channel, 6);
  ClaimStore store(db());
  ClaimLimits capped;
  capped.channel_cap = 2;
  capped.tenant_cap = 100;
  int held_back = 0;
  EXPECT_EQ(store.Claim("default", 6, "node-a", capped, nullptr, &held_back).size(), 2u);
  EXPECT_GT(held_back, 0);
  EXPECT_GT(testing::QueryValue<int64_t>(db(),
                                         "SELECT count(*) FROM bulkhead.job_rows "
                                         "WHERE state = 'available' AND xmax <> '0'"),
            0);

  auto other = Connect();
  ClaimStore node_b(*other);  // prepares the claim on `other`
  pqxx::transaction<pqxx::isolation_level::repeatable_read> claim(*other, "claim_after");
  EXPECT_EQ(ClaimIn(claim, "node-b", 6), (std::vector<int64_t>{ids[2], ids[3], ids[4], ids[5]}));
  claim.commit();
}

TEST_F(ClaimRaceTest, AWindowReadsPastRowsAnotherClaimHoldsWithoutSpendingItsLookAhead) {
  // Another node's claim holds the first 20 rows (locked, not yet committed). A front of 5 at
  // the short look-ahead reads 5 + 10 rows: had the held rows counted, it would have read only
  // them and taken nothing; it takes the 5 after them.
  int64_t channel = testing::CreateChannel(db(), testing::CreateTenant(db(), "t"));
  std::vector<int64_t> ids = EnqueueMany(channel, 30);
  auto other = Connect();
  pqxx::work holder(*other, "holder");
  holder.exec("SELECT id FROM bulkhead.jobs WHERE id <= " + std::to_string(ids[19]) +
              " FOR UPDATE");

  ClaimStore store(db());
  ClaimLimits limits;
  limits.look_ahead = ClaimLimits::kShortLookAhead;
  for (bool front : {true, false}) {
    SCOPED_TRACE(front ? "the front" : "the whole claim");
    limits.front = front;
    std::vector<ClaimedJob> taken = store.Claim("default", 5, front ? "node-a" : "node-b", limits);
    std::vector<int64_t> got;
    for (const auto& job : taken) got.push_back(job.id);
    std::sort(got.begin(), got.end());
    const size_t first = front ? 20 : 25;
    EXPECT_EQ(got, std::vector<int64_t>(ids.begin() + first, ids.begin() + first + 5));
  }
  holder.commit();
  EXPECT_EQ(Count("state = 'executing'"), 10);
}

}  // namespace
}  // namespace bulkhead
