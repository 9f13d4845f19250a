// AllStores: every store on one connection, for the tests whose scenarios cross callers — a
// claim, then a breaker transition, then an operator's verb, in one test. Each member function
// is its store's own; the bases share the connection, which must outlive them.
//
// Production code never does this: each thread holds the one store it uses (store_connection.h),
// and its connection prepares only that store's statements.
#pragma once

#include <pqxx/pqxx>

#include "admin_channel_store.h"
#include "admin_jobs_store.h"
#include "breaker_store.h"
#include "claim_store.h"
#include "completion_store.h"
#include "fleet_store.h"

namespace bulkhead::testing {

struct AllStores : ClaimStore,
                   CompletionStore,
                   BreakerStore,
                   FleetStore,
                   AdminChannelStore,
                   AdminJobsStore {
  explicit AllStores(pqxx::connection_base& conn)
      : ClaimStore(conn),
        CompletionStore(conn),
        BreakerStore(conn),
        FleetStore(conn),
        AdminChannelStore(conn),
        AdminJobsStore(conn) {}
};

}  // namespace bulkhead::testing
