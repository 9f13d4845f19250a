// The claim floor (ADR 0027, migration 0017) against real PostgreSQL: the leader raises it past
// finished jobs and never past one that can still be claimed, an enqueue not yet committed
// holds it below its id, a replay lowers it (also against a leader that read the table before
// the replay committed), the claim reads from the floor it is given and returns the floor as
// it is, and on a table in ranges of ids the claim's generic plan leaves the ranges below the
// floor out when it starts (run by the Release build on tests/schema/jobs_in_ranges.sql).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "admin_jobs_store.h"
#include "claim_store.h"
#include "delivery_test.h"
#include "fleet_store.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using testing::DeliveryTest;
using testing::QueryValue;

// The leader's step (maintenance.cc), which none of these tests comes near.
constexpr int64_t kStep = 100'000;

class ClaimFloorTest : public DeliveryTest {
 protected:
  void SetUp() override {
    DeliveryTest::SetUp();
    channel_ = testing::CreateChannel(db(), testing::CreateTenant(db(), "floor"));
    leader_conn_ = Connect();
    leader_ = std::make_unique<FleetStore>(*leader_conn_);
  }

  // `n` rounds of the leader's floor (RaiseClaimFloor). A job committed before the first round
  // is below the settled bound from the second on.
  void Raise(int n = 2) {
    for (int i = 0; i < n; ++i) leader_->RaiseClaimFloor(kStep);
  }
  int64_t Floor() { return QueryValue<int64_t>(db(), "SELECT floor_id FROM bulkhead.claim_floor"); }

  // Moves job `id` to `state` with the columns that state's checks ask for.
  void SetState(int64_t id, const std::string& state) {
    const std::string finished =
        state == "completed" || state == "discarded" || state == "cancelled" ? "now()" : "NULL";
    Exec("UPDATE bulkhead.jobs SET state = '" + state + "', finished_at = " + finished +
         ", last_error = " + (state == "discarded" ? "'gone'" : "last_error") +
         (state == "executing" ? ", attempt = 1, attempted_at = now(), attempted_by = 'n'" : "") +
         " WHERE id = " + std::to_string(id));
  }

