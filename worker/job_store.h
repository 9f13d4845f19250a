// JobStore: every statement a worker node runs, in one place, as named prepared statements.
//
// Each statement has a one-line contract here and its reasons beside its SQL in job_store.cc.
// Batches travel as one JSON parameter unpacked by jsonb_to_recordset(), so one round trip
// finishes hundreds of jobs without building array literals by hand.
//
// One JobStore per connection, and both belong to one thread (a queue runner, the completion
// writer, the node's main thread). Database errors throw pqxx exceptions; callers that must
// survive an outage catch pqxx::broken_connection and reconnect.
#pragma once

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "store_types.h"

namespace bulkhead {

class JobStore {
 public:
  // Prepares every statement on `conn`, which must outlive the store.
  explicit JobStore(pqxx::connection_base& conn);

  // Claims up to `limit` due jobs of `queue` for `node`, in (priority, scheduled_at, id)
  // order, marking them executing with attempt + 1, and never taking a channel or a tenant
  // past its cap given what the node already runs (`limits`). Picked jobs whose channel's
  // breaker is not closed, or that is paused, are parked instead; `parked` (if given) gets
  // their count.
  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node,
                                const ClaimLimits& limits, int* parked = nullptr);
  // The same without caps.
  std::vector<ClaimedJob> Claim(const std::string& queue, int limit, const std::string& node,
                                int* parked = nullptr);

  // Demotes the fresh waiting jobs (priority 1 → 2) of a channel, or of every channel of a
  // tenant, that reached its cap on a node. Returns the jobs demoted.
  int DemoteChannel(int64_t channel);
  int DemoteTenant(int64_t tenant);

  // Pushes the channel's available jobs to no earlier than now() + delay_ms (a Retry-After);
  // never earlier than they were. Returns the jobs moved.
  int SnoozeChannel(int64_t channel, int64_t delay_ms);

  // An attempt that got 410 Gone: its job, and the channel to disable.
  // disabled: this call disabled the channel (it was enabled); jobs: the jobs it parked, the
  // answering one included.
  // Disables and pauses the channel (disabled_reason: "the endpoint answered 410 Gone at
  // <UTC time> (job <id>)"), parks its waiting backlog and the answering job (its attempt not
  // spent, if `node` still owns it at that attempt), in one statement.
  GoneOutcome DisableGone(const GoneAnswer& answer, const std::string& node);

  // Writes a batch of results for jobs `node` still owns at the given attempt: completes the
  // delivered, reschedules the failed, discards those out of attempts. Stale results (the job
  // was handed back, rescued or claimed again) change nothing. Returns the rows written.
  int Record(const std::vector<AttemptResult>& results, const std::string& node);

  // Gives claimed jobs back as available without spending their attempt. Returns the rows.
  int HandBack(const std::vector<OwnedJob>& jobs, const std::string& node);

  // Makes the tiers known to the database (no-op for known ones).
  void RegisterTiers(const std::vector<std::string>& tiers);

  // Inserts or refreshes this node's row, with a lease of `lease_ms` from now.
  void RegisterNode(const std::string& node, const std::string& host, int pid,
                    const std::string& version, const std::vector<std::string>& tiers,
                    int64_t lease_ms);
  // Moves the node's heartbeat to now and its lease to now + lease_ms.
  void Heartbeat(const std::string& node, int64_t lease_ms);
  // Removes the node's row (clean shutdown).
  void RemoveNode(const std::string& node);

  // ---- Fleet maintenance (the leader's; see job_store.cc) ----

  // Takes the fleet's leadership for this connection's session, which it names after `node`,
  // if no other session holds it (or this one already does). It ends with the connection.
  bool TryLead(const std::string& node);
  // Terminates the leader's connection if it belongs to no node with a running lease (a frozen
  // or cut-off leader). Returns the connections terminated (0 or 1).
  int DeposeLostLeader();
  // Returns the executing jobs of nodes whose lease ran out, and of the node `also` (a node
  // restarting under its old name; empty for none), to the queue, or discards those that used
  // their last attempt.
  Rescue RescueLost(const std::string& also = "");
  // Removes the rows of nodes whose lease ended over `after_ms` ago and that own no job.
  int ForgetNodes(int64_t after_ms);
  // Deletes up to `batch` jobs finished over `retention_ms` ago. Returns how many.
  int PruneFinished(int64_t retention_ms, int batch);
  // Deletes old channel secrets whose rotation window ended and clears the claim's gate of
  // channels left without any. Returns the secrets deleted.
  int PruneOldSecrets();

  // ---- Breaker transitions (compare-and-set; see job_store.cc) ----

