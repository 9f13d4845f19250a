#include "node_start.h"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <pqxx/pqxx>

#include "database_connection.h"
#include "logger.h"
#include "migrations.h"
#include "migrator.h"
#include "version.h"

namespace bulkhead {

std::string HostName() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

bool StartNode(StoreConnection<FleetStore>& store, const std::string& database,
               const NodeOptions& options, const std::vector<std::string>& tier_names, Lease& lease,
               Metrics* record) {
  try {
    std::unique_ptr<pqxx::connection> conn = OpenConnection(database, "node");
    Migrator migrator(*conn, EmbeddedMigrations());
    int version = migrator.DatabaseVersion();
    if (version != migrator.BinaryVersion()) {
      Log(LogLevel::kError, "schema_mismatch",
          {{"database_version", version},
           {"binary_version", migrator.BinaryVersion()},
           {"hint", version < migrator.BinaryVersion() ? "run: bulkhead migrate up"
                                                       : "run a bulkhead release that knows "
                                                         "the database's schema"}});
      return false;
    }
    store.Get().RegisterTiers(tier_names);
    // A node restarting under its old name (a fixed `node`) finds the jobs its previous life
    // left executing: they would look alive under the new lease, so they go back first.
    Rescue own = store.Get().RescueLost(options.node);
    if (own.jobs > 0) {
      if (record) record->rescued().Increment(static_cast<double>(own.jobs));
      Log(LogLevel::kWarn, "jobs_rescued",
          {{"jobs", own.jobs},
           {"discarded", own.discarded},
           {"nodes", own.nodes},
           {"detail",
            "returned jobs left executing by nodes without a lease (this node's "
            "previous run among them) to the queue"}});
    }
    const auto sent = std::chrono::steady_clock::now();
    store.Get().RegisterNode(options.node, HostName(), getpid(), kVersion, tier_names,
                             options.lease_ms);
    lease.Renewed(sent);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "start_failed", {{"error", FirstLine(e.what())}});
    return false;
  }
  return true;
}

}  // namespace bulkhead
