#include "sql_failure.h"

#include <gtest/gtest.h>

#include "store_failure.h"

namespace bulkhead::testing {

SqlFailure ExpectSqlFailure(pqxx::connection_base& conn, const std::string& sql) {
  pqxx::work tx(conn);
  try {
    tx.exec(sql);
  } catch (const pqxx::sql_error& e) {
    std::string message = e.what();
    if (message.starts_with("ERROR:  ")) message.erase(0, 8);
    return {SqlState(e), message.substr(0, message.find('\n'))};
  }
  ADD_FAILURE() << "no error from: " << sql;
  return {};
}

}  // namespace bulkhead::testing
