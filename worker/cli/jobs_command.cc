#include "jobs_command.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "admin_jobs_store.h"
#include "cli_common.h"
#include "exit_codes.h"

namespace bulkhead {
namespace {

// ---- bulkhead jobs ---------------------------------------------------------------------------

constexpr int kJobsDefaultLimit = 50;
constexpr int kJobsMaxLimit = 1000;

constexpr const char* kJobsUsage =
    R"(usage: bulkhead jobs [--channel ID] [--tenant ID] [--state STATE] [--limit N] [--json] [--database URL]

Lists jobs, newest first (by id), at most N (default 50, at most 1000):

  ID         the job id, also its webhook-id
  QUEUE      the tier whose queue it is in
  TENANT     its tenant's name        CHANNEL  its channel id
  STATE      available | executing | parked | completed | discarded | cancelled
  PRI        1 fresh, 3 back from parking or replayed (2: demoted by a version before issue 16)
  ATTEMPT    attempts made / its budget
  SCHEDULED  when it is (or was) due, UTC;  FINISHED: when it ended ("-" if it has not)
  BYTES      the payload's stored size: the payload itself is never printed
  ERROR      the last error, cut to 200 characters

--channel and --tenant take ids; --state one of the states above. --json prints a JSON array
of objects with the keys id, queue, tenant, channel, state, priority, attempt, max_attempts,
created_at, scheduled_at, finished_at (null if not finished), payload_bytes, last_error.
The listing walks the newest jobs back; a filter that matches only a few of very many jobs
gives up after 10 s with a database error (statement timeout).

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

bool IsState(std::string_view word) {
  for (std::string_view state :
       {"available", "executing", "parked", "completed", "discarded", "cancelled"}) {
    if (word == state) return true;
  }
  return false;
}

// --NAME ID into *id; false after printing the usage error.
bool TakeId(std::string_view command, const cli::Words& words, std::string_view option,
            std::optional<int64_t>* id) {
  std::optional<std::string> value = words.Value(option);
  if (!value) return true;
  *id = cli::TakeId(command, option, "an id", *value);
  return id->has_value();
}

void PrintJobs(const std::vector<JobRow>& rows) {
  std::vector<std::vector<std::string>> table = {{"ID", "QUEUE", "TENANT", "CHANNEL", "STATE",
                                                  "PRI", "ATTEMPT", "SCHEDULED", "FINISHED",
                                                  "BYTES", "ERROR"}};
  for (const auto& r : rows) {
    table.push_back({std::to_string(r.id), cli::Cell(r.queue), cli::Cell(r.tenant),
                     std::to_string(r.channel), r.state, std::to_string(r.priority),
                     std::to_string(r.attempt) + "/" + std::to_string(r.max_attempts),
                     r.scheduled_at, cli::Cell(r.finished_at), std::to_string(r.payload_bytes),
                     cli::Cell(r.last_error)});
  }
  cli::PrintTable(table);
}

void PrintJobsJson(const std::vector<JobRow>& rows) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    list.push_back({{"id", r.id},
                    {"queue", r.queue},
                    {"tenant", r.tenant},
                    {"channel", r.channel},
                    {"state", r.state},
                    {"priority", r.priority},
                    {"attempt", r.attempt},
                    {"max_attempts", r.max_attempts},
                    {"created_at", r.created_at},
                    {"scheduled_at", r.scheduled_at},
                    {"finished_at", r.finished_at.empty() ? nlohmann::ordered_json()
                                                          : nlohmann::ordered_json(r.finished_at)},
                    {"payload_bytes", r.payload_bytes},
                    {"last_error", r.last_error}});
  }
  std::cout << list.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// ---- bulkhead replay and cancel ---------------------------------------------------------------

constexpr int kBulkDefaultLimit = 1000;
constexpr int kBulkMaxLimit = 100000;

constexpr const char* kReplayUsage =
    R"(usage: bulkhead replay [--id JOB] [--channel ID] [--tenant ID] [--since TIME] [--until TIME] [--limit N] [--database URL]

Puts discarded jobs back in the queue, oldest discarded first, at most N per run (default 1000,
at most 100000), in one statement, and says how many. At least one selector is required: a
replay of every discarded job is refused. Selectors combine (all must match):

