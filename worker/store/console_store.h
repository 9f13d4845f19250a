// ConsoleStore: what `bulkhead console` reads (docs/console.md), and its audit log. Its SQL is
// worker/store/console_store.sql; the store prepares only those statements. The console's
// actions run through AdminChannelStore and AdminJobsStore, on the same connection.
//
// Every read is bounded whatever the table holds (the .sql says how): a backlog is counted to
// a cap, a list walks at most a given number of rows of one index. Most reads come back as the
// JSON document the console answers with, built by the server.
//
// Used by one thread at a time, on a connection of its own (the console's ConsolePool lends
// it). Database errors throw pqxx exceptions. Construction throws std::logic_error when the
// build embedded no statement of a name it needs (named_queries.h).
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bulkhead {

// Which deliveries a list, a count or a bulk action takes. Unset fields do not filter. `since`
// and `until` are ISO 8601 with their zone.
struct DeliveryFilter {
  std::optional<std::string> state;
  std::optional<int64_t> channel, tenant;
  std::optional<std::string> since, until;
};

// Deliveries that finished in a window, per tier (the rate sampler's count).
struct FinishedCount {
  std::string queue;
  int64_t completed = 0, discarded = 0;
};

class ConsoleStore {
 public:
  // Every statement of console_store.sql, listed by the build from it; the constructor
  // prepares them.
  static const std::span<const std::string_view> kStatements;

  // A backlog is counted to this, then reported as this with "capped": true.
  static constexpr int64_t kCountCap = 100000;
  // The overview, which every open browser polls every 2 s, counts less: a tier's backlog by
  // state to kOverviewCap, each broken channel's parked jobs to kBreakerCap.
  static constexpr int64_t kOverviewCap = 10000;
  static constexpr int64_t kBreakerCap = 1000;
  // A list walks at most this many rows.
  static constexpr int64_t kExamine = 5000;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit ConsoleStore(pqxx::connection_base& conn);

  // JSON documents, as docs/console.md shows them. nullopt: no such channel or delivery.
  std::string Overview();
  std::string Channels(const std::optional<std::string>& query, int64_t after, int64_t limit);
  std::optional<std::string> Channel(int64_t id);
  std::string Deliveries(const DeliveryFilter& filter, int64_t limit);
  std::optional<std::string> Delivery(int64_t id);
  std::optional<std::string> Payload(int64_t id);
  std::string Actions(int64_t limit);

  // What a replay (discarded) or a cancel (waiting) with `filter` would take, counted to
  // kCountCap + 1.
  int64_t CountReplay(const DeliveryFilter& filter);
  int64_t CountCancel(const DeliveryFilter& filter);

  // The rate sampler's next window: it ends `settle_s` before the database's now (as the
  // database spells a timestamptz) and spans from `start` (0 s when there is none).
  struct Window {
    std::string end;
    double span_s = 0;
  };
  Window WindowEnd(const std::optional<std::string>& start, double settle_s);
  // Per tier, what completed and what was discarded in (after, until].
  std::vector<FinishedCount> FinishedBetween(const std::string& after, const std::string& until);

  // Writes one action to the audit log; returns its id.
  int64_t RecordAction(const std::string& who, const std::string& action, const std::string& target,
                       const std::string& filter_json, int64_t jobs);

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
