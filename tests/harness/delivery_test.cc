#include "delivery_test.h"

#include "tenancy.h"

namespace bulkhead::testing {

int64_t DeliveryTest::Count(const std::string& where) {
  return QueryValue<int64_t>(db(), "SELECT count(*) FROM bulkhead.jobs WHERE " + where);
}

void DeliveryTest::Enqueue(int64_t channel, int n) {
  Exec("SELECT bulkhead.enqueue(" + std::to_string(channel) +
       ", '{}'::jsonb) FROM generate_series(1, " + std::to_string(n) + ")");
}

int64_t DeliveryTest::EnqueueOne(int64_t channel, const std::string& payload) {
  pqxx::work tx(db());
  int64_t id =
      tx.exec_params1("SELECT bulkhead.enqueue($1, $2::jsonb)", channel, payload)[0].as<int64_t>();
  tx.commit();
  return id;
}

std::vector<int64_t> DeliveryTest::EnqueueMany(int64_t channel, int n,
                                               const std::string& extra_sql) {
  pqxx::work tx(db());
  pqxx::result rows =
      tx.exec("SELECT u.id FROM unnest(bulkhead.enqueue_many(array_fill(" +
              std::to_string(channel) + "::bigint, ARRAY[" + std::to_string(n) +
              "]), ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, " +
              std::to_string(n) + ") i))) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord");
  if (!extra_sql.empty()) tx.exec(extra_sql);
  tx.commit();
  std::vector<int64_t> ids;
  for (const auto& row : rows) ids.push_back(row[0].as<int64_t>());
  return ids;
}

}  // namespace bulkhead::testing
