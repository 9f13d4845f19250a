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

// A bound value as a SQL literal for EXECUTE on a pooled connection: NULL, or quoted text that
// the server casts to the parameter's declared type.
template <typename T>
std::string Literal(const pqxx::transaction_base& tx, const T& value) {
  // Escaped by the server's rules (PQescapeStringConn); built by appends, since GCC 12 warns
  // falsely (-Wrestrict) inside libpqxx's quote().
  std::string literal(1, '\'');
  literal.append(tx.esc(pqxx::to_string(value)));
  literal.push_back('\'');
  return literal;
}
template <typename T>
std::string Literal(const pqxx::transaction_base& tx, const std::optional<T>& value) {
  if (value) return Literal(tx, *value);
  return "NULL";
}

// Runs the named statement `statement` with `args`: prepared by libpqxx on a session connection;
// on a pooled one (pooled_connection.h) prepared on the server connection by SQL PREPARE, once,
// and run by EXECUTE.
template <typename... Args>
pqxx::result Exec(pqxx::transaction_base& tx, const char* statement, const Args&... args) {
  if (IsPooled(tx.conn())) return ExecPooled(tx, statement, {Literal(tx, args)...});
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
