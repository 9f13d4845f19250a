// AdminChannelStore: what the operators' verbs that look at and change channels, breakers and
// tenants run — bulkhead breakers, breaker reset, channel add | show | pause | resume |
// disable | enable | rotate-secret | set, tenant add | show | set-tier. Its SQL is
// worker/store/admin_channel_store.sql; the store prepares only those statements. `bulkhead status`
// reads ListBreakers from it, beside AdminJobsStore on the same connection.
//
// Used by one thread, the CLI's, on a connection of its own (cli::WithStore). Database errors
// throw pqxx exceptions, which the verb prints as one line. Construction throws
// std::logic_error when the build embedded no statement of a name it needs (named_queries.h).
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class AdminChannelStore {
 public:
  // Every statement of admin_channel_store.sql, listed by the build from it (named_queries.cmake);
  // the constructor prepares them.
  static const std::span<const std::string_view> kStatements;

  // Prepares its statements on `conn`, which must outlive the store.
  explicit AdminChannelStore(pqxx::connection_base& conn);

  // ---- Breakers ----

  // Channels whose breaker is not closed or that are paused, longest first.
  std::vector<BreakerRow> ListBreakers();
  // Closes the breaker from any state and unparks (unless paused). nullopt: no such channel.
  std::optional<ChannelChange> ResetBreaker(int64_t channel);

  // ---- Channels ----

  // Pauses the channel, parking its waiting backlog. nullopt: no such channel.
  std::optional<ChannelChange> PauseChannel(int64_t channel);
  // Resumes it, unparking if its breaker is closed. nullopt: no such channel. A disabled
  // channel is not resumed: `before` is "disabled", `jobs` its parked jobs, kept, and `reason`
  // why it is disabled.
  std::optional<ChannelChange> ResumeChannel(int64_t channel);
  // Disables the channel (enqueue refuses it) and pauses it, parking its waiting backlog.
  // nullopt: no such channel. `before` is "enabled" or "disabled".
  std::optional<ChannelChange> DisableChannel(int64_t channel, const std::string& reason);
  // Lets enqueue accept the channel again; its pause (and parked backlog) stays. `jobs` is
  // the parked backlog left. nullopt: no such channel.
  std::optional<ChannelChange> EnableChannel(int64_t channel);
  // A new channel of `tenant` (a name, or an id when no tenant has that name): its id and its
  // generated secret. nullopt: no such tenant. Throws pqxx::check_violation on a bad URL.
  std::optional<NewChannel> AddChannel(const std::string& tenant, const std::string& url);
  // Everything about a channel but its secret. nullopt: no such channel.
  std::optional<ChannelInfo> ShowChannel(int64_t channel);
  // `bulkhead channel rotate-secret`, in one transaction with the channel's row locked: the
  // current secret becomes an old one, signed with for `keep_s` seconds more (0: it and every
  // other old secret are dropped at once), and `secret` (empty: a fresh bulkhead.new_secret())
  // becomes current. Throws pqxx::check_violation for a `secret` of the wrong shape — whose
  // DETAIL quotes the row, secret included: print only the first line of such an error.
  SecretRotation RotateSecret(int64_t channel, const std::string& secret, int64_t keep_s);
  // `bulkhead channel set`: the channel's event types become `limits.event_types` when
  // `set_event_types`, its rate limit `limits.rate_limit_per_s` when `set_rate_limit`; the other
  // stays. Returns both as they are now; nullopt: no such channel. Throws pqxx::check_violation
  // for a value the schema refuses (an empty or over-255-character name, a rate outside
  // (0, 1,000,000]), which the caller is expected to have refused first.
  std::optional<ChannelLimits> SetChannelLimits(int64_t channel, const ChannelLimits& limits,
                                                bool set_event_types, bool set_rate_limit);

  // ---- Tenants ----

  // Moves the tenant `tenant` (a name, or an id) and its waiting jobs to `tier`. nullopt: no
  // such tenant. Throws pqxx::foreign_key_violation when the tier does not exist.
  std::optional<TierMove> SetTenantTier(const std::string& tenant, const std::string& tier);
  // A new tenant: its id. Throws pqxx::foreign_key_violation for an unknown tier and
  // pqxx::unique_violation for a name in use.
  int64_t AddTenant(const std::string& name, const std::string& tier);
  // By name, or by id when no tenant has that name. nullopt: no such tenant.
  std::optional<TenantInfo> ShowTenant(const std::string& tenant);

 private:
  pqxx::connection_base& conn_;
};

}  // namespace bulkhead
