#include "status_command.h"

#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "admin_channel_store.h"
#include "admin_jobs_store.h"
#include "breaker_command.h"
#include "cli_common.h"
#include "exit_codes.h"

namespace bulkhead {
namespace {

constexpr const char* kUsage = R"(usage: bulkhead status [--json] [--database URL]

Shows the fleet at a glance, in three tables:

queues (one per tier: a tier is a queue)
  AVAILABLE  jobs due now, waiting for a free worker
  SCHEDULED  jobs waiting for a later time (retries)
  EXECUTING  jobs in flight on some node (in-flight)
  PARKED     jobs held behind an open breaker, a pause or a disabled channel
  LAG        age of the oldest job due now ("-" when none): how far the queue is behind
  HELD       of the scheduled and parked jobs, those held behind an earlier delivery of their
             ordering key (due when it ends; counted to 100000, then "100000+")
  LIMITED    channels of the tier's tenants with a rate limit (`bulkhead channel set`)

breakers: the channels whose breaker is not closed, and paused ones (as `bulkhead breakers`)

nodes
  HEARTBEAT  time since the node's last heartbeat
  LEASE      time left on its lease, or "expired 12s ago" (its jobs are rescued)
  IN-FLIGHT  jobs it holds executing

--json prints one object instead: {"queues": [{"queue", "available", "scheduled",
"executing", "parked", "lag_s", "held", "held_capped", "rate_limited_channels"}],
"breakers": [as `bulkhead breakers --json`], "nodes":
[{"name", "host", "pid", "version", "tiers": [...], "heartbeat_age_s", "lease_left_s",
"executing"}]}; times in seconds, lease_left_s negative once the lease has run out.

Only indexes of unfinished jobs are read: the cost follows the backlog, not the history.

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

std::string Seconds(double s) { return cli::Duration(static_cast<int64_t>(std::floor(s))); }

void PrintText(const std::vector<QueueStatus>& queues, const std::vector<BreakerRow>& breakers,
               const std::vector<NodeStatus>& nodes) {
  std::vector<std::vector<std::string>> table = {
      {"QUEUE", "AVAILABLE", "SCHEDULED", "EXECUTING", "PARKED", "LAG", "HELD", "LIMITED"}};
  for (const auto& q : queues) {
    table.push_back({cli::Cell(q.queue), std::to_string(q.available), std::to_string(q.scheduled),
                     std::to_string(q.executing), std::to_string(q.parked),
                     q.available > 0 ? Seconds(q.lag_s) : "-",
                     std::to_string(q.held) + (q.held_capped ? "+" : ""),
                     std::to_string(q.rate_limited_channels)});
  }
  cli::PrintTable(table);
  std::cout << "\n";
  if (breakers.empty()) {
    std::cout << "no open breakers or paused channels\n";
  } else {
    PrintBreakerTable(breakers);
  }
  std::cout << "\n";
  if (nodes.empty()) {
    std::cout << "no nodes registered\n";
    return;
  }
  table = {{"NODE", "HOST", "PID", "VERSION", "TIERS", "HEARTBEAT", "LEASE", "IN-FLIGHT"}};
  for (const auto& n : nodes) {
    std::string lease = n.lease_left_s >= 0 ? Seconds(n.lease_left_s) + " left"
                                            : "expired " + Seconds(-n.lease_left_s) + " ago";
    table.push_back({cli::Cell(n.name), cli::Cell(n.host), std::to_string(n.pid),
                     cli::Cell(n.version), cli::Cell(n.tiers),
                     Seconds(std::max(n.heartbeat_age_s, 0.0)) + " ago", lease,
                     std::to_string(n.executing)});
  }
  cli::PrintTable(table);
}

void PrintJson(const std::vector<QueueStatus>& queues, const std::vector<BreakerRow>& breakers,
               const std::vector<NodeStatus>& nodes) {
  nlohmann::ordered_json out;
  out["queues"] = nlohmann::ordered_json::array();
  for (const auto& q : queues) {
    out["queues"].push_back({{"queue", q.queue},
                             {"available", q.available},
                             {"scheduled", q.scheduled},
                             {"executing", q.executing},
                             {"parked", q.parked},
                             {"lag_s", cli::Millis(q.lag_s)},
                             {"held", q.held},
                             {"held_capped", q.held_capped},
                             {"rate_limited_channels", q.rate_limited_channels}});
  }
  out["breakers"] = BreakersJson(breakers);
  out["nodes"] = nlohmann::ordered_json::array();
  for (const auto& n : nodes) {
    nlohmann::ordered_json tiers = nlohmann::ordered_json::array();
    for (size_t start = 0; start < n.tiers.size();) {
      size_t comma = n.tiers.find(',', start);
      if (comma == std::string::npos) comma = n.tiers.size();
      tiers.push_back(n.tiers.substr(start, comma - start));
      start = comma + 1;
    }
    out["nodes"].push_back({{"name", n.name},
                            {"host", n.host},
                            {"pid", n.pid},
                            {"version", n.version},
                            {"tiers", tiers},
                            {"heartbeat_age_s", cli::Millis(n.heartbeat_age_s)},
                            {"lease_left_s", cli::Millis(n.lease_left_s)},
                            {"executing", n.executing}});
  }
  std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

int RunStatusCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead status";
  auto parsed = cli::Parse(kCommand, args, {.options = {cli::kJsonFlag}, .max_positional = 0},
                           [] { std::cout << kUsage; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  return cli::WithConnection(kCommand, words, [&](pqxx::connection_base& conn) {
    AdminJobsStore jobs(conn);
    AdminChannelStore channels(conn);
    auto queues = jobs.QueueStatuses();
    auto breakers = channels.ListBreakers();
    auto nodes = jobs.NodeStatuses();
    if (words.Has("--json")) {
      PrintJson(queues, breakers, nodes);
    } else {
      PrintText(queues, breakers, nodes);
    }
    return kExitOk;
  });
}

}  // namespace bulkhead
