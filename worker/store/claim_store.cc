#include "claim_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string_view>

#include "named_queries.h"
#include "pg_array.h"

namespace bulkhead {
namespace {

// A row of Claim or ClaimProbes, read by column name; `old_secrets` is the space-separated old
// secrets (NULL: none).
ClaimedJob ClaimedFromRow(const pqxx::row& row) {
  ClaimedJob job;
  job.id = row["id"].as<int64_t>();
  job.channel_id = row["channel_id"].as<int64_t>();
  job.tenant_id = row["tenant_id"].as<int64_t>();
  job.attempt = row["attempt"].as<int>();
  job.max_attempts = row["max_attempts"].as<int>();
  job.payload = row["payload"].as<std::string>();
  job.url = row["url"].as<std::string>();
  job.secret = row["secret"].as<std::string>();
  const pqxx::field old = row["old_secrets"];
  if (!old.is_null()) {
    std::string_view rest = old.c_str();
    while (!rest.empty()) {
      size_t space = rest.find(' ');
      job.old_secrets.emplace_back(rest.substr(0, space));
      if (space == std::string_view::npos) break;
      rest.remove_prefix(space + 1);
    }
  }
  return job;
}

}  // namespace

ClaimStore::ClaimStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<ClaimedJob> ClaimStore::Claim(const std::string& queue, int limit,
                                          const std::string& node, const ClaimLimits& limits,
                                          int* parked, int* held_back, ClaimWindows* windows) {
  std::vector<int64_t> channels, channel_counts, tenants, tenant_counts;
  for (const auto& [id, n] : limits.channels_in_flight) {
    channels.push_back(id);
    channel_counts.push_back(n);
  }
  // A per-channel column of the limits, in channels' order, or `otherwise` for each channel
  // when the limits have none.
  auto per_channel = [&](const std::vector<int>& values, int otherwise) {
    return values.size() == channels.size() ? std::vector<int64_t>(values.begin(), values.end())
                                            : std::vector<int64_t>(channels.size(), otherwise);
  };
  const std::vector<int64_t> channel_windows =
      per_channel(limits.channel_windows, limits.channel_cap);  // none: no slow start
  const std::vector<int64_t> lend_windows =
      per_channel(limits.lend_windows, 0);  // none: no lending
  const int first_window = limits.first_window > 0 ? limits.first_window : limits.channel_cap;
  for (const auto& [id, n] : limits.tenants_in_flight) {
    tenants.push_back(id);
    tenant_counts.push_back(n);
  }
  // The claim's custom plans cost more to make (5–10 ms, for its many CTEs) than to run, and
  // its generic plan is as good for every parameter: the LATERALs fix its shape. Plan once.
  // The setting is the session's, made once per connection: as SET LOCAL it cost a
  // transaction block, BEGIN, SET, claim and COMMIT, four round trips for every claim, where
  // the claim alone, one statement, is atomic in autocommit. Every later statement on a
  // claiming connection (the runner's: probes, snooze, 410, hand-back) is planned generically
  // too; each of those is shaped by its SQL, not by its parameters.
  //
  // The generic plan is made at the first claim, from the statistics of that moment, and kept
  // for the connection's life. Each window must read jobs_claim in order and stop early; given
  // the choice, the planner read a big backlog whole instead (a seq scan, or a bitmap scan,
  // then a sort: 15 ms a claim with 40,000 due jobs, measured with auto_explain, against
  // well under a millisecond in order), because a generic plan guesses a LIMIT of $2 + 1000 as
  // a tenth of the table. Every statement on this connection is meant to run from an index
  // (the windows, the skip scan, the channel lookups, probes, hand-back), so the other two access
  // paths are switched off for it, and its plans cannot drift with the table.
  if (!generic_plans_) {
    pqxx::nontransaction(conn_, "generic_plans")
        .exec0(
            "SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off; "
            "SET enable_bitmapscan = off");
    generic_plans_ = true;
  }
  pqxx::nontransaction tx(conn_, "claim");
  pqxx::result rows = tx.exec_prepared(
      "claim", queue, limit, node, PgArray(channels), PgArray(channel_counts), PgArray(tenants),
      PgArray(tenant_counts), limits.channel_cap, limits.tenant_cap, PgArray(channel_windows),
      first_window, std::max(limits.lend, 0), PgArray(lend_windows), std::max(limits.look_ahead, 0),
      limits.heads_after_channel, static_cast<int16_t>(limits.heads_after_priority),
      limits.max_heads > 0 ? limits.max_heads : ClaimLimits::HeadsFor(limit));
  std::vector<ClaimedJob> jobs;
  jobs.reserve(rows.size());
  int parked_here = 0;
  for (const auto& row : rows) {
    if (row["id"].is_null()) continue;  // the one row of a claim that took nothing
    if (row["parked"].as<bool>()) {
      ++parked_here;
      continue;
    }
    jobs.push_back(ClaimedFromRow(row));
    jobs.back().wait_s = row["wait_s"].as<double>();
  }
  const bool took = !rows.empty() && !rows[0]["id"].is_null();
  if (parked) *parked = parked_here;
  if (held_back) *held_back = took ? rows[0]["held_back"].as<int>() : 0;
  if (windows) {
    *windows = ClaimWindows{};
    windows->reported = took;
    if (!rows.empty()) {
      windows->kept = rows[0]["windows_kept"].as<int>();
      windows->heads = rows[0]["heads"].as<int>();
    }
    if (!rows.empty() && !rows[0]["last_channel"].is_null()) {
      windows->stopped = true;
      windows->last_channel = rows[0]["last_channel"].as<int64_t>();
      windows->last_priority = rows[0]["last_priority"].as<int>();
    }
  }
  return jobs;
}

std::vector<ClaimedJob> ClaimStore::Claim(const std::string& queue, int limit,
                                          const std::string& node, int* parked) {
  return Claim(queue, limit, node, ClaimLimits{}, parked);
}

std::vector<ClaimedJob> ClaimStore::ClaimProbes(const std::string& queue, int limit,
                                                const std::string& node, int64_t probe_window_ms) {
  pqxx::work tx(conn_, "claim_probes");
  pqxx::result rows = tx.exec_prepared("claim_probes", queue, limit, node, probe_window_ms);
  tx.commit();
  std::vector<ClaimedJob> jobs;
  for (const auto& row : rows) {
    jobs.push_back(ClaimedFromRow(row));
    jobs.back().probe = true;
  }
  return jobs;
}

int ClaimStore::SnoozeChannel(int64_t channel, int64_t delay_ms) {
  pqxx::work tx(conn_, "snooze_channel");
  int snoozed =
      static_cast<int>(tx.exec_prepared("snooze_channel", channel, delay_ms).affected_rows());
  tx.commit();
  return snoozed;
}

void ClaimStore::MarkAsleep(const std::string& queue, const std::string& node) {
  pqxx::nontransaction tx(conn_, "mark_asleep");
  tx.exec_prepared("mark_asleep", queue, node);
}

void ClaimStore::MarkAwake(const std::string& queue, const std::string& node) {
  pqxx::nontransaction tx(conn_, "mark_awake");
  tx.exec_prepared("mark_awake", queue, node);
}

GoneOutcome ClaimStore::DisableGone(const GoneAnswer& answer, const std::string& node) {
  pqxx::work tx(conn_, "disable_gone");
  pqxx::result rows = tx.exec_prepared("disable_gone", answer.channel, answer.job, answer.attempt,
                                       node, answer.error, answer.duration_ms);
  tx.commit();
  if (rows.empty()) return {};
  return {rows[0]["was_enabled"].as<bool>(), rows[0]["jobs"].as<int64_t>()};
}

int ClaimStore::HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) {
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& j : jobs) batch.push_back({{"id", j.id}, {"attempt", j.attempt}});
  pqxx::work tx(conn_, "hand_back");
  int written = static_cast<int>(tx.exec_prepared("hand_back", batch.dump(), node).affected_rows());
  tx.commit();
  return written;
}

}  // namespace bulkhead
