#include "role_store.h"

#include "named_queries.h"

namespace bulkhead {

RoleStore::RoleStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

void RoleStore::Grant(const std::string& role, std::string_view part) {
  pqxx::work tx(conn_, "grant_role");
  tx.exec_prepared("grant_role", role, std::string(part));
  tx.commit();
}

std::vector<RolePrivilege> RoleStore::Privileges(const std::string& role) {
  pqxx::read_transaction tx(conn_, "role_privileges");
  pqxx::result rows = tx.exec_prepared("role_privileges", role);
  std::vector<RolePrivilege> list;
  for (const auto& r : rows) {
    list.push_back({r["object"].as<std::string>(), r["privileges"].as<std::string>()});
  }
  return list;
}

}  // namespace bulkhead
