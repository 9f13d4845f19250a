#include "schema_reset.h"

#include <pqxx/pqxx>
#include <stdexcept>

#include "migrations.h"
#include "migrator.h"

namespace bulkhead::testing {

void ResetSchema(const std::string& database) {
  pqxx::connection conn(database);
  Migrator migrator(conn, EmbeddedMigrations());
  migrator.Down(migrator.BinaryVersion());
  auto result = migrator.Up();
  if (!result.ok()) throw std::runtime_error(result.error);
}

std::string SiblingDatabase(pqxx::connection& conn, const std::string& dbname) {
  auto quoted = [](const char* value) {
    std::string v = value == nullptr ? "" : value, out = "'";
    for (char c : v) {
      if (c == '\\' || c == '\'') out += '\\';
      out += c;
    }
    return out + "'";
  };
  std::string info = "dbname=" + quoted(dbname.c_str());
  if (conn.hostname() != nullptr && *conn.hostname() != '\0') {
    info += " host=" + quoted(conn.hostname());
  }
  if (conn.port() != nullptr && *conn.port() != '\0') info += " port=" + quoted(conn.port());
  if (conn.username() != nullptr) info += " user=" + quoted(conn.username());
  return info;
}

}  // namespace bulkhead::testing
