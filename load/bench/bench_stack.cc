#include "bench_stack.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "burst.h"
#include "shipped_tier.h"

namespace bulkhead::bench {

std::vector<int64_t> MakeChannels(pqxx::connection& conn, int n, const std::string& url,
                                  int tenants, const std::string& prefix) {
  if (tenants <= 0) tenants = n;
  std::vector<int64_t> channels, tenant_ids;
  pqxx::work tx(conn);
  for (int i = 0; i < tenants; ++i) {
    tenant_ids.push_back(
        tx.exec_params1("INSERT INTO bulkhead.tenants (name) VALUES ($1) RETURNING id",
                        prefix + std::to_string(i))[0]
            .as<int64_t>());
  }
  for (int i = 0; i < n; ++i) {
    channels.push_back(tx.exec_params1("INSERT INTO bulkhead.channels (tenant_id, url) "
                                       "VALUES ($1, $2) RETURNING id",
                                       tenant_ids[i % tenants], url)[0]
                           .as<int64_t>());
  }
  tx.commit();
  return channels;
}

void EnqueueBurst(pqxx::connection& conn, const std::vector<int64_t>& channels, int jobs) {
  conn.prepare("burst",
               "SELECT bulkhead.enqueue_many("
               "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
               "          FROM generate_series(1, $2) i),"
               "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a "
               "hundred bytes, like a chat notification') FROM generate_series(1, $2) i))");
  const std::string array = load::BigintArray(channels);
  for (int done = 0; done < jobs;) {
    int n = std::min(1000, jobs - done);
    pqxx::work tx(conn);
    tx.exec_prepared("burst", array, n);
    tx.commit();
    done += n;
  }
  conn.unprepare("burst");
}

nlohmann::json Tier(int workers, double share) {
  nlohmann::json tier = testing::ShippedTier("default");
  if (workers > 0) tier["workers"] = workers;  // override: --workers (0: as shipped)
  tier["channel_share"] = share;               // override: --share
  tier["tenant_share"] = share;                // override: --share
  return tier;
}

CapLedger::Caps CapsAt(int workers, double share) { return CapLedger::For(workers, share, share); }

bool StartNode(testing::NodeProcess& node, const std::string& database) {
  node.Start(database);
  if (!node.WaitForLog("node_started", std::chrono::seconds(30))) {
    if (auto code = node.Wait(std::chrono::milliseconds(0))) {
      std::cerr << "the node exited with " << *code << ":\n" << node.Log();
    } else {
      std::cerr << "the node did not start within 30 s:\n" << node.Log();
    }
    return false;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return true;
}

int64_t WalPosition(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  return tx.exec1("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")[0]
      .as<int64_t>();
}

pid_t Postmaster(pqxx::connection& conn) {
  pqxx::nontransaction tx(conn);
  std::ifstream pid_file(tx.exec1("SHOW data_directory")[0].as<std::string>() + "/postmaster.pid");
  pid_t pid = 0;
  pid_file >> pid;
  return pid;
}

}  // namespace bulkhead::bench
