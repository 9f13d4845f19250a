#include "store_failure.h"

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>

namespace bulkhead {

bool IsDataFailure(const std::exception& e) {
  if (dynamic_cast<const nlohmann::json::exception*>(&e)) return true;
  if (dynamic_cast<const pqxx::argument_error*>(&e)) return true;
  std::string state = SqlState(e);
  return state.starts_with("22") || state.starts_with("23");
}

std::string SqlState(const std::exception& e) {
  // libpqxx 6.4 throws a refused privilege as pqxx::insufficient_privilege without passing it
  // the SQLSTATE it read (sqlstate() is then ""); the class says which one it was.
  if (dynamic_cast<const pqxx::insufficient_privilege*>(&e)) return "42501";
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) return sql->sqlstate();
  return "";
}

}  // namespace bulkhead
