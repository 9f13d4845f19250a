#include "admin_channel_store.h"

#include "named_queries.h"

namespace bulkhead {

AdminChannelStore::AdminChannelStore(pqxx::connection_base& conn) : conn_(conn) {
  PrepareQueries(conn_, kStatements);
}

std::vector<BreakerRow> AdminChannelStore::ListBreakers() {
  pqxx::work tx(conn_, "list_breakers");
  pqxx::result rows = tx.exec_prepared("list_breakers");
  tx.commit();
  std::vector<BreakerRow> list;
  for (const auto& r : rows) {
    list.push_back(
        {r["channel"].as<int64_t>(), r["tenant"].as<std::string>(), r["tier"].as<std::string>(),
         r["state"].as<std::string>(), r["paused"].as<bool>(), r["since"].as<std::string>(),
         r["since_s"].as<double>(), r["trips"].as<int>(), r["reason"].as<std::string>(),
         r["probe_in_s"].as<double>(), r["probe_job"].as<int64_t>(), r["parked"].as<int64_t>()});
  }
  return list;
}

std::optional<ChannelChange> AdminChannelStore::RunChannelChange(const char* statement,
                                                                 int64_t channel,
                                                                 bool pause_words) {
  pqxx::work tx(conn_, statement);
  pqxx::result rows = tx.exec_prepared(statement, channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  std::string before =
      pause_words ? (r["before"].as<bool>() ? "paused" : "running") : r["before"].as<std::string>();
  return ChannelChange{before, r["jobs"].as<int64_t>(), {}};
}

std::optional<ChannelChange> AdminChannelStore::ResetBreaker(int64_t channel) {
  return RunChannelChange("reset_breaker", channel, false);
}

std::optional<ChannelChange> AdminChannelStore::PauseChannel(int64_t channel) {
  return RunChannelChange("pause_channel", channel, true);
}

std::optional<ChannelChange> AdminChannelStore::ResumeChannel(int64_t channel) {
  pqxx::work tx(conn_, "resume_channel");
  pqxx::result rows = tx.exec_prepared("resume_channel", channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  if (!r["enabled"].as<bool>()) {
    return ChannelChange{"disabled", r["jobs"].as<int64_t>(),
                         r["disabled_reason"].as<std::string>()};
  }
  return ChannelChange{r["before"].as<bool>() ? "paused" : "running", r["jobs"].as<int64_t>(), {}};
}

std::optional<ChannelChange> AdminChannelStore::DisableChannel(int64_t channel,
                                                               const std::string& reason) {
  pqxx::work tx(conn_, "disable_channel");
  pqxx::result rows = tx.exec_prepared("disable_channel", channel, reason);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{
      rows[0]["before"].as<bool>() ? "enabled" : "disabled", rows[0]["jobs"].as<int64_t>(), {}};
}

std::optional<ChannelChange> AdminChannelStore::EnableChannel(int64_t channel) {
  pqxx::work tx(conn_, "enable_channel");
  pqxx::result rows = tx.exec_prepared("enable_channel", channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  return ChannelChange{
      rows[0]["before"].as<bool>() ? "enabled" : "disabled", rows[0]["jobs"].as<int64_t>(), {}};
}

std::optional<NewChannel> AdminChannelStore::AddChannel(const std::string& tenant,
                                                        const std::string& url) {
  pqxx::work tx(conn_, "add_channel");
  pqxx::result rows = tx.exec_prepared("add_channel", tenant, url);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  return NewChannel{r["id"].as<int64_t>(), r["tenant"].as<std::string>(),
                    r["tier"].as<std::string>(), r["secret"].as<std::string>()};
}

std::optional<ChannelInfo> AdminChannelStore::ShowChannel(int64_t channel) {
  pqxx::work tx(conn_, "show_channel");
  pqxx::result rows = tx.exec_prepared("show_channel", channel);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  ChannelInfo info;
  info.id = r["id"].as<int64_t>();
  info.tenant_id = r["tenant_id"].as<int64_t>();
  info.tenant = r["tenant"].as<std::string>();
  info.tier = r["tier"].as<std::string>();
  info.url = r["url"].as<std::string>();
  info.created_at = r["created_at"].as<std::string>();
  info.enabled = r["enabled"].as<bool>();
  info.paused = r["paused"].as<bool>();
  info.disabled_reason = r["disabled_reason"].as<std::string>();
  info.breaker_state = r["breaker_state"].as<std::string>();
  info.breaker_reason = r["breaker_reason"].as<std::string>();
  info.breaker_trips = r["breaker_trips"].as<int>();
  info.available = r["available"].as<int64_t>();
  info.scheduled = r["scheduled"].as<int64_t>();
  info.executing = r["executing"].as<int64_t>();
  info.parked = r["parked"].as<int64_t>();
  info.old_secrets = r["old_secrets"].as<int64_t>();
  info.old_secrets_until = r["old_secrets_until"].as<std::string>();
  return info;
}

SecretRotation AdminChannelStore::RotateSecret(int64_t channel, const std::string& secret,
                                               int64_t keep_s) {
  SecretRotation rotation;
  pqxx::work tx(conn_, "rotate_secret");
  pqxx::result lock = tx.exec_prepared("rotate_lock", channel, secret);
  if (lock.empty()) {
    rotation.outcome = SecretRotation::kNoSuchChannel;
    return rotation;
  }
  if (lock[0]["same"].as<bool>()) {
    rotation.outcome = SecretRotation::kSameSecret;
    return rotation;
  }
  tx.exec_prepared("rotate_drop", channel, keep_s, secret);
  if (keep_s > 0) tx.exec_prepared("rotate_retire", channel, keep_s);
  pqxx::row row = tx.exec_prepared1("rotate_set", channel, secret);
  tx.commit();
  rotation.outcome = SecretRotation::kRotated;
  rotation.secret = row["secret"].as<std::string>();
  rotation.old_secrets = row["old_secrets"].as<int64_t>();
  rotation.old_secrets_until = row["old_secrets_until"].as<std::string>();
  return rotation;
}

std::optional<TierMove> AdminChannelStore::SetTenantTier(const std::string& tenant,
                                                         const std::string& tier) {
  pqxx::work tx(conn_, "set_tenant_tier");
  pqxx::result rows = tx.exec_prepared("set_tenant_tier", tenant, tier);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  return TierMove{r["tenant"].as<std::string>(), r["before"].as<std::string>(),
                  r["available"].as<int64_t>(), r["parked"].as<int64_t>()};
}

int64_t AdminChannelStore::AddTenant(const std::string& name, const std::string& tier) {
  pqxx::work tx(conn_, "add_tenant");
  int64_t id = tx.exec_prepared1("add_tenant", name, tier)["id"].as<int64_t>();
  tx.commit();
  return id;
}

std::optional<TenantInfo> AdminChannelStore::ShowTenant(const std::string& tenant) {
  pqxx::work tx(conn_, "show_tenant");
  pqxx::result rows = tx.exec_prepared("show_tenant", tenant);
  tx.commit();
  if (rows.empty()) return std::nullopt;
  const pqxx::row& r = rows[0];
  return TenantInfo{r["id"].as<int64_t>(),        r["name"].as<std::string>(),
                    r["tier"].as<std::string>(),  r["created_at"].as<std::string>(),
                    r["channels"].as<int64_t>(),  r["available"].as<int64_t>(),
                    r["scheduled"].as<int64_t>(), r["executing"].as<int64_t>(),
                    r["parked"].as<int64_t>()};
}

}  // namespace bulkhead
