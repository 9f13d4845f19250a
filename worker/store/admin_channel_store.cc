#include "admin_channel_store.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "admin_channel_store_statements.h"
#include "named_queries.h"

namespace bulkhead {
namespace {

// A text[] column as to_jsonb gave it (a JSON array of strings), or NULL.
std::optional<std::vector<std::string>> EventTypesOf(const std::optional<std::string>& json) {
  if (!json) return std::nullopt;
  return nlohmann::json::parse(*json).get<std::vector<std::string>>();
}

}  // namespace

const std::span<const std::string_view> AdminChannelStore::kStatements =
    sql::admin_channel_store::kStatements;

AdminChannelStore::AdminChannelStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<BreakerRow> AdminChannelStore::ListBreakers() {
  pqxx::work tx(conn_, "list_breakers");
  std::vector<sql::ListBreakers::Row> rows = sql::ListBreakers::Run(tx);
  tx.commit();
  std::vector<BreakerRow> list;
  for (sql::ListBreakers::Row& r : rows) {
    list.push_back({r.channel, std::move(r.tenant), std::move(r.tier), std::move(r.state), r.paused,
                    std::move(r.since), r.since_s, r.trips, std::move(r.reason), r.probe_in_s,
                    r.probe_job, r.parked});
  }
  return list;
}

std::optional<ChannelChange> AdminChannelStore::ResetBreaker(int64_t channel) {
  pqxx::work tx(conn_, "reset_breaker");
  std::vector<sql::ResetBreaker::Row> rows = sql::ResetBreaker::Run(tx, {.channel = channel});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{std::move(rows[0].before), rows[0].jobs, {}};
}

std::optional<ChannelChange> AdminChannelStore::PauseChannel(int64_t channel) {
  pqxx::work tx(conn_, "pause_channel");
  const std::vector<sql::PauseChannel::Row> rows = sql::PauseChannel::Run(tx, {.channel = channel});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{rows[0].before ? "paused" : "running", rows[0].jobs, {}};
}

std::optional<ChannelChange> AdminChannelStore::ResumeChannel(int64_t channel) {
  pqxx::work tx(conn_, "resume_channel");
  std::vector<sql::ResumeChannel::Row> rows = sql::ResumeChannel::Run(tx, {.channel = channel});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  sql::ResumeChannel::Row& r = rows[0];
  if (!r.enabled) return ChannelChange{"disabled", r.jobs, std::move(r.disabled_reason)};
  return ChannelChange{r.before ? "paused" : "running", r.jobs, {}};
}

std::optional<ChannelChange> AdminChannelStore::DisableChannel(int64_t channel,
                                                               const std::string& reason) {
  pqxx::work tx(conn_, "disable_channel");
  const std::vector<sql::DisableChannel::Row> rows =
      sql::DisableChannel::Run(tx, {.channel = channel, .reason = reason});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{rows[0].before ? "enabled" : "disabled", rows[0].jobs, {}};
}

std::optional<ChannelChange> AdminChannelStore::EnableChannel(int64_t channel) {
  pqxx::work tx(conn_, "enable_channel");
  const std::vector<sql::EnableChannel::Row> rows =
      sql::EnableChannel::Run(tx, {.channel = channel});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{rows[0].before ? "enabled" : "disabled", rows[0].jobs, {}};
}

std::optional<NewChannel> AdminChannelStore::AddChannel(const std::string& tenant,
                                                        const std::string& url) {
  pqxx::work tx(conn_, "add_channel");
  std::vector<sql::AddChannel::Row> rows = sql::AddChannel::Run(tx, {.tenant = tenant, .url = url});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  sql::AddChannel::Row& r = rows[0];
  return NewChannel{r.id, std::move(r.tenant), std::move(r.tier), std::move(r.secret)};
}

std::optional<ChannelInfo> AdminChannelStore::ShowChannel(int64_t channel) {
  pqxx::work tx(conn_, "show_channel");
  std::vector<sql::ShowChannel::Row> rows = sql::ShowChannel::Run(tx, {.channel = channel});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  sql::ShowChannel::Row& r = rows[0];
  ChannelInfo info;
  info.id = r.id;
  info.tenant_id = r.tenant_id;
  info.tenant = std::move(r.tenant);
  info.tier = std::move(r.tier);
  info.url = std::move(r.url);
  info.created_at = std::move(r.created_at);
  info.enabled = r.enabled;
  info.paused = r.paused;
  info.disabled_reason = std::move(r.disabled_reason);
  info.breaker_state = std::move(r.breaker_state);
  info.breaker_reason = std::move(r.breaker_reason);
  info.breaker_trips = r.breaker_trips;
  info.available = r.available;
  info.scheduled = r.scheduled;
  info.executing = r.executing;
  info.parked = r.parked;
  info.old_secrets = r.old_secrets;
  info.old_secrets_until = std::move(r.old_secrets_until);
  info.limits.event_types = EventTypesOf(r.event_types);
  info.limits.rate_limit_per_s = r.rate_limit_per_s;
  constexpr int64_t kHeldCap = 100000;  // the statement counts to one more
  info.held = std::min(r.held, kHeldCap);
  info.held_capped = r.held > kHeldCap;
  info.held_keys = r.held_keys;
  return info;
}

std::optional<ChannelLimits> AdminChannelStore::SetChannelLimits(int64_t channel,
                                                                 const ChannelLimits& limits,
                                                                 bool set_event_types,
                                                                 bool set_rate_limit) {
  std::optional<std::string> types;
  if (limits.event_types) {
    // Invalid UTF-8 becomes U+FFFD rather than an exception (the database takes UTF-8 only).
    types = nlohmann::json(*limits.event_types)
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  pqxx::work tx(conn_, "set_channel_limits");
  std::vector<sql::SetChannelLimits::Row> rows =
      sql::SetChannelLimits::Run(tx, {.channel = channel,
                                      .set_event_types = set_event_types,
                                      .event_types = types,
                                      .set_rate_limit = set_rate_limit,
                                      .rate_limit_per_s = limits.rate_limit_per_s});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelLimits{EventTypesOf(rows[0].event_types), rows[0].rate_limit_per_s};
}

SecretRotation AdminChannelStore::RotateSecret(int64_t channel, const std::string& secret,
                                               int64_t keep_s) {
  SecretRotation rotation;
  pqxx::work tx(conn_, "rotate_secret");
  const std::vector<sql::RotateLock::Row> lock =
      sql::RotateLock::Run(tx, {.channel = channel, .secret = secret});
  if (lock.empty()) {
    rotation.outcome = SecretRotation::kNoSuchChannel;
    return rotation;
  }
  if (lock[0].same) {
    rotation.outcome = SecretRotation::kSameSecret;
    return rotation;
  }
  sql::RotateDrop::Run(tx, {.channel = channel, .keep_s = keep_s, .secret = secret});
  if (keep_s > 0) {
    sql::RotateRetire::Run(tx, {.channel = channel, .keep_s = static_cast<double>(keep_s)});
  }
  sql::RotateSet::Row row = sql::RotateSet::RunOne(tx, {.channel = channel, .secret = secret});
  tx.commit();
  rotation.outcome = SecretRotation::kRotated;
  rotation.secret = std::move(row.secret);
  rotation.old_secrets = row.old_secrets;
  rotation.old_secrets_until = std::move(row.old_secrets_until);
  return rotation;
}

std::optional<TierMove> AdminChannelStore::SetTenantTier(const std::string& tenant,
                                                         const std::string& tier) {
  pqxx::work tx(conn_, "set_tenant_tier");
  std::vector<sql::SetTenantTier::Row> rows =
      sql::SetTenantTier::Run(tx, {.tenant = tenant, .tier = tier});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  sql::SetTenantTier::Row& r = rows[0];
  return TierMove{std::move(r.tenant), std::move(r.before), r.available, r.parked};
}

int64_t AdminChannelStore::AddTenant(const std::string& name, const std::string& tier) {
  pqxx::work tx(conn_, "add_tenant");
  int64_t id = sql::AddTenant::RunOne(tx, {.name = name, .tier = tier}).id;
  tx.commit();
  return id;
}

std::optional<TenantInfo> AdminChannelStore::ShowTenant(const std::string& tenant) {
  pqxx::work tx(conn_, "show_tenant");
  std::vector<sql::ShowTenant::Row> rows = sql::ShowTenant::Run(tx, {.tenant = tenant});
  tx.commit();
  if (rows.empty()) return std::nullopt;
  sql::ShowTenant::Row& r = rows[0];
  return TenantInfo{r.id,       std::move(r.name), std::move(r.tier), std::move(r.created_at),
                    r.channels, r.available,       r.scheduled,       r.executing,
                    r.parked};
}

}  // namespace bulkhead
