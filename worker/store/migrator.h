// Migrator: applies and reverses the numbered schema migrations on one database.
//
// Every step runs in its own transaction, serialised fleet-wide by a transaction-scoped advisory
// lock, so two nodes deploying at once apply each migration exactly once. The version table is
// bulkhead.migrations (one row per applied version); the runner creates it and the schema
// `bulkhead` itself, and migrations never drop either, which is what makes `up` after `down`
// give back the identical schema.
//
// A database migrated past the newest version this binary knows is refused, never touched.
//
// Not thread-safe: a Migrator and its connection belong to the thread that made them.
// Expected outcomes (a refusal, a migration whose SQL fails) are returned as values; a lost
// connection throws pqxx::broken_connection.
#pragma once

#include <pqxx/pqxx>
#include <span>
#include <string>
#include <vector>

#include "migrations.h"

namespace bulkhead {

class Migrator {
 public:
  struct Step {
    int version;
    std::string name;
    double millis;  // time the step's transaction took
  };

  struct Result {
    std::vector<Step> steps;  // done before the run ended, in order
    std::string error;        // empty when the run did all it was asked

    bool ok() const { return error.empty(); }
  };

  struct Row {
    int version;
    std::string name;        // "0001_init"; empty for a version this binary does not know
    std::string applied_at;  // empty when pending
  };

  struct Report {
    int database_version;   // highest applied, 0 for none
    int binary_version;     // newest in `migrations`
    std::vector<Row> rows;  // every known migration, then unknown applied ones
  };

  // `migrations` must be in version order from 1 without gaps and outlive the Migrator.
  Migrator(pqxx::connection_base& conn, std::span<const Migration> migrations);

  // Applies every pending migration, oldest first; stops at the first that fails.
  Result Up();

  // Reverses the `steps` newest applied migrations (fewer if fewer are applied).
  Result Down(int steps);

  // What is applied and what is pending. Reads only; creates nothing.
  Report Status();

  // The highest applied version, 0 when the database has never been migrated.
  int DatabaseVersion();

  int BinaryVersion() const { return static_cast<int>(migrations_.size()); }

 private:
  // Opens a step: takes the lock, makes sure the version table exists, reads the version.
  int BeginStep(pqxx::work& tx);
  std::string NewerThanBinary(int database_version) const;

  pqxx::connection_base& conn_;
  const std::span<const Migration> migrations_;
};

}  // namespace bulkhead
