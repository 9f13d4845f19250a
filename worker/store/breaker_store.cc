#include "breaker_store.h"

#include "named_queries.h"

namespace bulkhead {
namespace {

// The row of a transition statement: done (rows transitioned), jobs (moved with it), ….
BreakerTransition TransitionFromRow(const pqxx::row& row) {
  return {row["done"].as<int64_t>() > 0, row["jobs"].as<int64_t>()};
}

}  // namespace

BreakerStore::BreakerStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

BreakerTransition BreakerStore::OpenBreaker(int64_t channel, int64_t cooldown_ms,
                                            const std::string& reason, int64_t batch) {
  pqxx::work tx(conn_, "open_breaker");
  pqxx::row row = tx.exec_prepared1("open_breaker", channel, cooldown_ms, reason, batch);
  tx.commit();
  return TransitionFromRow(row);
}

BreakerTransition BreakerStore::CloseBreaker(int64_t channel, int64_t probe_job, int64_t batch) {
  pqxx::work tx(conn_, "close_breaker");
  pqxx::row row = tx.exec_prepared1("close_breaker", channel, probe_job, batch);
  tx.commit();
  return TransitionFromRow(row);
}

BreakerTransition BreakerStore::ReopenBreaker(int64_t channel, int64_t probe_job,
                                              int64_t cooldown_ms, int64_t cooldown_max_ms,
                                              const std::string& reason, int64_t batch) {
  pqxx::work tx(conn_, "reopen_breaker");
  pqxx::row row = tx.exec_prepared1("reopen_breaker", channel, probe_job, cooldown_ms,
                                    cooldown_max_ms, reason, batch);
  tx.commit();
  return TransitionFromRow(row);
}

int64_t BreakerStore::ParkBacklog(int64_t channel, int64_t batch) {
  pqxx::work tx(conn_, "park_backlog");
  pqxx::row row = tx.exec_prepared1("park_backlog", channel, batch);
  tx.commit();
  return row["jobs"].as<int64_t>();
}

int64_t BreakerStore::UnparkBacklog(int64_t channel, int64_t batch) {
  pqxx::work tx(conn_, "unpark_backlog");
  pqxx::row row = tx.exec_prepared1("unpark_backlog", channel, batch);
  tx.commit();
  return row["jobs"].as<int64_t>();
}

int BreakerStore::ExpireProbes(const std::string& queue, int64_t cooldown_ms,
                               int64_t cooldown_max_ms) {
  pqxx::work tx(conn_, "expire_probes");
  pqxx::row row = tx.exec_prepared1("expire_probes", queue, cooldown_ms, cooldown_max_ms);
  tx.commit();
  return row["expired"].as<int>();
}

std::vector<int64_t> BreakerStore::NotClosedBreakers() {
  pqxx::work tx(conn_, "not_closed_breakers");
  pqxx::result rows = tx.exec_prepared("not_closed_breakers");
  tx.commit();
  std::vector<int64_t> channels;
  for (const auto& row : rows) channels.push_back(row["id"].as<int64_t>());
  return channels;
}

}  // namespace bulkhead
