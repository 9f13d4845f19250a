// What the generated statement structs (generated/<file>_statements.h, typed_statements.cmake)
// use to bind a field as a parameter and to read a column into a field. Stateless.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "pg_array.h"

namespace bulkhead::sql::typed {

// A field as libpqxx sends it: itself (a std::optional that is empty goes as NULL), or an array
// as its literal (libpqxx 6.4 has no array parameters of its own).
template <typename T>
const T& Bind(const T& value) {
  return value;
}
inline std::string Bind(const std::vector<int64_t>& items) { return PgArray(items); }
inline std::string Bind(const std::vector<int>& items) { return PgArray(items); }

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
