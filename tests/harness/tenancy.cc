#include "tenancy.h"

namespace bulkhead::testing {

int64_t CreateTenant(pqxx::connection_base& conn, const std::string& name,
                     const std::string& tier) {
  pqxx::work tx(conn);
  auto id =
      tx.exec_params1("INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, $2) RETURNING id",
                      name, tier)[0]
          .as<int64_t>();
  tx.commit();
  return id;
}

int64_t CreateChannel(pqxx::connection_base& conn, int64_t tenant_id, const std::string& url) {
  pqxx::work tx(conn);
  auto id =
      tx.exec_params1("INSERT INTO bulkhead.channels (tenant_id, url) VALUES ($1, $2) RETURNING id",
                      tenant_id, url)[0]
          .as<int64_t>();
  tx.commit();
  return id;
}

}  // namespace bulkhead::testing
