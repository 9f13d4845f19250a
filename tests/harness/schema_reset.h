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

#include <string>

namespace bulkhead::testing {

void ResetSchema(const std::string& database);

}  // namespace bulkhead::testing
