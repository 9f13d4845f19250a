#include "claim_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "claim_store_statements.h"
#include "index_plans.h"
#include "named_queries.h"
#include "pooled_connection.h"

namespace bulkhead {

const std::span<const std::string_view> ClaimStore::kStatements = sql::claim_store::kStatements;
namespace {

// The old secrets of a claimed job, space-separated (NULL: none), as a list.
std::vector<std::string> OldSecrets(const std::optional<std::string>& old) {
  std::vector<std::string> secrets;
  if (!old) return secrets;
  std::string_view rest = *old;
  while (!rest.empty()) {
    size_t space = rest.find(' ');
    secrets.emplace_back(rest.substr(0, space));
    if (space == std::string_view::npos) break;
    rest.remove_prefix(space + 1);
  }
  return secrets;
}

// A job of Claim or ClaimFront (its job columns set: .value() throws on a NULL one, as reading
// it did). The texts are moved out of the row: the payload is copied once, as when it was read
// by name.
template <typename ClaimRow>
ClaimedJob ClaimedFromRow(ClaimRow&& row) {
  ClaimedJob job;
  job.id = row.id.value();
  job.channel_id = row.channel_id.value();
  job.tenant_id = row.tenant_id.value();
  job.attempt = row.attempt.value();
  job.max_attempts = row.max_attempts.value();
  job.payload = std::move(row.payload.value());
  job.url = std::move(row.url.value());
  job.secret = std::move(row.secret.value());
  job.old_secrets = OldSecrets(row.old_secrets);
  job.wait_s = row.wait_s.value();
  job.rate_limit_per_s = row.rate_limit_per_s.value_or(0);
  return job;
}

// A probe of ClaimProbes.
ClaimedJob ClaimedFromRow(sql::ClaimProbes::Row&& row) {
  ClaimedJob job;
  job.id = row.id;
  job.channel_id = row.channel_id;
  job.tenant_id = row.tenant_id;
  job.attempt = row.attempt;
  job.max_attempts = row.max_attempts;
  job.payload = std::move(row.payload);
  job.url = std::move(row.url);
  job.secret = std::move(row.secret);
  job.old_secrets = OldSecrets(row.old_secrets);
  job.probe = true;
  return job;
}

// The jobs of a claim's rows, in order, without the parked ones (counted into `parked`), and
// what the claim saw (ClaimStore::Claim's `held_back` and `windows`).
template <typename ClaimRow>
std::vector<ClaimedJob> Claimed(std::vector<ClaimRow> rows, int* parked, int* held_back,
                                ClaimWindows* windows) {
  std::vector<ClaimedJob> jobs;
  jobs.reserve(rows.size());
  int parked_here = 0;
  for (ClaimRow& row : rows) {
    if (!row.id) continue;  // the one row of a claim that took nothing
    if (row.parked.value()) {
      ++parked_here;
      continue;
    }
    jobs.push_back(ClaimedFromRow(std::move(row)));
  }
  const bool took = !rows.empty() && rows[0].id;
  if (parked) *parked = parked_here;
  if (held_back) *held_back = took ? static_cast<int>(rows[0].held_back) : 0;
  if (windows) {
    *windows = ClaimWindows{};
    windows->reported = took;
    if (!rows.empty()) {
      windows->kept = static_cast<int>(rows[0].windows_kept);
      windows->heads = static_cast<int>(rows[0].heads);
      windows->claim_floor = rows[0].claim_floor;
    }
    if (!rows.empty() && rows[0].last_channel) {
      windows->stopped = true;
      windows->last_channel = *rows[0].last_channel;
      windows->last_priority = rows[0].last_priority.value();
    }
  }
  return jobs;
}

}  // namespace

ClaimStore::ClaimStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<ClaimedJob> ClaimStore::Claim(const std::string& queue, int limit,
                                          const std::string& node, const ClaimLimits& limits,
                                          int* parked, int* held_back, ClaimWindows* windows) {
  std::vector<int64_t> channels, tenants;
  std::vector<int> channel_counts, tenant_counts;
  for (const auto& [id, n] : limits.channels_in_flight) {
    channels.push_back(id);
    channel_counts.push_back(n);
  }
  // A per-channel column of the limits, in channels' order, or `otherwise` for each channel
  // when the limits have none.
  auto per_channel = [&](const std::vector<int>& values, int otherwise) {
    return values.size() == channels.size() ? values : std::vector<int>(channels.size(), otherwise);
  };
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
  // paths are switched off for it, and its plans cannot drift with the table (PlanFromIndexes,
  // index_plans.h; the completion writer's connection is set up the same way).
  //
  // Through a pooler in transaction mode (pooled_connection.h) there is no session to keep a
  // setting: the three are made for each transaction, with the statement timeout, and the plan
  // is kept by the statement prepared on each server connection.
  if (!generic_plans_) {
    PlanFromIndexes(conn_);
    generic_plans_ = true;
  }
  // Claim and ClaimFront take the same parameters and return the same columns (ADR 0031).
  auto run = [&]<typename Statement>(const char* name) {
    return Atomically(conn_, name, [&](pqxx::transaction_base& tx) {
      return Statement::Run(
          tx, {.queue = queue,
               .limit = limit,
               .node = node,
               .channels = channels,
               .channel_counts = channel_counts,
               .tenants = tenants,
               .tenant_counts = tenant_counts,
               .channel_cap = limits.channel_cap,
               .tenant_cap = limits.tenant_cap,
               .channel_windows =
                   per_channel(limits.channel_windows, limits.channel_cap),  // none: no slow start
               .first_window = limits.first_window > 0 ? limits.first_window : limits.channel_cap,
               .lend = std::max(limits.lend, 0),
               .lend_windows = per_channel(limits.lend_windows, 0),  // none: no lending
               .look_ahead = std::max(limits.look_ahead, 0),
               .heads_after_channel = limits.heads_after_channel,
               .heads_after_priority = limits.heads_after_priority,
               .max_heads = limits.max_heads > 0 ? limits.max_heads : ClaimLimits::HeadsFor(limit),
               .claim_floor = limits.claim_floor});
    });
  };
  if (limits.front) {
    return Claimed(run.template operator()<sql::ClaimFront>("claim_front"), parked, held_back,
                   windows);
  }
  return Claimed(run.template operator()<sql::Claim>("claim"), parked, held_back, windows);
}

std::vector<ClaimedJob> ClaimStore::Claim(const std::string& queue, int limit,
                                          const std::string& node, int* parked) {
  return Claim(queue, limit, node, ClaimLimits{}, parked);
}

std::vector<ClaimedJob> ClaimStore::ClaimProbes(const std::string& queue, int limit,
                                                const std::string& node, int64_t probe_window_ms) {
  pqxx::work tx(conn_, "claim_probes");
  std::vector<sql::ClaimProbes::Row> rows =
      sql::ClaimProbes::Run(tx, {.queue = queue,
                                 .limit = limit,
                                 .node = node,
                                 .probe_window_ms = static_cast<double>(probe_window_ms)});
  tx.commit();
  std::vector<ClaimedJob> jobs;
  for (sql::ClaimProbes::Row& row : rows) jobs.push_back(ClaimedFromRow(std::move(row)));
  return jobs;
}

int ClaimStore::SnoozeChannel(int64_t channel, int64_t delay_ms) {
  pqxx::work tx(conn_, "snooze_channel");
  int snoozed = static_cast<int>(
      sql::SnoozeChannel::Run(tx, {.channel = channel, .delay_ms = static_cast<double>(delay_ms)}));
  tx.commit();
  return snoozed;
}

std::vector<TokenGrant> ClaimStore::TakeTokens(const std::vector<TokenRequest>& requests) {
  std::vector<int64_t> channels;
  std::vector<int> wanted;
  for (const auto& r : requests) {
    channels.push_back(r.channel);
    wanted.push_back(r.wanted);
  }
  std::vector<TokenGrant> grants;
  for (const sql::TakeTokens::Row& row :
       Atomically(conn_, "take_tokens", [&](pqxx::transaction_base& tx) {
         return sql::TakeTokens::Run(tx, {.channels = channels, .wanted = wanted});
       })) {
    grants.push_back({row.channel_id, row.granted, row.rate.value_or(0), row.tat_in_ms});
  }
  return grants;
}

void ClaimStore::ReturnTokens(const std::vector<TokenRequest>& unused) {
  std::vector<int64_t> channels;
  std::vector<int> tokens;
  for (const auto& r : unused) {
    channels.push_back(r.channel);
    tokens.push_back(r.wanted);
  }
  Atomically(conn_, "return_tokens", [&](pqxx::transaction_base& tx) {
    return sql::ReturnTokens::Run(tx, {.channels = channels, .tokens = tokens});
  });
}

void ClaimStore::MarkAsleep(const std::string& queue, const std::string& node) {
  Atomically(conn_, "mark_asleep", [&](pqxx::transaction_base& tx) {
    return sql::MarkAsleep::Run(tx, {.queue = queue, .node = node});
  });
}

void ClaimStore::MarkAwake(const std::string& queue, const std::string& node) {
  Atomically(conn_, "mark_awake", [&](pqxx::transaction_base& tx) {
    return sql::MarkAwake::Run(tx, {.queue = queue, .node = node});
  });
}

namespace {

// "12 15 40" → {12, 15, 40}, ascending.
std::vector<int64_t> XidList(const std::string& text) {
  std::vector<int64_t> ids;
  std::istringstream in(text);
  for (int64_t id = 0; in >> id;) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace

SleepStart ClaimStore::FellAsleep() {
  Atomically(conn_, "open_wake_gate",
             [&](pqxx::transaction_base& tx) { return sql::OpenWakeGate::RunOne(tx); });
  const sql::FellAsleep::Row row =
      Atomically(conn_, "fell_asleep",
                 [&](pqxx::transaction_base& tx) { return sql::FellAsleep::RunOne(tx); });
  return {.next_xid = row.next_xid,
          .now = {.xmin = row.xmin, .xmax = row.xmax, .running = XidList(row.running)}};
}

RunningXids ClaimStore::RunningTransactions() {
  const sql::RunningTransactions::Row row =
      Atomically(conn_, "running_transactions",
                 [&](pqxx::transaction_base& tx) { return sql::RunningTransactions::RunOne(tx); });
  return {.xmin = row.xmin, .xmax = row.xmax, .running = XidList(row.running)};
}

GoneOutcome ClaimStore::DisableGone(const GoneAnswer& answer, const std::string& node) {
  pqxx::work tx(conn_, "disable_gone");
  const std::vector<sql::DisableGone::Row> rows =
      sql::DisableGone::Run(tx, {.channel = answer.channel,
                                 .job = answer.job,
                                 .attempt = answer.attempt,
                                 .node = node,
                                 .error = answer.error,
                                 .duration_ms = answer.duration_ms});
  tx.commit();
  if (rows.empty()) return {};
  return {rows[0].was_enabled, rows[0].jobs};
}

int ClaimStore::HandBack(const std::vector<OwnedJob>& jobs, const std::string& node) {
  nlohmann::json batch = nlohmann::json::array();
  for (const auto& j : jobs) batch.push_back({{"id", j.id}, {"attempt", j.attempt}});
  pqxx::work tx(conn_, "hand_back");
  int written = static_cast<int>(sql::HandBack::Run(tx, {.jobs = batch.dump(), .node = node}));
  tx.commit();
  return written;
}

}  // namespace bulkhead