  // done: this call made the transition (no other node or operator did it first);
  // jobs: the jobs it parked or unparked with it.
  // closed → open, parking the channel's waiting backlog; the probe may go after cooldown_ms.
  BreakerTransition OpenBreaker(int64_t channel, int64_t cooldown_ms, const std::string& reason);
  // For up to `limit` channels of `queue` whose cooldown is over: open → half_open, and their
  // oldest due parked job claimed by `node` as the probe, which must answer within
  // probe_window_ms. Jobs come back with probe = true.
  std::vector<ClaimedJob> ClaimProbes(const std::string& queue, int limit, const std::string& node,
                                      int64_t probe_window_ms);
  // half_open → closed after `probe_job` succeeded, unparking the backlog.
  BreakerTransition CloseBreaker(int64_t channel, int64_t probe_job);
  // half_open → open after `probe_job` failed; the next probe waits the grown cooldown:
  // min(cooldown_ms × 2^(openings so far), cooldown_max_ms).
  BreakerTransition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
                           int64_t cooldown_max_ms, const std::string& reason);
  // Re-opens `queue`'s half-open breakers whose probe ran out of time. Returns how many.
  int ExpireProbes(const std::string& queue, int64_t cooldown_ms, int64_t cooldown_max_ms);
  // Unparks the jobs of closed, unpaused channels. Returns {jobs, channels}.
  std::pair<int64_t, int64_t> ReconcileParked();
  // Parks the available jobs of channels whose breaker is not closed. Returns {jobs, channels}.
  std::pair<int64_t, int64_t> ParkBehindOpenBreakers();
  // The channels whose breaker is not closed, fleet-wide.
  std::vector<int64_t> NotClosedBreakers();

  // ---- The leader's metrics samples (see job_store.cc) ----

  // Reads the three samples in one snapshot; each reads one partial index, never finished rows.
  FleetCounts SampleFleet();

  // ---- Operators ----

  // Channels whose breaker is not closed or that are paused, longest first.
  std::vector<BreakerRow> ListBreakers();

  // What an operator's verb changed: the state before ("open", or "paused"/"running" for a
  // pause or resume) and the jobs it parked or unparked.
  // Closes the breaker from any state and unparks (unless paused). nullopt: no such channel.
  std::optional<ChannelChange> ResetBreaker(int64_t channel);
  // Pauses the channel, parking its waiting backlog. nullopt: no such channel.
  std::optional<ChannelChange> PauseChannel(int64_t channel);
  // Resumes it, unparking if its breaker is closed. nullopt: no such channel.
  std::optional<ChannelChange> ResumeChannel(int64_t channel);

  // What `bulkhead tenant set-tier` moved: the tenant's name, its tier before, and the
  // waiting jobs moved to the new tier's queue.
  // Moves the tenant `tenant` (a name, or an id) and its waiting jobs to `tier`. nullopt: no
  // such tenant. Throws pqxx::foreign_key_violation when the tier does not exist.
  std::optional<TierMove> SetTenantTier(const std::string& tenant, const std::string& tier);

  // ---- Operators: the admin CLI's reads and bulk changes (see job_store.cc) ----

  // One queue (tier) in `bulkhead status`.
  // One node in `bulkhead status`.
  std::vector<QueueStatus> QueueStatuses();
  std::vector<NodeStatus> NodeStatuses();

  // One job in `bulkhead jobs`: never the payload, only its size.
  // The newest jobs matching `filter`, newest first, at most filter.limit.
  std::vector<JobRow> ListJobs(const JobFilter& filter);

  // Which discarded or waiting jobs a replay or a cancel takes. Unset fields do not filter.
  // What a replay or a cancel did: jobs changed, how (available / parked for a replay), and
  // whether more matched beyond the limit.
  // Discarded jobs back to the queue with a fresh attempt budget (attempt 0), oldest discarded
  // first, in the queue of the tenant's tier now; parked if the channel's breaker is not closed
  // or it is paused. Wakes the nodes of the queues that got available jobs.
  BulkChange Replay(const JobSelector& selector);
  // Waiting jobs (available or parked) to cancelled. Jobs in flight are not touched.
  BulkChange Cancel(const JobSelector& selector);
  // The state of one job and its node, for the message when `cancel --id` changed nothing.
  // nullopt: no such job.
  std::optional<JobState> FindJob(int64_t id);

  // A new channel of `tenant` (a name, or an id when no tenant has that name): its id and its
  // generated secret. nullopt: no such tenant. Throws pqxx::check_violation on a bad URL.
  std::optional<NewChannel> AddChannel(const std::string& tenant, const std::string& url);

  // `bulkhead channel show`: everything about a channel but its secret.
  std::optional<ChannelInfo> ShowChannel(int64_t channel);

  // `bulkhead channel rotate-secret`, in one transaction with the channel's row locked: the
  // current secret becomes an old one, signed with for `keep_s` seconds more (0: it and every
  // other old secret are dropped at once), and `secret` (empty: a fresh bulkhead.new_secret())
  // becomes current. Throws pqxx::check_violation for a `secret` of the wrong shape — whose
  // DETAIL quotes the row, secret included: print only the first line of such an error.
  SecretRotation RotateSecret(int64_t channel, const std::string& secret, int64_t keep_s);

  // Disables the channel (enqueue refuses it) and pauses it, parking its waiting backlog.
  // nullopt: no such channel. `before` is "enabled" or "disabled".
  std::optional<ChannelChange> DisableChannel(int64_t channel, const std::string& reason);
  // Lets enqueue accept the channel again; its pause (and parked backlog) stays. `jobs` is
  // the parked backlog left. nullopt: no such channel.
  std::optional<ChannelChange> EnableChannel(int64_t channel);

  // A new tenant: its id. Throws pqxx::foreign_key_violation for an unknown tier and
  // pqxx::unique_violation for a name in use.
  int64_t AddTenant(const std::string& name, const std::string& tier);
  // By name, or by id when no tenant has that name. nullopt: no such tenant.
  std::optional<TenantInfo> ShowTenant(const std::string& tenant);

 private:
  pqxx::connection_base& conn_;
  // Whether this session plans generically (set by the first Claim; see there).
  bool generic_plans_ = false;
};

}  // namespace bulkhead
