#include "migrator.h"

#include <chrono>
#include <string>

#include "logger.h"

namespace bulkhead {
namespace {

// pg_advisory_xact_lock key for migrations: "bulkhead" in ASCII, read as a bigint.
constexpr const char* kLockSql = "SELECT pg_advisory_xact_lock(7094703853087728996)";

// The runner's own objects. IF NOT EXISTS keeps it idempotent; client_min_messages keeps the
// "already exists, skipping" notices off the operator's terminal.
constexpr const char* kBootstrapSql = R"sql(
  SET LOCAL client_min_messages = warning;
  CREATE SCHEMA IF NOT EXISTS bulkhead;
  CREATE TABLE IF NOT EXISTS bulkhead.migrations (
    version    integer     PRIMARY KEY CHECK (version > 0),
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  );
)sql";

constexpr const char* kVersionSql = "SELECT coalesce(max(version), 0) FROM bulkhead.migrations";

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string Label(const Migration& m) {
  std::string number = std::to_string(m.version);
  return std::string(4 - std::min<size_t>(4, number.size()), '0') + number + "_" +
         std::string(m.name);
}

}  // namespace

Migrator::Migrator(pqxx::connection_base& conn, std::span<const Migration> migrations)
    : conn_(conn), migrations_(migrations) {}

int Migrator::BeginStep(pqxx::work& tx) {
  tx.exec(kLockSql);
  tx.exec(kBootstrapSql);
  return tx.exec1(kVersionSql)[0].as<int>();
}

std::string Migrator::NewerThanBinary(int database_version) const {
  return "the database schema is at version " + std::to_string(database_version) +
         ", newer than this binary's " + std::to_string(BinaryVersion()) +
         "; run a bulkhead release that knows it";
}

Migrator::Result Migrator::Up() {
  Result result;
  for (const Migration& m : migrations_) {
    auto start = std::chrono::steady_clock::now();
    pqxx::work tx(conn_, "migrate_up");
    int current = BeginStep(tx);
    if (current > BinaryVersion()) {
      result.error = NewerThanBinary(current);
      return result;
    }
    if (m.version <= current) continue;  // applied earlier, or by another node just now
    try {
      tx.exec(std::string(m.up_sql));
    } catch (const pqxx::sql_error& e) {
      // The first line only: a DETAIL may quote a failing row, and rows hold channel secrets.
      result.error =
          "migration " + Label(m) + " failed and was rolled back: " + FirstLine(e.what());
      return result;
    }
    tx.exec_params("INSERT INTO bulkhead.migrations (version, name) VALUES ($1, $2)", m.version,
                   std::string(m.name));
    tx.commit();
    result.steps.push_back({m.version, Label(m), MillisSince(start)});
  }
  return result;
}

Migrator::Result Migrator::Down(int steps) {
  Result result;
  for (int i = 0; i < steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    pqxx::work tx(conn_, "migrate_down");
    int current = BeginStep(tx);
    if (current == 0) break;  // nothing left to reverse
    if (current > BinaryVersion()) {
      result.error = NewerThanBinary(current);
      return result;
    }
    const Migration& m = migrations_[current - 1];
    try {
      tx.exec(std::string(m.down_sql));
    } catch (const pqxx::sql_error& e) {
      result.error =
          "reversing migration " + Label(m) + " failed and was rolled back: " + FirstLine(e.what());
      return result;
    }
    tx.exec_params("DELETE FROM bulkhead.migrations WHERE version = $1", m.version);
    tx.commit();
    result.steps.push_back({m.version, Label(m), MillisSince(start)});
  }
  return result;
}

int Migrator::DatabaseVersion() {
  pqxx::read_transaction tx(conn_, "migrate_version");
  if (tx.exec1("SELECT to_regclass('bulkhead.migrations') IS NULL")[0].as<bool>()) return 0;
  return tx.exec1(kVersionSql)[0].as<int>();
}

Migrator::Report Migrator::Status() {
  Report report{0, BinaryVersion(), {}};
  pqxx::read_transaction tx(conn_, "migrate_status");
  pqxx::result applied;
  if (!tx.exec1("SELECT to_regclass('bulkhead.migrations') IS NULL")[0].as<bool>()) {
    applied = tx.exec(
        "SELECT version, name, to_char(applied_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD HH24:MI:SS \"UTC\"') FROM bulkhead.migrations ORDER BY version");
  }
  auto applied_at = [&](int version) -> std::string {
    for (const auto& row : applied) {
      if (row[0].as<int>() == version) return row[2].as<std::string>();
    }
    return "";
  };
  for (const Migration& m : migrations_) {
    report.rows.push_back({m.version, Label(m), applied_at(m.version)});
  }
  for (const auto& row : applied) {
    int version = row[0].as<int>();
    report.database_version = std::max(report.database_version, version);
    if (version > BinaryVersion()) {
      report.rows.push_back({version, "", row[2].as<std::string>()});
    }
  }
  return report;
}

}  // namespace bulkhead
