#include "fleet_store.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "fleet_store_statements.h"
#include "named_queries.h"

namespace bulkhead {

const std::span<const std::string_view> FleetStore::kStatements = sql::fleet_store::kStatements;

FleetStore::FleetStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

void FleetStore::RegisterTiers(const std::vector<std::string>& tiers) {
  pqxx::work tx(conn_, "register_tiers");
  sql::RegisterTiers::Run(tx, {.tiers = nlohmann::json(tiers).dump()});
  tx.commit();
}

void FleetStore::RegisterNode(const std::string& node, const std::string& host, int pid,
                              const std::string& version, const std::vector<std::string>& tiers,
                              int64_t lease_ms) {
  pqxx::work tx(conn_, "register_node");
  sql::RegisterNode::Run(tx, {.node = node,
                              .host = host,
                              .pid = pid,
                              .version = version,
                              .tiers = nlohmann::json(tiers).dump(),
                              .lease_ms = static_cast<double>(lease_ms)});
  tx.commit();
}

bool FleetStore::Heartbeat(const std::string& node, int64_t lease_ms) {
  pqxx::work tx(conn_, "heartbeat");
  bool found =
      !sql::Heartbeat::Run(tx, {.node = node, .lease_ms = static_cast<double>(lease_ms)}).empty();
  tx.commit();
  return found;
}

Stranded FleetStore::ReturnStranded(const std::string& node, const std::vector<int64_t>& held,
                                    int64_t min_age_ms) {
  pqxx::work tx(conn_, "return_stranded");
  sql::ReturnStranded::Row row = sql::ReturnStranded::RunOne(
      tx, {.node = node, .held = held, .min_age_ms = static_cast<double>(min_age_ms)});
  tx.commit();
  return {row.jobs, std::move(row.ids)};
}

void FleetStore::RemoveNode(const std::string& node) {
  pqxx::work tx(conn_, "remove_node");
  sql::RemoveNode::Run(tx, {.node = node});
  tx.commit();
}

bool FleetStore::TryLead(const std::string& node) {
  pqxx::nontransaction tx(conn_, "lead");
  return sql::Lead::RunOne(tx, {.node = node}).led;
}

int FleetStore::DeposeLostLeader() {
  pqxx::nontransaction tx(conn_, "depose");
  return static_cast<int>(sql::Depose::RunOne(tx).deposed);
}

Rescue FleetStore::RescueLost(const std::string& also) {
  pqxx::work tx(conn_, "rescue_lost");
  sql::RescueLost::Row row = sql::RescueLost::RunOne(tx, {.also = also});
  tx.commit();
  return {row.jobs, row.discarded, std::move(row.nodes)};
}

int FleetStore::ForgetNodes(int64_t after_ms) {
  pqxx::work tx(conn_, "forget_nodes");
  int forgotten =
      static_cast<int>(sql::ForgetNodes::Run(tx, {.after_ms = static_cast<double>(after_ms)}));
  tx.commit();
  return forgotten;
}

int FleetStore::ForgetSleepers() {
  pqxx::nontransaction tx(conn_, "forget_sleepers");
  return static_cast<int>(sql::ForgetSleepers::Run(tx));
}

int FleetStore::PruneFinished(int64_t retention_ms, int batch, int64_t low, int64_t high) {
  pqxx::work tx(conn_, "prune_finished");
  const auto rows = sql::PruneFinished::Run(tx, {.retention_ms = static_cast<double>(retention_ms),
                                                 .batch = batch,
                                                 .low = low,
                                                 .high = high});
  tx.commit();
  return static_cast<int>(rows.front().pruned);
}

int64_t FleetStore::HighestJobId() {
  pqxx::nontransaction tx(conn_, "highest_job_id");
  return sql::HighestJobId::RunOne(tx).id;
}

std::vector<JobRange> FleetStore::JobRanges() {
  pqxx::nontransaction tx(conn_, "job_ranges");
  std::vector<JobRange> ranges;
  for (sql::JobRanges::Row& row : sql::JobRanges::Run(tx)) {
    ranges.push_back({std::move(row.range_name), row.low, row.high, row.is_default});
  }
  return ranges;
}

void FleetStore::AddJobRange(int64_t low, int64_t high) {
  pqxx::nontransaction tx(conn_, "add_job_range");
  sql::AddJobRange::RunOne(tx, {.low = low, .high = high});
}

RangeFacts FleetStore::ReadRangeFacts(int64_t low, int64_t high, int64_t retention_ms) {
  pqxx::read_transaction tx(conn_, "range_facts");
  const sql::RangeFacts::Row row = sql::RangeFacts::RunOne(
      tx, {.low = low, .high = high, .retention_ms = static_cast<double>(retention_ms)});
  tx.commit();
  return {row.expired, row.live};
}

bool FleetStore::DropJobRange(const JobRange& range, int64_t retention_ms) {
  // Two transactions: the keys' delete reads the range, and the drop's lock, which holds every
  // statement on jobs, is taken only for the drop's own check.
  pqxx::nontransaction tx(conn_, "drop_job_range");
  sql::ForgetRangeKeys::Run(tx, {.low = range.low.value_or(0), .high = range.high.value_or(0)});
  return sql::DropJobRange::RunOne(
             tx, {.range_name = range.name, .retention_ms = static_cast<double>(retention_ms)})
      .dropped;
}

int FleetStore::RaiseClaimFloor(int64_t step) {
  // Autocommit: the highest id is read before the lockers are listed, and the walk's snapshot
  // is taken after the bound it reads was settled.
  pqxx::nontransaction tx(conn_, "claim_floor");
  const int64_t highest = sql::HighestJobId::RunOne(tx).id;
  sql::SettleClaimFloor::RunOne(tx, {.highest = highest});
  return static_cast<int>(sql::AdvanceClaimFloor::Run(tx, {.step = step}));
}

int FleetStore::PruneOldSecrets() {
  pqxx::work tx(conn_, "prune_old_secrets");
  const sql::PruneOldSecrets::Row row = sql::PruneOldSecrets::RunOne(tx);
  tx.commit();
  return static_cast<int>(row.pruned);
}

std::pair<int64_t, int64_t> FleetStore::ReconcileParked() {
  pqxx::work tx(conn_, "reconcile_parked");
  const sql::ReconcileParked::Row row = sql::ReconcileParked::RunOne(tx);
  tx.commit();
  return {row.jobs, row.channels};
}

std::pair<int64_t, int64_t> FleetStore::ParkBehindOpenBreakers() {
  pqxx::work tx(conn_, "park_behind_open");
  const sql::ParkBehindOpen::Row row = sql::ParkBehindOpen::RunOne(tx);
  tx.commit();
  return {row.jobs, row.channels};
}

FleetCounts FleetStore::SampleFleet() {
  // One read-only transaction: the five samples see one snapshot.
  pqxx::read_transaction tx(conn_, "sample_fleet");
  // No sort: on jobs in ranges (migration 0021) the oldest due job of a tier (SampleLag) is a
  // Merge Append of each range's jobs_claim, read to its first row. Statistics that call the
  // ranges nearly empty (a burst not yet analyzed) make an Append of every available row under a
  // Sort look as cheap, and that read every waiting job (2,152 buffers for 2 rows beside
  // 60,000 available, plan_cost_test). With sorts off, the ranges' indexes give the order.
  tx.exec0("SET LOCAL enable_sort = off");
  FleetCounts counts;
  for (sql::SampleJobs::Row& row : sql::SampleJobs::Run(tx)) {
    counts.jobs.push_back({std::move(row.tier), std::move(row.state), row.n});
  }
  for (sql::SampleBreakers::Row& row : sql::SampleBreakers::Run(tx)) {
    counts.breakers.push_back({std::move(row.tier), std::move(row.state), row.n});
  }
  for (sql::SampleLag::Row& row : sql::SampleLag::Run(tx)) {
    counts.lag_s.emplace_back(std::move(row.tier), row.lag_s);
  }
  for (sql::SampleOrdering::Row& row : sql::SampleOrdering::Run(tx)) {
    counts.ordering_held.emplace_back(std::move(row.tier), row.held);
  }
  counts.claim_floor_age_s = sql::SampleClaimFloor::RunOne(tx).age_s;
  tx.commit();
  return counts;
}

}  // namespace bulkhead
