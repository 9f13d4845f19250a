// The values the stores and their callers pass each other: what a claim hands the runner, what
// the completion writer writes back, what the breaker keeper, the leader and the CLI verbs read.
//
// Plain data, no libpqxx, so that pure in-memory rules (CapLedger, Metrics) and the verbs'
// printers include this header and not a store's. Each store's header says which statement
// fills or reads which of them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bulkhead {

// ---- The claim path (ClaimStore, CompletionStore) -----------------------------------------------

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
  // Claim only: the channel's requests a second across the fleet (channels.rate_limit_per_s);
  // 0: no limit. The runner takes a token for each such job before it sends it (RateGate).
  double rate_limit_per_s = 0;
};

// A runner's ask of a limited channel's token bucket (ClaimStore::TakeTokens), and the answer.
struct TokenRequest {
  int64_t channel = 0;
  int wanted = 0;
};
struct TokenGrant {
  int64_t channel = 0;
  int granted = 0;       // of the jobs wanted, how many may go now
  double rate = 0;       // the channel's limit now; 0: none any more (all were granted)
  double tat_in_ms = 0;  // how far the bucket's theoretical arrival time lies ahead of now
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
  // Slow start: each channel of channels_in_flight, in the same order, may have at most its
  // window in flight (at most channel_cap); a channel not among them, first_window. Empty
  // windows: each its channel_cap. first_window 0: channel_cap (no slow start).
  std::vector<int> channel_windows;
  int first_window = 0;
  std::vector<std::pair<int64_t, int>> tenants_in_flight;  // tenant id → jobs in flight
  // Lending (ADR 0013): how many jobs the claim may take beyond the caps once it has taken
  // everything the caps let through (counting that; 0: the caps are strict), and the channels
  // it may lend to: each of channels_in_flight, in the same order, may have at most its lend
  // window in flight, lent jobs included (0: none lent; empty: none for any; a channel not
  // among them gets none).
  int lend = 0;
  std::vector<int> lend_windows;
  // How many rows past the claim's limit each of its windows may read (ADR 0014,
  // WindowLookAhead): the long look-ahead unless the runner chose the short one.
  int look_ahead = kLongLookAhead;
  static constexpr int kLongLookAhead = 1000;
  static constexpr int kShortLookAhead = 10;
  // The skip scan (Claim's $15–$17, issue 34): it starts after the head (channel, priority)
  // `heads_after` (SkipScanCursor; 0, 0: from the lowest) and visits at most `max_heads`
  // (0: HeadsFor(limit)), so that a claim's cost follows its size, not the number of channels
  // with work.
  int64_t heads_after_channel = 0;
  int heads_after_priority = 0;
  int max_heads = 0;
  // The claim floor (Claim's $18, ADR 0027): no job below this id is read. The runner passes
  // the floor its last claim returned; 0 reads from the lowest id.
  int64_t claim_floor = 0;
  // The front alone (ClaimFront, ADR 0031): the first window, without the lower priorities,
  // the skip scan and the lending, for a runner whose last claim took enough (FrontChoice). It
  // may take less than Claim would; when it takes the whole limit it takes what Claim would have.
  bool front = false;
  // The skip scan's bound for a claim of `limit`: twice the limit, at least 64.
  static int HeadsFor(int limit) { return limit * 2 > 64 ? limit * 2 : 64; }
};

// What one claim's windows and skip scan saw (Claim's windows_kept and heads), from which the
// runner chooses the next claim's look-ahead. A claim that took nothing does not report
// (`reported` false: the look-ahead ignores it), though its counts and where its skip scan
// stopped are filled in.
struct ClaimWindows {
  bool reported = false;
  int kept = 0;   // rows the windows found within the caps
  int heads = 0;  // (channel, priority) pairs the skip scan visited; 0 when it did not run
  // The head the skip scan stopped at, reported whenever it ran, even by a claim that took
  // nothing (`stopped`): where the next claim's skip scan starts (SkipScanCursor).
  bool stopped = false;
  int64_t last_channel = 0;
  int last_priority = 0;
  // bulkhead.claim_floor when the claim ran: the next claim's ClaimLimits::claim_floor.
  int64_t claim_floor = 0;
};

// A claimed job to give back unattempted (shutdown).
struct OwnedJob {
  int64_t id = 0;
  int attempt = 0;
};

// An attempt that got 410 Gone: its job, and the channel to disable.
struct GoneAnswer {
  int64_t channel = 0;
  int64_t job = 0;
  int attempt = 0;
  std::string error;  // the job's last_error and attempt log entry
  double duration_ms = 0;
};
// What DisableGone did. disabled: this call disabled the channel (it was enabled); jobs: the
// jobs it parked, the answering one included.
struct GoneOutcome {
  bool disabled = false;
  int64_t jobs = 0;
};

// The transactions running at a snapshot (pg_current_snapshot), their ids 64-bit: every id
// below xmin has ended, none from xmax on has, and of those between, `running` (ascending) have
// not. Read by a sleeping runner (ClaimStore::RunningTransactions, migration 0027).
struct RunningXids {
  int64_t xmin = 0;
  int64_t xmax = 0;
  std::vector<int64_t> running;
};
// What bulkhead.fell_asleep() returns after it opened the wake-up gate: the next transaction id,
// read after the gate opened, and the transactions running (ClaimStore::FellAsleep).
struct SleepStart {
  int64_t next_xid = 0;
  RunningXids now;
};

