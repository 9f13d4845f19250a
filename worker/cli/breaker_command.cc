#include "breaker_command.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "admin_channel_store.h"
#include "cli_common.h"
#include "exit_codes.h"

namespace bulkhead {
namespace {

constexpr const char* kBreakersUsage = R"(usage: bulkhead breakers [--json] [--database URL]

Lists every channel whose circuit breaker is not closed, oldest state change first, then the
channels that are only paused, as an aligned table (or "no open breakers or paused channels"):

  CHANNEL  the channel id          STATE   closed | open | half_open
  TENANT   its tenant's name       PAUSED  yes while an operator holds it (bulkhead channel pause)
  TIER     the tenant's tier       SINCE   when the breaker last changed state (UTC); AGE: how
                                           long ago (not when a pause began: that is not kept)
  TRIPS    openings since the breaker was last closed
  PARKED   deliveries held parked for the channel
  PROBE    open: when one parked delivery may go as the probe ("due" once the cooldown is over;
           "on resume" while paused); half_open: the probe's job id and the time it has left
  REASON   why the breaker opened (empty while it is closed)

--json prints a JSON array instead, one object per channel with the keys channel, tenant, tier,
state, paused, since, since_s, trips, reason, probe_in_s, probe_job (null unless half_open) and
parked.

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

constexpr const char* kBreakerUsage = R"(usage: bulkhead breaker reset CHANNEL [--database URL]

Closes the channel's circuit breaker from any state (open, half_open, or already closed) and
returns its parked backlog to the queue in the same statement, behind fresh deliveries
(priority 3). The breaker counts afresh (trips 0); a probe still in flight finds it closed and
changes nothing. A paused channel's backlog stays parked until `bulkhead channel resume CHANNEL`.

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

using cli::Cell;
using cli::Duration;
using cli::Millis;

// ---- bulkhead breakers ------------------------------------------------------------------------

// What the PROBE column says: see kBreakersUsage.
std::string ProbeText(const BreakerRow& row) {
  if (row.state == "open") {
    if (row.paused) return "on resume";  // no probe goes while the channel is paused
    if (row.probe_in_s <= 0) return "due";
    return "in " + Duration(static_cast<int64_t>(std::ceil(row.probe_in_s)));
  }
  if (row.state == "half_open") {
    std::string text = "job " + std::to_string(row.probe_job) + ", ";
    if (row.probe_in_s <= 0) return text + "overdue";
    return text + Duration(static_cast<int64_t>(std::ceil(row.probe_in_s))) + " left";
  }
  return "-";
}

// The reason as shown: only while the breaker is not closed (a closed breaker keeps the reason
// of its last opening in the row, which would read as the reason it is listed).
std::string ShownReason(const BreakerRow& row) { return row.state == "closed" ? "" : row.reason; }

}  // namespace

void PrintBreakerTable(const std::vector<BreakerRow>& rows) {
  std::vector<std::vector<std::string>> table = {{"CHANNEL", "TENANT", "TIER", "STATE", "PAUSED",
                                                  "SINCE", "AGE", "TRIPS", "PARKED", "PROBE",
                                                  "REASON"}};
  for (const auto& row : rows) {
    table.push_back({std::to_string(row.channel), Cell(row.tenant), Cell(row.tier), row.state,
                     row.paused ? "yes" : "no", row.since,
                     Duration(static_cast<int64_t>(std::max(row.since_s, 0.0))),
                     std::to_string(row.trips), std::to_string(row.parked), ProbeText(row),
                     Cell(ShownReason(row))});
  }
  cli::PrintTable(table);
}

nlohmann::ordered_json BreakersJson(const std::vector<BreakerRow>& rows) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& row : rows) {
    list.push_back({{"channel", row.channel},
                    {"tenant", row.tenant},
                    {"tier", row.tier},
                    {"state", row.state},
                    {"paused", row.paused},
                    {"since", row.since},
                    {"since_s", Millis(row.since_s)},
                    {"trips", row.trips},
                    {"reason", ShownReason(row)},
                    {"probe_in_s", Millis(row.probe_in_s)},
                    {"probe_job", row.probe_job == 0 ? nlohmann::ordered_json()
                                                     : nlohmann::ordered_json(row.probe_job)},
                    {"parked", row.parked}});
  }
  return list;
}

namespace {

// ---- bulkhead breaker reset -------------------------------------------------------------------

// "1 parked delivery", "10000 parked deliveries".
std::string ParkedDeliveries(int64_t n) {
  return std::to_string(n) + (n == 1 ? " parked delivery" : " parked deliveries");
}

int Reset(int64_t channel, const cli::Words& words) {
  constexpr std::string_view kCommand = "bulkhead breaker reset";
  return cli::WithStore<AdminChannelStore>(kCommand, words, [&](AdminChannelStore& store) {
    std::optional<ChannelChange> change = store.ResetBreaker(channel);
    if (!change) {
      std::cerr << kCommand << ": no channel with id " << channel << "\n";
      return kExitFailure;
    }
    std::cout << "channel " << channel << ": breaker ";
    if (change->before == "closed") {
      std::cout << "was already closed, ";
    } else {
      std::cout << change->before << " → closed, ";
    }
    if (change->jobs > 0) {
      std::cout << ParkedDeliveries(change->jobs) << " back in the queue";
    } else {
      // ResetBreaker unparks nothing on a paused channel. Now that the breaker is closed, the
      // channel is listed only if it is paused.
      std::optional<BreakerRow> paused;
      for (auto& row : store.ListBreakers()) {
        if (row.channel == channel && row.paused) paused = std::move(row);
      }
      if (paused) {
        std::cout << "but the channel is paused: its " << ParkedDeliveries(paused->parked)
                  << " stay parked until `bulkhead channel resume " << channel << "`";
      } else {
        std::cout << "nothing was parked";
      }
    }
    std::cout << "\n";
    return kExitOk;
  });
}

}  // namespace

int RunBreakersCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead breakers";
  auto parsed = cli::Parse(kCommand, args, {.options = {cli::kJsonFlag}, .max_positional = 0},
                           [] { std::cout << kBreakersUsage; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  return cli::WithStore<AdminChannelStore>(kCommand, words, [&](AdminChannelStore& store) {
    std::vector<BreakerRow> rows = store.ListBreakers();
    if (words.Has("--json")) {
      std::cout << BreakersJson(rows).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                << "\n";
    } else if (rows.empty()) {
      std::cout << "no open breakers or paused channels\n";
    } else {
      PrintBreakerTable(rows);
    }
    return kExitOk;
  });
}

int RunBreakerCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead breaker";
  constexpr std::string_view kResetCommand = "bulkhead breaker reset";
  auto print_help = [] { std::cout << kBreakerUsage; };
  if (args.empty()) return cli::UsageError(kCommand, "missing subcommand (reset)");
  if (args.front() != "reset") {
    if (args.front() == "-h" || args.front() == "--help") {
      print_help();
      return kExitOk;
    }
    return cli::UsageError(kCommand,
                           "unknown subcommand '" + cli::OneLine(args.front()) + "' (reset)");
  }
  auto parsed =
      cli::Parse(kResetCommand, args.subspan(1), {.options = {}, .max_positional = 1}, print_help);
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  std::optional<int64_t> channel = cli::TakeChannel(kResetCommand, words);
  if (!channel) return kExitUsage;
  return Reset(*channel, words);
}

}  // namespace bulkhead
