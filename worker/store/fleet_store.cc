#include "fleet_store.h"

#include <nlohmann/json.hpp>

#include "named_queries.h"
#include "pg_array.h"

namespace bulkhead {

FleetStore::FleetStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

void FleetStore::RegisterTiers(const std::vector<std::string>& tiers) {
  pqxx::work tx(conn_, "register_tiers");
  tx.exec_prepared("register_tiers", nlohmann::json(tiers).dump());
  tx.commit();
}

void FleetStore::RegisterNode(const std::string& node, const std::string& host, int pid,
                              const std::string& version, const std::vector<std::string>& tiers,
                              int64_t lease_ms) {
  pqxx::work tx(conn_, "register_node");
  tx.exec_prepared("register_node", node, host, pid, version, nlohmann::json(tiers).dump(),
                   lease_ms);
  tx.commit();
}

bool FleetStore::Heartbeat(const std::string& node, int64_t lease_ms) {
  pqxx::work tx(conn_, "heartbeat");
  bool found = !tx.exec_prepared("heartbeat", node, lease_ms).empty();
  tx.commit();
  return found;
}

Stranded FleetStore::ReturnStranded(const std::string& node, const std::vector<int64_t>& held,
                                    int64_t min_age_ms) {
  pqxx::work tx(conn_, "return_stranded");
  pqxx::row row = tx.exec_prepared1("return_stranded", node, PgArray(held), min_age_ms);
  tx.commit();
  return {row["jobs"].as<int64_t>(), row["ids"].as<std::string>()};
}

void FleetStore::RemoveNode(const std::string& node) {
  pqxx::work tx(conn_, "remove_node");
  tx.exec_prepared("remove_node", node);
  tx.commit();
}

bool FleetStore::TryLead(const std::string& node) {
  pqxx::nontransaction tx(conn_, "lead");
  return tx.exec_prepared1("lead", node)["led"].as<bool>();
}

int FleetStore::DeposeLostLeader() {
  pqxx::nontransaction tx(conn_, "depose");
  return tx.exec_prepared1("depose")["deposed"].as<int>();
}

Rescue FleetStore::RescueLost(const std::string& also) {
  pqxx::work tx(conn_, "rescue_lost");
  pqxx::row row = tx.exec_prepared1("rescue_lost", also);
  tx.commit();
  return {row["jobs"].as<int64_t>(), row["discarded"].as<int64_t>(),
          row["nodes"].as<std::string>()};
}

int FleetStore::ForgetNodes(int64_t after_ms) {
  pqxx::work tx(conn_, "forget_nodes");
  int forgotten = static_cast<int>(tx.exec_prepared("forget_nodes", after_ms).affected_rows());
  tx.commit();
  return forgotten;
}

int FleetStore::ForgetSleepers() {
  pqxx::nontransaction tx(conn_, "forget_sleepers");
  return static_cast<int>(tx.exec_prepared("forget_sleepers").affected_rows());
}

int FleetStore::PruneFinished(int64_t retention_ms, int batch) {
  pqxx::work tx(conn_, "prune_finished");
  int pruned =
      static_cast<int>(tx.exec_prepared("prune_finished", retention_ms, batch).affected_rows());
  tx.commit();
  return pruned;
}

int FleetStore::PruneOldSecrets() {
  pqxx::work tx(conn_, "prune_old_secrets");
  pqxx::row row = tx.exec_prepared1("prune_old_secrets");
  tx.commit();
  return row["pruned"].as<int>();
}

std::pair<int64_t, int64_t> FleetStore::ReconcileParked() {
  pqxx::work tx(conn_, "reconcile_parked");
  pqxx::row row = tx.exec_prepared1("reconcile_parked");
  tx.commit();
  return {row["jobs"].as<int64_t>(), row["channels"].as<int64_t>()};
}

std::pair<int64_t, int64_t> FleetStore::ParkBehindOpenBreakers() {
  pqxx::work tx(conn_, "park_behind_open");
  pqxx::row row = tx.exec_prepared1("park_behind_open");
  tx.commit();
  return {row["jobs"].as<int64_t>(), row["channels"].as<int64_t>()};
}

FleetCounts FleetStore::SampleFleet() {
  // One read-only transaction: the three samples see one snapshot.
  pqxx::read_transaction tx(conn_, "sample_fleet");
  FleetCounts counts;
  for (const auto& row : tx.exec_prepared("sample_jobs")) {
    counts.jobs.push_back(
        {row["tier"].as<std::string>(), row["state"].as<std::string>(), row["n"].as<int64_t>()});
  }
  for (const auto& row : tx.exec_prepared("sample_breakers")) {
    counts.breakers.push_back(
        {row["tier"].as<std::string>(), row["state"].as<std::string>(), row["n"].as<int64_t>()});
  }
  for (const auto& row : tx.exec_prepared("sample_lag")) {
    counts.lag_s.emplace_back(row["tier"].as<std::string>(), row["lag_s"].as<double>());
  }
  tx.commit();
  return counts;
}

}  // namespace bulkhead