// ---- The breaker's transitions (BreakerStore) ---------------------------------------------------

// done: this call made the transition (no other node or operator did it first);
// jobs: the jobs it parked or unparked with it.
struct BreakerTransition {
  bool done = false;
  int64_t jobs = 0;
};

// ---- The fleet (FleetStore) ---------------------------------------------------------------------

// Jobs a live node found executing under its name without holding them (ReturnStranded).
struct Stranded {
  int64_t jobs = 0;
  std::string ids;  // the first 20, comma-separated
};

// What RescueLost returned to the queue.
struct Rescue {
  int64_t jobs = 0;
  int64_t discarded = 0;
  std::string nodes;  // the lost nodes, comma-separated
};

// One range of bulkhead.jobs (migration 0021): ids in [low, high).
struct JobRange {
  std::string name;
  std::optional<int64_t> low;   // none for jobs_first (no lower bound) and the default range
  std::optional<int64_t> high;  // none for the default range
  bool is_default = false;
};

// What decides whether the leader drops a range (FleetStore::ReadRangeFacts).
struct RangeFacts {
  bool expired = false;  // no job there finished within the retention
  bool live = false;     // a job there is available, executing or parked
};

// The leader's metrics samples.
struct FleetCount {
  std::string tier;
  std::string state;
  int64_t n = 0;
};
struct FleetCounts {
  std::vector<FleetCount> jobs;      // every tier × available, scheduled, parked, executing
  std::vector<FleetCount> breakers;  // every tier × open, half_open (channels)
  std::vector<std::pair<std::string, double>> lag_s;  // every tier: oldest claimable job's age
  // Every tier: deliveries held behind an earlier one of their ordering key, to 100,000.
  std::vector<std::pair<std::string, int64_t>> ordering_held;
  // Fleet-wide: the age of the job the claim floor stands at (ADR 0027), 0 when none.
  double claim_floor_age_s = 0;
};

// ---- Operators (AdminChannelStore, AdminJobsStore) ----------------------------------------------

// One channel in `bulkhead breakers`.
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

// What an operator's verb changed: the state before ("open", or "paused"/"running" for a
// pause or resume) and the jobs it parked or unparked. A resume refused because the channel is
// disabled says before "disabled", jobs: the parked jobs it kept, reason: why it is disabled.
struct ChannelChange {
  std::string before;
  int64_t jobs = 0;
  std::string reason;
};

// What `bulkhead tenant set-tier` moved: the tenant's name, its tier before, and the
// waiting jobs moved to the new tier's queue.
struct TierMove {
  std::string tenant;
  std::string before;
  int64_t available = 0;
  int64_t parked = 0;
};

// One queue (tier) in `bulkhead status`.
struct QueueStatus {
  std::string queue;
  int64_t available = 0;  // due now: claimable
  int64_t scheduled = 0;  // available, due later (retries waiting)
  int64_t executing = 0;  // in flight on some node
  int64_t parked = 0;     // held behind a breaker or a pause
  double lag_s = 0;       // age of the oldest claimable job (0 when none)
  // Of the scheduled and parked ones, those held behind an earlier delivery of their ordering
  // key, counted to 100,000 (held_capped: there are more).
  int64_t held = 0;
  bool held_capped = false;
  int64_t rate_limited_channels = 0;  // channels of the tier's tenants with a rate limit
};
// One node in `bulkhead status`.
struct NodeStatus {
  std::string name, host, version, tiers;  // tiers comma-separated
  int pid = 0;
  double heartbeat_age_s = 0;  // since its last heartbeat
  double lease_left_s = 0;     // negative: its lease ran out that long ago
  int64_t executing = 0;       // jobs it holds in flight
};

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
// The state of one job and its node, for the message when `cancel --id` changed nothing.
struct JobState {
  std::string state, node;
  int attempt = 0;
};

// A new channel: its id and its generated secret.
struct NewChannel {
  int64_t id = 0;
  std::string tenant, tier, secret;
};

// A channel's subscriptions and rate limit (`bulkhead channel set`, `channel show`).
struct ChannelLimits {
  // The event types bulkhead.publish delivers to it; nullopt: every type; empty: none.
  std::optional<std::vector<std::string>> event_types;
  // Requests a second across the fleet; nullopt: no limit.
  std::optional<double> rate_limit_per_s;
};

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
  ChannelLimits limits;
  // Deliveries held behind an earlier live one of their ordering key, counted to 100,000
  // (held_capped: there are more), and the keys they wait on (among those counted).
  int64_t held = 0;
  bool held_capped = false;
  int64_t held_keys = 0;
};
struct SecretRotation {
  enum Outcome { kRotated, kNoSuchChannel, kSameSecret } outcome = kRotated;
  std::string secret;             // kRotated: the new current secret
  int64_t old_secrets = 0;        // old secrets still valid after the rotation
  std::string old_secrets_until;  // when the last of them expires (UTC); empty when none
};

// `bulkhead tenant show`.
struct TenantInfo {
  int64_t id = 0;
  std::string name, tier, created_at;
  int64_t channels = 0;
  int64_t available = 0, scheduled = 0, executing = 0, parked = 0;
};

}  // namespace bulkhead
