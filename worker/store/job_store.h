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

namespace bulkhead {

// A job this node has just claimed, with what the request needs.
struct ClaimedJob {
  int64_t id = 0;
  int64_t channel_id = 0;
  int64_t tenant_id = 0;
  int attempt = 0;  // this attempt, 1-based
  int max_attempts = 0;
  std::string payload;  // the request body: payload::text
  std::string url;
  std::string secret;  // the current secret (channels.secret)
  // Old secrets still in their rotation window, newest retired first; usually none.
  std::vector<std::string> old_secrets;
  bool probe = false;  // sent as its channel's one breaker probe (ClaimProbes)
  double wait_s = 0;   // Claim only: seconds from its enqueue or scheduled retry to the claim
};

// The outcome of one attempt, to be written back.
struct AttemptResult {
  int64_t id = 0;
  int attempt = 0;         // the attempt it answers; a result for another attempt is stale
  bool delivered = false;  // a 2xx arrived
  int status = 0;          // HTTP status, 0 if none arrived
  std::string error;       // why it failed; empty when delivered
  double duration_ms = 0;
  int64_t retry_delay_ms = 0;  // when not delivered: wait this long before the next attempt
  // A failure no retry can mend (the SSRF guard refused the address): discarded now, whatever
  // attempts remain.
  bool permanent = false;
};

// What a node already runs, for the per-node caps of one claim. The defaults mean no cap.
struct ClaimLimits {
  int channel_cap = 1'000'000;  // jobs one channel may have in flight on this node
  int tenant_cap = 1'000'000;   // jobs one tenant may have in flight on this node
  std::vector<std::pair<int64_t, int>> channels_in_flight;  // channel id → jobs in flight
  std::vector<std::pair<int64_t, int>> tenants_in_flight;   // tenant id → jobs in flight
  // Channels this node demoted that still have jobs in flight here: refilled directly.
  std::vector<int64_t> refill;
};

// A claimed job to give back unattempted (shutdown).
struct OwnedJob {
  int64_t id = 0;
  int attempt = 0;
};

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
  struct GoneAnswer {
    int64_t channel = 0;
    int64_t job = 0;
    int attempt = 0;
    std::string error;  // the job's last_error and attempt log entry
    double duration_ms = 0;
  };
  // disabled: this call disabled the channel (it was enabled); jobs: the jobs it parked, the
  // answering one included.
  struct Gone {
    bool disabled = false;
    int64_t jobs = 0;
  };
  // Disables and pauses the channel (disabled_reason: "the endpoint answered 410 Gone at
  // <UTC time> (job <id>)"), parks its waiting backlog and the answering job (its attempt not
  // spent, if `node` still owns it at that attempt), in one statement.
  Gone DisableGone(const GoneAnswer& answer, const std::string& node);

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
  struct Rescue {
    int64_t jobs = 0;
    int64_t discarded = 0;
    std::string nodes;  // the lost nodes, comma-separated
  };
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
  struct Transition {
    bool done = false;
    int64_t jobs = 0;
  };
  // closed → open, parking the channel's waiting backlog; the probe may go after cooldown_ms.
  Transition OpenBreaker(int64_t channel, int64_t cooldown_ms, const std::string& reason);
  // For up to `limit` channels of `queue` whose cooldown is over: open → half_open, and their
  // oldest due parked job claimed by `node` as the probe, which must answer within
  // probe_window_ms. Jobs come back with probe = true.
  std::vector<ClaimedJob> ClaimProbes(const std::string& queue, int limit, const std::string& node,
                                      int64_t probe_window_ms);
  // half_open → closed after `probe_job` succeeded, unparking the backlog.
  Transition CloseBreaker(int64_t channel, int64_t probe_job);
  // half_open → open after `probe_job` failed; the next probe waits the grown cooldown:
  // min(cooldown_ms × 2^(openings so far), cooldown_max_ms).
  Transition ReopenBreaker(int64_t channel, int64_t probe_job, int64_t cooldown_ms,
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

  struct FleetCount {
    std::string tier;
    std::string state;
    int64_t n = 0;
  };
  struct FleetCounts {
    std::vector<FleetCount> jobs;      // every tier × available, scheduled, parked, executing
    std::vector<FleetCount> breakers;  // every tier × open, half_open (channels)
    std::vector<std::pair<std::string, double>> lag_s;  // every tier: oldest claimable job's age
  };
  // Reads the three samples in one snapshot; each reads one partial index, never finished rows.
  FleetCounts SampleFleet();

  // ---- Operators ----

  struct BreakerRow {
    int64_t channel = 0;
    std::string tenant;
    std::string tier;
    std::string state;  // closed | open | half_open
    bool paused = false;
    std::string since;  // UTC, ISO 8601
    double since_s = 0;
    int trips = 0;          // openings since it was last closed
    std::string reason;     // why it last opened
    double probe_in_s = 0;  // open: until the probe may go; half_open: until its time is up
    int64_t probe_job = 0;  // half_open: the probe's job
    int64_t parked = 0;
  };
  // Channels whose breaker is not closed or that are paused, longest first.
  std::vector<BreakerRow> ListBreakers();

  // What an operator's verb changed: the state before ("open", or "paused"/"running" for a
  // pause or resume) and the jobs it parked or unparked.
  struct ChannelChange {
    std::string before;
    int64_t jobs = 0;
  };
  // Closes the breaker from any state and unparks (unless paused). nullopt: no such channel.
  std::optional<ChannelChange> ResetBreaker(int64_t channel);
  // Pauses the channel, parking its waiting backlog. nullopt: no such channel.
  std::optional<ChannelChange> PauseChannel(int64_t channel);
  // Resumes it, unparking if its breaker is closed. nullopt: no such channel.
  std::optional<ChannelChange> ResumeChannel(int64_t channel);

  // What `bulkhead tenant set-tier` moved: the tenant's name, its tier before, and the
  // waiting jobs moved to the new tier's queue.
  struct TierMove {
    std::string tenant;
    std::string before;
    int64_t available = 0;
    int64_t parked = 0;
  };
  // Moves the tenant `tenant` (a name, or an id) and its waiting jobs to `tier`. nullopt: no
  // such tenant. Throws pqxx::foreign_key_violation when the tier does not exist.
  std::optional<TierMove> SetTenantTier(const std::string& tenant, const std::string& tier);

  // ---- Operators: the admin CLI's reads and bulk changes (see job_store.cc) ----

  // One queue (tier) in `bulkhead status`.
  struct QueueStatus {
    std::string queue;
    int64_t available = 0;  // due now: claimable
    int64_t scheduled = 0;  // available, due later (retries waiting)
    int64_t executing = 0;  // in flight on some node
    int64_t parked = 0;     // held behind a breaker or a pause
    double lag_s = 0;       // age of the oldest claimable job (0 when none)
  };
  // One node in `bulkhead status`.
  struct NodeStatus {
    std::string name, host, version, tiers;  // tiers comma-separated
    int pid = 0;
    double heartbeat_age_s = 0;  // since its last heartbeat
    double lease_left_s = 0;     // negative: its lease ran out that long ago
    int64_t executing = 0;       // jobs it holds in flight
  };
  std::vector<QueueStatus> QueueStatuses();
  std::vector<NodeStatus> NodeStatuses();

  // One job in `bulkhead jobs`: never the payload, only its size.
  struct JobRow {
    int64_t id = 0;
    std::string queue, tenant, state;
    int64_t channel = 0;
    int priority = 0, attempt = 0, max_attempts = 0;
    std::string created_at, scheduled_at, finished_at;  // UTC ISO 8601; finished_at may be ""
    int64_t payload_bytes = 0;
    std::string last_error;  // at most 200 characters
  };
  struct JobFilter {
    std::optional<int64_t> channel, tenant;
    std::optional<std::string> state;
    int limit = 50;
  };
  // The newest jobs matching `filter`, newest first, at most filter.limit.
  std::vector<JobRow> ListJobs(const JobFilter& filter);

  // Which discarded or waiting jobs a replay or a cancel takes. Unset fields do not filter.
  struct JobSelector {
    std::optional<int64_t> id, channel, tenant;
    // Replay only: discarded in [since, until), each bound an absolute time (ISO 8601, with
    // its zone) or an age in seconds before now.
    std::optional<std::string> since_at, until_at;
    std::optional<int64_t> since_age_s, until_age_s;
    int limit = 1000;
  };
  // What a replay or a cancel did: jobs changed, how (available / parked for a replay), and
  // whether more matched beyond the limit.
  struct BulkChange {
    int64_t jobs = 0;
    int64_t available = 0;
    int64_t parked = 0;
    bool more = false;
  };
  // Discarded jobs back to the queue with a fresh attempt budget (attempt 0), oldest discarded
  // first, in the queue of the tenant's tier now; parked if the channel's breaker is not closed
  // or it is paused. Wakes the nodes of the queues that got available jobs.
  BulkChange Replay(const JobSelector& selector);
  // Waiting jobs (available or parked) to cancelled. Jobs in flight are not touched.
  BulkChange Cancel(const JobSelector& selector);
  // The state of one job and its node, for the message when `cancel --id` changed nothing.
  // nullopt: no such job.
  struct JobState {
    std::string state, node;
    int attempt = 0;
  };
  std::optional<JobState> FindJob(int64_t id);

  // A new channel of `tenant` (a name, or an id when no tenant has that name): its id and its
  // generated secret. nullopt: no such tenant. Throws pqxx::check_violation on a bad URL.
  struct NewChannel {
    int64_t id = 0;
    std::string tenant, tier, secret;
  };
  std::optional<NewChannel> AddChannel(const std::string& tenant, const std::string& url);

  // `bulkhead channel show`: everything about a channel but its secret.
  struct ChannelInfo {
    int64_t id = 0;
    int64_t tenant_id = 0;
    std::string tenant, tier, url, created_at;
    bool enabled = true, paused = false;
    std::string disabled_reason;
    std::string breaker_state, breaker_reason;
    int breaker_trips = 0;
    int64_t available = 0, scheduled = 0, executing = 0, parked = 0;
    int64_t old_secrets = 0;        // old secrets still signed with (rotation), never their text
    std::string old_secrets_until;  // when the last of them expires (UTC); empty when none
  };
  std::optional<ChannelInfo> ShowChannel(int64_t channel);

  // `bulkhead channel rotate-secret`, in one transaction with the channel's row locked: the
  // current secret becomes an old one, signed with for `keep_s` seconds more (0: it and every
  // other old secret are dropped at once), and `secret` (empty: a fresh bulkhead.new_secret())
  // becomes current. Throws pqxx::check_violation for a `secret` of the wrong shape — whose
  // DETAIL quotes the row, secret included: print only the first line of such an error.
  struct SecretRotation {
    enum Outcome { kRotated, kNoSuchChannel, kSameSecret } outcome = kRotated;
    std::string secret;             // kRotated: the new current secret
    int64_t old_secrets = 0;        // old secrets still valid after the rotation
    std::string old_secrets_until;  // when the last of them expires (UTC); empty when none
  };
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
  struct TenantInfo {
    int64_t id = 0;
    std::string name, tier, created_at;
    int64_t channels = 0;
    int64_t available = 0, scheduled = 0, executing = 0, parked = 0;
  };
  // By name, or by id when no tenant has that name. nullopt: no such tenant.
  std::optional<TenantInfo> ShowTenant(const std::string& tenant);

 private:
  pqxx::connection_base& conn_;
  // Whether this session plans generically (set by the first Claim; see there).
  bool generic_plans_ = false;
};

}  // namespace bulkhead
