// What the generated statement structs (generated/<file>_statements.h, typed_statements.cmake)
// use to bind a field as a parameter, to run the statement, and to read a column into a field.
// Stateless.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "pg_array.h"
#include "pooled_connection.h"

namespace bulkhead::sql::typed {

// A field as libpqxx sends it: itself (a std::optional that is empty goes as NULL), or an array
// as its literal (libpqxx 6.4 has no array parameters of its own).
template <typename T>
const T& Bind(const T& value) {
  return value;
}
inline std::string Bind(const std::vector<int64_t>& items) { return PgArray(items); }
inline std::string Bind(const std::vector<int>& items) { return PgArray(items); }

// Runs the named statement `statement` with `args`: prepared (once per connection, by name) on
// a session connection; on a pooled one (pooled_connection.h) unprepared, by its SQL text, after
// the transaction's settings.
template <typename... Args>
pqxx::result Exec(pqxx::transaction_base& tx, const char* statement, const Args&... args) {
  if (IsPooled(tx.conn())) {
    ApplyPooledSettings(tx);
    return tx.exec_params(StatementSql(statement), args...);
  }
  return tx.exec_prepared(statement, args...);
}

// Exec of a statement that returns exactly one row; throws pqxx::unexpected_rows otherwise.
template <typename... Args>
pqxx::row Exec1(pqxx::transaction_base& tx, const char* statement, const Args&... args) {
  const pqxx::result rows = Exec(tx, statement, args...);
  if (rows.size() != 1) {
    throw pqxx::unexpected_rows("expected 1 row from " + std::string(statement) + ", got " +
                                std::to_string(rows.size()));
  }
  return rows.front();
}

// A column as a field of type T; throws pqxx::conversion_error on NULL unless T is optional.
template <typename T>
struct Reader {
  static T Read(const pqxx::field& f) { return f.as<T>(); }
};
template <typename T>
struct Reader<std::optional<T>> {
  static std::optional<T> Read(const pqxx::field& f) {
    if (f.is_null()) return std::nullopt;
    return f.as<T>();
  }
};
template <typename T>
T Read(const pqxx::field& f) {
  return Reader<T>::Read(f);
}

}  // namespace bulkhead::sql::typed
