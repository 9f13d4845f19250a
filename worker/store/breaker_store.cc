#include "breaker_store.h"

#include "breaker_store_statements.h"
#include "named_queries.h"

namespace bulkhead {

const std::span<const std::string_view> BreakerStore::kStatements = sql::breaker_store::kStatements;
namespace {

// The row of a transition statement: done (rows transitioned), jobs (moved with it), ….
template <typename Row>
BreakerTransition TransitionFromRow(const Row& row) {
  return {row.done > 0, row.jobs};
}

}  // namespace

BreakerStore::BreakerStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

BreakerTransition BreakerStore::OpenBreaker(int64_t channel, int64_t cooldown_ms,
                                            const std::string& reason, int64_t batch) {
  pqxx::work tx(conn_, "open_breaker");
  const sql::OpenBreaker::Row row =
      sql::OpenBreaker::RunOne(tx, {.channel = channel,
                                    .cooldown_ms = static_cast<double>(cooldown_ms),
                                    .reason = reason,
                                    .batch = batch});
  tx.commit();
  return TransitionFromRow(row);
}

BreakerTransition BreakerStore::CloseBreaker(int64_t channel, int64_t probe_job, int64_t batch) {
  pqxx::work tx(conn_, "close_breaker");
  const sql::CloseBreaker::Row row =
      sql::CloseBreaker::RunOne(tx, {.channel = channel, .probe_job = probe_job, .batch = batch});
  tx.commit();
  return TransitionFromRow(row);
}

BreakerTransition BreakerStore::ReopenBreaker(int64_t channel, int64_t probe_job,
                                              int64_t cooldown_ms, int64_t cooldown_max_ms,
                                              const std::string& reason, int64_t batch) {
  pqxx::work tx(conn_, "reopen_breaker");
  const sql::ReopenBreaker::Row row =
      sql::ReopenBreaker::RunOne(tx, {.channel = channel,
                                      .probe_job = probe_job,
                                      .cooldown_ms = static_cast<double>(cooldown_ms),
                                      .cooldown_max_ms = static_cast<double>(cooldown_max_ms),
                                      .reason = reason,
                                      .batch = batch});
  tx.commit();
  return TransitionFromRow(row);
}

int64_t BreakerStore::ParkBacklog(int64_t channel, int64_t batch) {
  pqxx::work tx(conn_, "park_backlog");
  const sql::ParkBacklog::Row row =
      sql::ParkBacklog::RunOne(tx, {.channel = channel, .batch = batch});
  tx.commit();
  return row.jobs;
}

int64_t BreakerStore::UnparkBacklog(int64_t channel, int64_t batch) {
  pqxx::work tx(conn_, "unpark_backlog");
  const sql::UnparkBacklog::Row row =
      sql::UnparkBacklog::RunOne(tx, {.channel = channel, .batch = batch});
  tx.commit();
  return row.jobs;
}

int BreakerStore::ExpireProbes(const std::string& queue, int64_t cooldown_ms,
                               int64_t cooldown_max_ms) {
  pqxx::work tx(conn_, "expire_probes");
  const sql::ExpireProbes::Row row =
      sql::ExpireProbes::RunOne(tx, {.queue = queue,
                                     .cooldown_ms = static_cast<double>(cooldown_ms),
                                     .cooldown_max_ms = static_cast<double>(cooldown_max_ms)});
  tx.commit();
  return static_cast<int>(row.expired);
}

std::vector<int64_t> BreakerStore::NotClosedBreakers() {
  pqxx::work tx(conn_, "not_closed_breakers");
  const std::vector<sql::NotClosedBreakers::Row> rows = sql::NotClosedBreakers::Run(tx);
  tx.commit();
  std::vector<int64_t> channels;
  for (const sql::NotClosedBreakers::Row& row : rows) channels.push_back(row.id);
  return channels;
}

}  // namespace bulkhead
