#include "index_plans.h"

#include "pooled_connection.h"

namespace bulkhead {

void PlanFromIndexes(pqxx::connection_base& conn) {
  if (IsPooled(conn)) {
    AddPooledSettings(conn, {{"plan_cache_mode", "force_generic_plan"},
                             {"enable_seqscan", "off"},
                             {"enable_bitmapscan", "off"}});
    return;
  }
  pqxx::nontransaction(conn, "index_plans")
      .exec0(
          "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; "
          "SET enable_bitmapscan = off");
}

}  // namespace bulkhead
