#include "console_store.h"

#include <utility>

#include "console_store_statements.h"
#include "named_queries.h"

namespace bulkhead {

const std::span<const std::string_view> ConsoleStore::kStatements = sql::console_store::kStatements;

ConsoleStore::ConsoleStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

namespace {

// One read in a read-only transaction of its own.
template <typename Statement, typename... Params>
auto ReadOne(pqxx::connection_base& conn, const char* name, Params&&... params) {
  pqxx::read_transaction tx(conn, name);
  auto row = Statement::RunOne(tx, {std::forward<Params>(params)...});
  tx.commit();
  return row;
}

bool IsWaiting(const std::string& state) {
  return state == "available" || state == "parked" || state == "executing";
}

}  // namespace

std::string ConsoleStore::Overview() {
  return ReadOne<sql::Overview>(conn_, "console_overview", kOverviewCap, kBreakerCap).body;
}

std::string ConsoleStore::Channels(const std::optional<std::string>& query, int64_t after,
                                   int64_t limit) {
  return ReadOne<sql::ChannelList>(conn_, "console_channels", query, after, limit, kCountCap).body;
}

std::optional<std::string> ConsoleStore::Channel(int64_t id) {
  pqxx::read_transaction tx(conn_, "console_channel");
  std::vector<sql::ChannelDetail::Row> rows = sql::ChannelDetail::Run(tx, {id, kCountCap});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front().body);
}

std::string ConsoleStore::Deliveries(const DeliveryFilter& filter, int64_t limit) {
  // The walk follows the index the filter names (console_store.sql, ListDeliveries): a waiting
  // state's partial index, from the channel when given; the finish time, or a channel's
  // discarded jobs; else the newest jobs. A channel the walk's index does not lead with is
  // filtered after it, so that a rare match cannot make the walk long.
  std::string path = "any";
  bool seeks_channel = false;
  if (filter.state && IsWaiting(*filter.state)) {
    path = "waiting";
    seeks_channel = *filter.state != "executing";
  } else if (filter.state) {
    path = "finished";
    seeks_channel = *filter.state == "discarded";
  }
  std::optional<int64_t> walk_channel, after_channel = filter.channel, walk_tenant;
  if (seeks_channel) {
    std::swap(walk_channel, after_channel);
    if (!walk_channel) walk_tenant = filter.tenant;
  }
  return ReadOne<sql::ListDeliveries>(conn_, "console_deliveries", path, filter.state, walk_channel,
                                      filter.tenant, filter.since, filter.until, after_channel,
                                      kExamine, limit, walk_tenant)
      .body;
}

std::optional<std::string> ConsoleStore::Delivery(int64_t id) {
  pqxx::read_transaction tx(conn_, "console_delivery");
  std::vector<sql::Delivery::Row> rows = sql::Delivery::Run(tx, {id});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front().body);
}

std::optional<std::string> ConsoleStore::Payload(int64_t id) {
  pqxx::read_transaction tx(conn_, "console_payload");
  std::vector<sql::Payload::Row> rows = sql::Payload::Run(tx, {id});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return std::move(rows.front().payload);
}

std::string ConsoleStore::Actions(int64_t limit) {
  return ReadOne<sql::ActionLog>(conn_, "console_actions", limit).body;
}

int64_t ConsoleStore::CountReplay(const DeliveryFilter& filter) {
  return ReadOne<sql::CountReplay>(conn_, "console_count_replay", filter.channel, filter.tenant,
                                   filter.since, filter.until, kCountCap)
      .jobs;
}

int64_t ConsoleStore::CountCancel(const DeliveryFilter& filter) {
  return ReadOne<sql::CountCancel>(conn_, "console_count_cancel", filter.channel, filter.tenant,
                                   kCountCap)
      .jobs;
}

ConsoleStore::Window ConsoleStore::WindowEnd(const std::optional<std::string>& start,
                                             double settle_s) {
  sql::WindowEnd::Row r = ReadOne<sql::WindowEnd>(conn_, "console_window", start, settle_s);
  return {std::move(r.window_end), r.span_s};
}

std::vector<FinishedCount> ConsoleStore::FinishedBetween(const std::string& after,
                                                         const std::string& until) {
  pqxx::read_transaction tx(conn_, "console_finished");
  std::vector<sql::FinishedBetween::Row> rows = sql::FinishedBetween::Run(tx, {after, until});
  tx.commit();
  std::vector<FinishedCount> counts;
  for (sql::FinishedBetween::Row& r : rows) {
    counts.push_back({std::move(r.queue), r.completed, r.discarded});
  }
  return counts;
}

int64_t ConsoleStore::RecordAction(const std::string& who, const std::string& action,
                                   const std::string& target, const std::string& filter_json,
                                   int64_t jobs) {
  pqxx::work tx(conn_, "console_record_action");
  const int64_t id = sql::RecordAction::RunOne(tx, {who, action, target, filter_json, jobs}).id;
  tx.commit();
  return id;
}

}  // namespace bulkhead
