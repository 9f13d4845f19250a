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

}  // namespace bulkhead::testing
