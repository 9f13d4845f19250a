// ResetSchema: the bulkhead schema of a database dropped and migrated afresh, for the benches,
// which each start from empty tables in a database they are given (tests get a fresh database
// of their own from DatabaseTest instead).
//
// Migrates down to nothing and up to the binary's newest version with the real Migrator and the
// embedded migrations: every row in the bulkhead schema is lost, so never point it at a
// database you care about. Runs on the calling thread, on a connection of its own. Throws
// (pqxx, or std::runtime_error with the migrator's error) when the database cannot be reached
// or a migration fails.
#pragma once

#include <pqxx/pqxx>
#include <string>

namespace bulkhead::testing {

void ResetSchema(const std::string& database);

// "dbname=<dbname> host=… port=… user=…": a database beside the one `conn` is connected to, on
// the same server as the same user (a bench that compares two databases side by side).
std::string SiblingDatabase(pqxx::connection& conn, const std::string& dbname);

}  // namespace bulkhead::testing
