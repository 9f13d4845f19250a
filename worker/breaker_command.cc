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

#include "channel_command.h"
#include "database_url.h"
#include "exit_codes.h"
#include "job_store.h"
#include "logger.h"

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

The database is --database URL, else DATABASE_URL, else libpq's PG* variables.
)";

constexpr const char* kBreakerUsage = R"(usage: bulkhead breaker reset CHANNEL [--database URL]

Closes the channel's circuit breaker from any state (open, half_open, or already closed) and
returns its parked backlog to the queue in the same statement, behind fresh deliveries
(priority 3). The breaker counts afresh (trips 0); a probe still in flight finds it closed and
changes nothing. A paused channel's backlog stays parked until `bulkhead channel resume CHANNEL`.

The database is --database URL, else DATABASE_URL, else libpq's PG* variables.
)";

int UsageError(std::string_view command, const std::string& message) {
  std::cerr << command << ": " << message << " (try: " << command << " --help)\n";
  return kExitUsage;
}

bool WantsHelp(std::span<const std::string_view> args) {
  for (std::string_view arg : args) {
    if (arg == "-h" || arg == "--help") return true;
  }
  return false;
}

// Takes `--database URL` or `--database=URL` at args[*i], advancing *i past the URL.
// Returns false (after printing the usage error) when the URL is missing; nullopt when args[*i]
// is not --database.
std::optional<bool> TakeDatabase(std::string_view command, std::span<const std::string_view> args,
                                 size_t* i, std::optional<std::string>* database) {
  std::string_view arg = args[*i];
  if (arg == "--database") {
    if (*i + 1 == args.size()) {
      UsageError(command, "--database needs a URL");
      return false;
    }
    *database = std::string(args[++*i]);
    return true;
  }
  if (arg.starts_with("--database=")) {
    *database = std::string(arg.substr(sizeof("--database=") - 1));
    return true;
  }
  return std::nullopt;
}

// Connects, hands `act` a JobStore, and turns a database error into one line and exit 1.
template <typename Act>
int WithStore(std::string_view command, const std::optional<std::string>& database, Act act) {
  try {
    pqxx::connection conn(ResolveDatabase(database, std::nullopt));
    JobStore store(conn);
    return act(store);
  } catch (const std::exception& e) {
    // libpq's messages span lines; the first has the reason.
    std::cerr << command << ": database error: " << FirstLine(e.what()) << "\n";
    return kExitFailure;
  }
}

// ---- bulkhead breakers ------------------------------------------------------------------------

// A duration an operator reads at a glance: "45s", "3m12s", "2h05m", "3d04h".
std::string Duration(int64_t seconds) {
  char text[64];
  if (seconds < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else if (seconds < 86400) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds % 3600 / 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", static_cast<long long>(seconds / 86400),
                  static_cast<long long>(seconds % 86400 / 3600));
  }
  return text;
}

// What the PROBE column says: see kBreakersUsage.
std::string ProbeText(const JobStore::BreakerRow& row) {
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
std::string ShownReason(const JobStore::BreakerRow& row) {
  return row.state == "closed" ? "" : row.reason;
}

// One table cell: control characters (a newline in a reason or a tenant name) become spaces,
// so that every channel stays on one line.
std::string Cell(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text.empty() ? "-" : text;
}

// Width in terminal columns, counting UTF-8 code points (tenant names need not be ASCII).
size_t Width(const std::string& text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

void PrintTable(const std::vector<JobStore::BreakerRow>& rows) {
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
  std::vector<size_t> widths(table.front().size(), 0);
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], Width(line[c]));
  }
  for (const auto& line : table) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(widths[c] - Width(line[c]) + 2, ' ');
    }
    std::cout << text << "\n";
  }
}

// Seconds to the millisecond: enough for a script, without float noise.
double Millis(double seconds) { return std::round(seconds * 1000) / 1000; }

void PrintJson(const std::vector<JobStore::BreakerRow>& rows) {
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
  std::cout << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// ---- bulkhead breaker reset -------------------------------------------------------------------

// "1 parked delivery", "10000 parked deliveries".
std::string ParkedDeliveries(int64_t n) {
  return std::to_string(n) + (n == 1 ? " parked delivery" : " parked deliveries");
}

int Reset(int64_t channel, const std::optional<std::string>& database) {
  constexpr std::string_view kCommand = "bulkhead breaker reset";
  return WithStore(kCommand, database, [&](JobStore& store) {
    std::optional<JobStore::ChannelChange> change = store.ResetBreaker(channel);
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
      std::optional<JobStore::BreakerRow> paused;
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
  if (WantsHelp(args)) {
    std::cout << kBreakersUsage;
    return kExitOk;
  }
  bool json = false;
  std::optional<std::string> database;
  for (size_t i = 0; i < args.size(); ++i) {
    if (std::optional<bool> took = TakeDatabase(kCommand, args, &i, &database)) {
      if (!*took) return kExitUsage;
    } else if (args[i] == "--json") {
      json = true;
    } else if (args[i].starts_with("-")) {
      return UsageError(kCommand, "unknown option '" + std::string(args[i]) + "'");
    } else {
      return UsageError(kCommand, "unexpected argument '" + std::string(args[i]) + "'");
    }
  }
  return WithStore(kCommand, database, [&](JobStore& store) {
    std::vector<JobStore::BreakerRow> rows = store.ListBreakers();
    if (json) {
      PrintJson(rows);
    } else if (rows.empty()) {
      std::cout << "no open breakers or paused channels\n";
    } else {
      PrintTable(rows);
    }
    return kExitOk;
  });
}

int RunBreakerCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead breaker";
  constexpr std::string_view kResetCommand = "bulkhead breaker reset";
  if (WantsHelp(args)) {
    std::cout << kBreakerUsage;
    return kExitOk;
  }
  if (args.empty()) return UsageError(kCommand, "missing subcommand (reset)");
  if (args.front() != "reset") {
    return UsageError(kCommand, "unknown subcommand '" + std::string(args.front()) + "' (reset)");
  }
  std::span<const std::string_view> rest = args.subspan(1);
  std::optional<std::string_view> channel_word;
  std::optional<std::string> database;
  for (size_t i = 0; i < rest.size(); ++i) {
    std::string_view arg = rest[i];
    // "-3" is a (bad) CHANNEL, not an option.
    bool negative_number =
        arg.size() > 1 && arg[0] == '-' && std::isdigit(static_cast<unsigned char>(arg[1]));
    if (std::optional<bool> took = TakeDatabase(kResetCommand, rest, &i, &database)) {
      if (!*took) return kExitUsage;
    } else if (arg.starts_with("-") && !negative_number) {
      return UsageError(kResetCommand, "unknown option '" + std::string(arg) + "'");
    } else if (!channel_word) {
      channel_word = arg;
    } else {
      return UsageError(kResetCommand, "unexpected argument '" + std::string(arg) + "'");
    }
  }
  if (!channel_word) return UsageError(kResetCommand, "missing CHANNEL");
  std::optional<int64_t> channel = ParseChannelId(*channel_word);
  if (!channel) {
    return UsageError(kResetCommand, "CHANNEL must be a positive integer (a channel id), not '" +
                                         std::string(*channel_word) + "'");
  }
  return Reset(*channel, database);
}

}  // namespace bulkhead
