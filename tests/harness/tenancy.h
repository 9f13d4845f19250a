// Test data for the tenancy tables: tenants and channels made through plain INSERTs with every
// other column defaulted, as an application would make them. Runs on the calling thread.
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <string>

namespace bulkhead::testing {

// INSERT INTO bulkhead.tenants (name, tier); returns the id.
int64_t CreateTenant(pqxx::connection_base& conn, const std::string& name,
                     const std::string& tier = "default");

// INSERT INTO bulkhead.channels (tenant_id, url); returns the id.
int64_t CreateChannel(pqxx::connection_base& conn, int64_t tenant_id,
                      const std::string& url = "http://127.0.0.1:9/hook");

// Runs `sql` in its own transaction and returns the single value it selects.
template <typename T>
T QueryValue(pqxx::connection_base& conn, const std::string& sql) {
  pqxx::work tx(conn);
  T value = tx.exec1(sql)[0].as<T>();
  tx.commit();
  return value;
}

}  // namespace bulkhead::testing