  // One claim of up to 100 jobs through a ClaimStore on its own connection, from `floor`: the
  // ids it took, in order.
  std::vector<int64_t> ClaimFrom(int64_t floor, int64_t* floor_now = nullptr) {
    if (!claim_conn_) claim_conn_ = Connect();
    ClaimStore store(*claim_conn_);
    ClaimLimits limits;
    limits.claim_floor = floor;
    ClaimWindows windows;
    std::vector<int64_t> ids;
    for (const ClaimedJob& job :
         store.Claim("default", 100, "node-a", limits, nullptr, nullptr, &windows)) {
      ids.push_back(job.id);
    }
    if (floor_now) *floor_now = windows.claim_floor;
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  int64_t channel_ = 0;
  std::unique_ptr<pqxx::connection> leader_conn_, claim_conn_;
  std::unique_ptr<FleetStore> leader_;
};

TEST_F(ClaimFloorTest, RisesPastFinishedJobsAndStopsAtTheFirstThatCanStillBeClaimed) {
  const std::vector<int64_t> ids = EnqueueMany(channel_, 10);
  EXPECT_EQ(Floor(), 0);
  for (int i = 0; i < 4; ++i) SetState(ids[i], i % 2 ? "completed" : "cancelled");
  SetState(ids[4], "parked");
  Raise();
  EXPECT_EQ(Floor(), ids[4]) << "a parked job can still be claimed";

  SetState(ids[4], "discarded");
  SetState(ids[5], "completed");
  SetState(ids[6], "executing");
  Raise();
  EXPECT_EQ(Floor(), ids[6]) << "a job in flight can still come back to the queue";

  for (int i = 6; i < 10; ++i) SetState(ids[i], "completed");
  Raise();
  EXPECT_EQ(Floor(), ids[9] + 1) << "every job finished: the floor is past the last";

  // It never goes down by itself, and a new job is above it.
  const int64_t next = EnqueueOne(channel_);
  Raise();
  EXPECT_EQ(Floor(), next);
  EXPECT_EQ(ClaimFrom(Floor()), std::vector<int64_t>{next});
}

TEST_F(ClaimFloorTest, AnEnqueueNotYetCommittedHoldsTheFloorBelowItsId) {
  const std::vector<int64_t> before = EnqueueMany(channel_, 3);
  for (int64_t id : before) SetState(id, "completed");
  Raise();
  ASSERT_EQ(Floor(), before.back() + 1);

  // An application's transaction enqueues and stays open; jobs enqueued after it commit and
  // finish, so the highest committed id passes the open one.
  auto app = Connect();
  pqxx::work open(*app, "open_enqueue");
  const int64_t held =
      open.exec1("SELECT bulkhead.enqueue(" + std::to_string(channel_) + ", '{}'::jsonb)")[0]
          .as<int64_t>();
  const std::vector<int64_t> after = EnqueueMany(channel_, 3);
  ASSERT_GT(after.front(), held);
  for (int64_t id : after) SetState(id, "completed");
  Raise(4);
  EXPECT_LE(Floor(), held) << "the floor passed a job whose enqueue has not committed";

  open.commit();
  Raise();
  EXPECT_EQ(Floor(), held);
  int64_t floor_now = 0;
  EXPECT_EQ(ClaimFrom(Floor(), &floor_now), std::vector<int64_t>{held});
  EXPECT_EQ(floor_now, held);
}

// enqueue_many draws its ids and then routes each channel (route() reads channels and tenants)
// before it inserts. A leader's rounds in that gap must see the call as a transaction that can
// still commit an id: before migration 0018 it held no lock on jobs there, and the floor rose
// past the ids it had drawn, so its job committed below the floor and no claim read it.
TEST_F(ClaimFloorTest, AnEnqueueManyBetweenDrawingItsIdsAndInsertingHoldsTheFloorBelowThem) {
  const std::vector<int64_t> before = EnqueueMany(channel_, 3);
  for (int64_t id : before) SetState(id, "completed");
  Raise();
  ASSERT_EQ(Floor(), before.back() + 1);

  // The tenants held, so that the call's route() waits, after its ids are drawn.
  auto blocker = Connect();
  pqxx::work hold(*blocker, "hold_tenants");
  hold.exec0("LOCK TABLE bulkhead.tenants IN ACCESS EXCLUSIVE MODE");
  auto app = Connect();
  const int app_pid = app->backendpid();
  std::vector<int64_t> drawn;
  std::string error;
  std::thread enqueuer([&] {
    try {
      pqxx::work w(*app, "enqueue_many");
      for (const auto& row :
           w.exec("SELECT unnest(bulkhead.enqueue_many(ARRAY[" + std::to_string(channel_) +
                  "]::bigint[], ARRAY['{}'::jsonb]))")) {
        drawn.push_back(row[0].as<int64_t>());
      }
      w.commit();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // The lock let go and the call waited for on every way out of this test.
  const std::function<void()> release = [&] {
    if (!enqueuer.joinable()) return;
    try {
      hold.commit();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
    enqueuer.join();
  };
  struct AtExit {
    const std::function<void()>& run;
    ~AtExit() { run(); }
  } at_exit{release};
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    waiting = QueryValue<bool>(db(), "SELECT count(*) = 1 FROM pg_stat_activity WHERE pid = " +
                                         std::to_string(app_pid) + " AND wait_event_type = 'Lock'");
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!waiting) {
    release();
    FAIL() << "enqueue_many never waited for the tenants: " << error;
  }

  // A job inserted by hand (no route(), so the tenants' lock does not stop it) commits above
  // the id the call drew, and finishes.
  const int64_t later = QueryValue<int64_t>(
      db(),
      "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, payload) "
      "SELECT 'default', tenant_id, id, '{}' FROM bulkhead.channels WHERE id = " +
          std::to_string(channel_) + " RETURNING id");
  EXPECT_EQ(later, before.back() + 2) << "the call had not drawn its id when it waited";
  SetState(later, "completed");
  Raise(4);
  EXPECT_LE(Floor(), before.back() + 1) << "the floor passed an id enqueue_many had drawn";

  release();
  EXPECT_EQ(error, "");
  ASSERT_EQ(drawn, std::vector<int64_t>{before.back() + 1});
  Raise();
  EXPECT_EQ(ClaimFrom(Floor()), drawn);
}

TEST_F(ClaimFloorTest, TheClaimReadsFromTheFloorItIsGivenAndReturnsTheFloorAsItIs) {
  const std::vector<int64_t> ids = EnqueueMany(channel_, 5);
  SetState(ids[0], "completed");
  Raise();
  ASSERT_EQ(Floor(), ids[1]);
  // A floor passed too high (as after a replay the runner has not seen) leaves what is below
  // it for the next claim, and tells the runner the floor.
  int64_t floor_now = 0;
  EXPECT_EQ(ClaimFrom(ids[3], &floor_now), (std::vector<int64_t>{ids[3], ids[4]}));
  EXPECT_EQ(floor_now, ids[1]);
  EXPECT_EQ(ClaimFrom(floor_now), (std::vector<int64_t>{ids[1], ids[2]}));
}

TEST_F(ClaimFloorTest, AReplayLowersTheFloorToTheOldestJobItReplays) {
  const std::vector<int64_t> ids = EnqueueMany(channel_, 4);
  SetState(ids[0], "discarded");
  SetState(ids[1], "discarded");
  SetState(ids[2], "completed");
  Raise();
  ASSERT_EQ(Floor(), ids[3]);
  const int64_t generation =
      QueryValue<int64_t>(db(), "SELECT generation FROM bulkhead.claim_floor");

  AdminJobsStore admin(db());
  JobSelector one;
  one.id = ids[1];
  EXPECT_EQ(admin.Replay(one).jobs, 1);
  EXPECT_EQ(Floor(), ids[1]);
  EXPECT_EQ(QueryValue<int64_t>(db(), "SELECT generation FROM bulkhead.claim_floor"),
            generation + 1);

  // A runner still passing the old floor misses it once and learns the new floor.
  int64_t floor_now = 0;
  EXPECT_EQ(ClaimFrom(ids[3], &floor_now), std::vector<int64_t>{ids[3]});
  EXPECT_EQ(floor_now, ids[1]);
  EXPECT_EQ(ClaimFrom(floor_now), std::vector<int64_t>{ids[1]});

  // The leader does not raise it past the replayed job while it waits.
  Raise();
  EXPECT_EQ(Floor(), ids[1]);
}

TEST_F(ClaimFloorTest, ALeaderThatReadTheTableBeforeAReplayCommittedLeavesTheFloorAlone) {
  const std::vector<int64_t> ids = EnqueueMany(channel_, 6);
  SetState(ids[0], "discarded");
  SetState(ids[1], "completed");
  SetState(ids[2], "completed");
  Raise(3);
  ASSERT_EQ(Floor(), ids[3]);
  SetState(ids[3], "completed");
  SetState(ids[4], "completed");  // the next advance would take the floor to ids[5]

  // The replay of ids[0], not committed yet, has lowered the floor in its transaction.
  auto op = Connect();
  AdminJobsStore admin(*op);
  pqxx::work replay(*op, "replay_open");
  const std::optional<int64_t> none;
  const std::optional<std::string> no_time;
  replay.exec_prepared("replay", ids[0], none, none, no_time, none, no_time, none, 10);

  // The leader's advance takes its snapshot now, sees ids[0] discarded, and waits for the
  // floor's row; the replay commits; the advance, checking the row's newest version, finds
  // another generation and changes nothing.
  const int leader_pid = leader_conn_->backendpid();
  std::thread advance(
      [&] { pqxx::nontransaction(*leader_conn_).exec_prepared("advance_claim_floor", kStep); });
  const bool waited =
      WaitFor("EXISTS (SELECT FROM pg_stat_activity WHERE pid = " + std::to_string(leader_pid) +
              " AND wait_event_type = 'Lock')");
  replay.commit();
  advance.join();
  ASSERT_TRUE(waited) << "the advance never waited for the replay's row";
  EXPECT_EQ(Floor(), ids[0]);
  EXPECT_EQ(ClaimFrom(Floor()), (std::vector<int64_t>{ids[0], ids[5]}));
}

// The claim's generic plan, as a runner's connection makes it (seq scans off), reads every table
// by an index: a seq scan there costs 10^10, which puts the plan past jit_above_cost, and
// PostgreSQL then JIT-compiles the claim at every call (the floor's one-row table, read without
// its key, did: 2.5 s a claim, 8 s on ranges).
TEST_F(ClaimFloorTest, TheClaimsPlanReadsTheFloorByItsKeyAndStaysBelowTheCostOfJit) {
  EnqueueMany(channel_, 3);
  ClaimFrom(0);
  pqxx::work tx(*claim_conn_, "explain_claim");
  const std::string plan =
      tx.exec1(
            "EXPLAIN (FORMAT JSON) EXECUTE claim('default', 100, 'node-a', '{}', '{}', '{}', "
            "'{}', 100, 100, '{}', 100, 0, '{}', 1000, 0, 0, 200, 0)")[0]
          .as<std::string>();
  const double jit_above =
      tx.exec1("SELECT current_setting('jit_above_cost')::float8")[0].as<double>();
  EXPECT_EQ(plan.find("\"Seq Scan\""), std::string::npos) << plan;
  const size_t at = plan.find("\"Total Cost\": ");
  ASSERT_NE(at, std::string::npos) << plan;
  EXPECT_LT(std::stod(plan.substr(at + 14)), jit_above) << plan.substr(0, 400);
}

// On jobs in ranges of ids (tests/schema/jobs_in_ranges.sql: ranges of 4 ids), the claim's
// generic plan starts with the ranges below its floor pruned away. On the table as migrated
// (jobs_first and the default range) there is nothing to prune: the case is skipped there.
TEST_F(ClaimFloorTest, OnRangesTheClaimsGenericPlanLeavesTheRangesBelowTheFloorOut) {
  if (QueryValue<int>(db(), "SELECT count(*) FROM bulkhead.job_ranges()") < 3) {
    GTEST_SKIP() << "bulkhead.jobs is jobs_first and the default range here; the _on_ranges run "
                    "holds this";
  }
  const std::vector<int64_t> ids = EnqueueMany(channel_, 40);
  for (int i = 0; i < 30; ++i) SetState(ids[i], "completed");
  Raise();
  ASSERT_EQ(Floor(), ids[30]);

  // The claiming connection as a runner leaves it: generic plans, after a first claim.
  ClaimFrom(0);  // takes ids[30..39]
  Exec(
      "UPDATE bulkhead.jobs SET state = 'available', attempt = 0, attempted_at = NULL, "
      "attempted_by = NULL WHERE state = 'executing'");
  auto removed = [&](int64_t floor) {
    pqxx::work tx(*claim_conn_, "explain_claim");
    int n = 0;
    for (const auto& row : tx.exec(
             "EXPLAIN EXECUTE claim('default', 100, 'node-a', '{}', '{}', '{}', '{}', 100, 100, "
             "'{}', 100, 0, '{}', 1000, 0, 0, 200, " +
             std::to_string(floor) + ")")) {
      if (row[0].as<std::string>().find("Subplans Removed") != std::string::npos) ++n;
    }
    return n;
  };
  EXPECT_EQ(removed(0), 0);
  EXPECT_GE(removed(Floor()), 3) << "the windows, the lock step and the update prune at start";
  EXPECT_EQ(ClaimFrom(Floor()).size(), 10u);
}

}  // namespace
}  // namespace bulkhead