  --id JOB        that job
  --channel ID    jobs of that channel         --tenant ID   jobs of that tenant
  --since TIME    discarded at or after TIME   --until TIME  discarded before TIME

TIME is a UTC time "2026-11-30", "2026-11-30T14:05[:09]" (or with a zone, "…+01:00"), or an
age before now: "90s", "15m", "2h", "7d".

A replayed job starts a fresh attempt budget (attempt 0 of its max_attempts), is due at once,
goes to the queue of its tenant's tier now, and waits behind fresh deliveries (priority 3), so
a large replay cannot starve them. If its channel's breaker is not closed, or the channel is
paused or disabled, it is replayed parked and leaves with the channel's parked backlog. Its
attempt log and last error stay as history. It keeps its id, so the receiver sees the same
webhook-id again.

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

constexpr const char* kCancelUsage =
    R"(usage: bulkhead cancel (--id JOB | --channel ID | --tenant ID) [--limit N] [--database URL]

Cancels waiting jobs: available (due now or later, retries included) and parked ones become
`cancelled` and are never sent. By --id one job; by --channel or --tenant their waiting jobs,
at most N per run (default 1000, at most 100000), in one statement; it says how many.

A job in flight (executing) cannot be cancelled: its request is already on the wire. `cancel
--id` refuses it (exit 1); by channel or tenant it is left alone. Its result is recorded as
usual; to stop its retries, pause the channel (`bulkhead channel pause`) and cancel after.

The database is --database URL, else the "database" of --config FILE, else DATABASE_URL,
else libpq's PG* variables.
)";

// The selector words of replay (with times) or cancel; false after printing a usage error.
bool TakeSelector(std::string_view command, const cli::Words& words, bool times,
                  JobSelector* selector) {
  if (!TakeId(command, words, "--id", &selector->id) ||
      !TakeId(command, words, "--channel", &selector->channel) ||
      !TakeId(command, words, "--tenant", &selector->tenant)) {
    return false;
  }
  if (times) {
    for (auto [option, at, age] :
         {std::tuple{"--since", &selector->since_at, &selector->since_age_s},
          std::tuple{"--until", &selector->until_at, &selector->until_age_s}}) {
      std::optional<std::string> value = words.Value(option);
      if (!value) continue;
      if (auto seconds = cli::ParseDuration(*value)) {
        *age = *seconds;
      } else if (auto time = cli::ParseTimestamp(*value)) {
        *at = *time;
      } else {
        cli::UsageError(command, std::string(option) +
                                     " must be a time (2026-11-30T14:05Z) or an age (90s, 15m, "
                                     "2h, 7d), not '" +
                                     cli::OneLine(*value) + "'");
        return false;
      }
    }
  }
  std::optional<int> limit =
      cli::ParseLimit(command, words, "--limit", kBulkDefaultLimit, kBulkMaxLimit);
  if (!limit) return false;
  selector->limit = *limit;
  if (!selector->id && !selector->channel && !selector->tenant && !selector->since_at &&
      !selector->since_age_s && !selector->until_at && !selector->until_age_s) {
    cli::UsageError(command, times ? "refusing to replay every discarded job: select with --id, "
                                     "--channel, --tenant, --since or --until"
                                   : "refusing to cancel every waiting job: select with --id, "
                                     "--channel or --tenant");
    return false;
  }
  return true;
}

std::string Jobs(int64_t n, std::string_view adjective) {
  return std::to_string(n) + " " + std::string(adjective) + (n == 1 ? " job" : " jobs");
}

// Why a job given by --id was not changed; exit 1.
int NotChanged(std::string_view command, AdminJobsStore& store, int64_t id,
               std::string_view wanted) {
  std::optional<JobState> job = store.FindJob(id);
  std::cerr << command << ": ";
  if (!job) {
    std::cerr << "no job with id " << id;
  } else if (job->state == "executing") {
    std::cerr << "job " << id << " is executing (attempt " << job->attempt << " on node "
              << cli::OneLine(job->node)
              << "): a delivery in flight cannot be cancelled; its result is recorded when it "
                 "ends";
  } else {
    std::cerr << "job " << id << " is " << job->state << ", not " << wanted;
  }
  std::cerr << "\n";
  return kExitFailure;
}

}  // namespace

int RunJobsCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead jobs";
  auto parsed = cli::Parse(kCommand, args,
                           {.options = {{"--channel", "a channel id"},
                                        {"--tenant", "a tenant id"},
                                        {"--state", "a state"},
                                        {"--limit", "a number"},
                                        cli::kJsonFlag},
                            .max_positional = 0},
                           [] { std::cout << kJobsUsage; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  JobFilter filter;
  if (!TakeId(kCommand, words, "--channel", &filter.channel) ||
      !TakeId(kCommand, words, "--tenant", &filter.tenant)) {
    return kExitUsage;
  }
  filter.state = words.Value("--state");
  if (filter.state && !IsState(*filter.state)) {
    return cli::UsageError(kCommand,
                           "--state must be available, executing, parked, completed, discarded "
                           "or cancelled, not '" +
                               cli::OneLine(*filter.state) + "'");
  }
  std::optional<int> limit =
      cli::ParseLimit(kCommand, words, "--limit", kJobsDefaultLimit, kJobsMaxLimit);
  if (!limit) return kExitUsage;
  filter.limit = *limit;
  return cli::WithStore<AdminJobsStore>(kCommand, words, [&](AdminJobsStore& store) {
    std::vector<JobRow> rows = store.ListJobs(filter);
    if (words.Has("--json")) {
      PrintJobsJson(rows);
    } else if (rows.empty()) {
      std::cout << "no jobs match\n";
    } else {
      PrintJobs(rows);
    }
    return kExitOk;
  });
}

int RunReplayCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead replay";
  auto parsed = cli::Parse(kCommand, args,
                           {.options = {{"--id", "a job id"},
                                        {"--channel", "a channel id"},
                                        {"--tenant", "a tenant id"},
                                        {"--since", "a time"},
                                        {"--until", "a time"},
                                        {"--limit", "a number"}},
                            .max_positional = 0},
                           [] { std::cout << kReplayUsage; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  JobSelector selector;
  if (!TakeSelector(kCommand, words, true, &selector)) return kExitUsage;
  return cli::WithStore<AdminJobsStore>(kCommand, words, [&](AdminJobsStore& store) {
    BulkChange change = store.Replay(selector);
    if (change.jobs == 0 && selector.id) {
      return NotChanged(kCommand, store, *selector.id, "discarded");
    }
    if (change.jobs == 0) {
      std::cout << "no discarded jobs match\n";
      return kExitOk;
    }
    std::cout << "replayed " << Jobs(change.jobs, "discarded") << ": " << change.available
              << " available, " << change.parked << " parked";
    if (change.parked > 0) std::cout << " (breaker not closed, or channel paused or disabled)";
    if (change.more) {
      std::cout << "; more match: run it again for the next " << selector.limit;
    }
    std::cout << "\n";
    return kExitOk;
  });
}

int RunCancelCommand(std::span<const std::string_view> args) {
  constexpr std::string_view kCommand = "bulkhead cancel";
  auto parsed = cli::Parse(kCommand, args,
                           {.options = {{"--id", "a job id"},
                                        {"--channel", "a channel id"},
                                        {"--tenant", "a tenant id"},
                                        {"--limit", "a number"}},
                            .max_positional = 0},
                           [] { std::cout << kCancelUsage; });
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  const cli::Words& words = std::get<cli::Words>(parsed);
  JobSelector selector;
  if (!TakeSelector(kCommand, words, false, &selector)) return kExitUsage;
  return cli::WithStore<AdminJobsStore>(kCommand, words, [&](AdminJobsStore& store) {
    BulkChange change = store.Cancel(selector);
    if (change.jobs == 0 && selector.id) {
      return NotChanged(kCommand, store, *selector.id, "waiting");
    }
    if (change.jobs == 0) {
      std::cout << "no waiting jobs match\n";
      return kExitOk;
    }
    std::cout << "cancelled " << Jobs(change.jobs, "waiting");
    if (change.more) {
      std::cout << "; more match: run it again for the next " << selector.limit;
    }
    std::cout << "\n";
    return kExitOk;
  });
}

}  // namespace bulkhead
