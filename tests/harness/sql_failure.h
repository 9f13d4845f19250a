// ExpectSqlFailure: runs SQL that must fail and returns what PostgreSQL said, for the tests of
// the schema's errors. Runs on the calling thread.
#pragma once

#include <pqxx/pqxx>
#include <string>

namespace bulkhead::testing {

struct SqlFailure {
  std::string sqlstate;  // as SqlState (store_failure.h) reads it
  std::string message;   // the primary message: no "ERROR:" and no CONTEXT lines
};

// Runs `sql` in a transaction that is rolled back, expecting it to fail; records a test failure
// (and returns an empty SqlFailure) if it succeeds.
SqlFailure ExpectSqlFailure(pqxx::connection_base& conn, const std::string& sql);

}  // namespace bulkhead::testing
