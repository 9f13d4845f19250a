#include "role_store.h"

#include <utility>

#include "named_queries.h"
#include "role_store_statements.h"

namespace bulkhead {

const std::span<const std::string_view> RoleStore::kStatements = sql::role_store::kStatements;

RoleStore::RoleStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

void RoleStore::Grant(const std::string& role, std::string_view part) {
  pqxx::work tx(conn_, "grant_role");
  sql::GrantRole::Run(tx, {.role = role, .part = std::string(part)});
  tx.commit();
}

std::vector<RolePrivilege> RoleStore::Privileges(const std::string& role) {
  pqxx::read_transaction tx(conn_, "role_privileges");
  std::vector<RolePrivilege> list;
  for (sql::RolePrivileges::Row& r : sql::RolePrivileges::Run(tx, {.role = role})) {
    list.push_back({std::move(r.object), std::move(r.privileges)});
  }
  return list;
}

}  // namespace bulkhead
