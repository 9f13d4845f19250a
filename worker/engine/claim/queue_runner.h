// QueueRunner: one tier's queue on this node — claims jobs into free worker slots, sends them
// through the node's HttpSender, and hands each result to the CompletionWriter.
//
// A worker slot is a claimed job whose request is in flight; `workers` bounds them. A request
// that hangs holds its slot until the tier's request timeout, never a thread: the runner's one
// thread only claims, and the HttpSender's one I/O thread drives every request.
//
// Blocked endpoints. An attempt the SSRF guard refused (HttpError::kBlocked) is a permanent
// failure: the job is discarded at once with the guard's reason (AttemptResult::permanent),
// whatever attempts it had left, and the refusal counts as a breaker failure, so the channel's
// backlog parks after failure_threshold refusals instead of being dialled job by job.
//
// Breakers. Every attempt is reported to the tier's BreakerBoard (sent, then its outcome), and
// a trip goes to the BreakerKeeper, which opens the breaker in Postgres. About once a second,
// when a slot is free, the runner also claims probes: for channels whose breaker's cooldown is
// over, one parked job each (fleet-wide, by compare-and-set); a probe's answer goes to the
// keeper, which closes or re-opens the breaker. The claim statement itself never hands out a
// job whose channel's breaker is not closed.
//
// Caps. A CapLedger counts the jobs in flight per channel and per tenant; every claim passes
// the counts, and the claim statement leaves out channels at their window or cap and tenants at
// their cap, and never takes one past it; past a capped backlog it finds the others' jobs through
// its skip scan (ADR 0012). When the caps leave free slots idle, the claim lends them, less the
// tier's reserve, to channels that answer quickly (ADR 0013; the ledger gives the budget and
// each channel's lend window). Caps reached are counted and summarized (CapSummary). After a
// claim whose windows kept nothing, the next one's windows look only 10 rows past its limit,
// not 1,000 (ADR 0014, WindowLookAhead): what they leave unread, the skip scan finds.
//
// Stalled requests. An attempt still in flight `stalled_after_ms` after it was sent gives its
// worker slot back (at most kStalledPerWorker × workers of the tier's requests at once): a
// hanging or slow endpoint costs the node a socket from then on, not one of the slots every
// other tenant needs. It still counts toward its channel's and tenant's caps, so a channel
// held at its cap by stalled requests takes nothing more (and, failing, is lent nothing: the
// slots a stall gives back go to everyone else). Without this, k misbehaving channels
// hold k caps' worth of slots for up to the request timeout: two at the default shares hold
// all of them (the hostile load scenario: healthy p95 6.3 s against a 58 ms gate).
//
// When to claim. The runner claims again at once after a claim that filled every free slot,
// or that took jobs while others ended (its counts went stale), or that left a channel it took
// from below its window with the channel's tenant below its cap (it took less than the caps
// allow; Run says why each matters). Otherwise it waits for a wake-up: an enqueue's NOTIFY (via
// Wake(); before it waits with free slots the runner marks itself asleep, and enqueues notify
// only a queue with a runner so marked: SleepMark, ADR 0019), the end of a job whose channel was at
// its window or cap or whose tenant was at its cap (a slot opened for what the caps held back), or
// the jittered fallback poll (poll_interval ±20 %, which is also what finds retries coming due). A
// claim asks for all free slots at once, so at high throughput one round trip refills many. A claim
// an enqueue's wake-up starts lends nothing, and the next claim, at once, does: beside a borrower
// the news then waits only for the claim in progress, not also for its own claim to lock and write
// the borrower's lent jobs (ADR 0015). After three such claims in a row that took nothing (a lone
// borrower's own enqueues, held by its cap), wake-ups claim as any claim does for a poll
// interval (NewsClaims).
//
// Rate limits. A channel with a rate_limit_per_s sends at most that many requests a second
// across the fleet, one token of its bucket in PostgreSQL a request. For a channel with a
// backlog the runner takes its tokens before the claim, which then takes at most that many of
// its jobs (and returns the tokens it found no job for); for any other the claim's jobs take
// theirs after, and those without one are handed back at once, unsent and with the attempt
// unspent. A channel without a token is left out of the claims, as if at its cap, so it never
// holds a slot while it waits (RateGate, ADR 0021).
//
// Endpoint answers. A 429 or 503 with a Retry-After slows its channel down: the job's next
// attempt waits max(its retry delay, min(Retry-After, retry_after_max_ms)) (the Verdict), and
// its channel's waiting jobs are pushed to no earlier than the same time, at most once a
// second per channel. A 410 Gone disables the channel instead of handing the result to the
// writer. Both side effects are EndpointAnswers': queued from the I/O thread, run on the
// runner thread between claims, on the runner's connection.
//
// Metrics and logs. The runner records its tier's metrics (Metrics::Tier) where the events
// happen: the claim's duration and the queue wait on the runner thread, each attempt's outcome
// and duration on the I/O thread — atomics and prometheus-cpp's own histogram lock only. Events
// that repeat with traffic (retries, discards, SSRF refusals, jobs parked at claim, probes) are
// counted into RepeatedEvents and logged as one summary a minute each, never a line per job.
//
// Lease. The runner claims (jobs and probes) only while the node holds its lease (lease.h):
// a node whose heartbeat cannot land stops taking work that rescue would hand to another node.
//
// Reload. Reconfigure() takes new tier settings (workers, shares, timeouts, retries) between
// claims; jobs in flight keep the timeouts they were sent with.
//
// Threads. The runner thread uses the database through the RunnerStore it is given (the
// node's: ClaimStore on a connection of its own, runner_store.h) and claims. Result callbacks run
// on the sender's I/O thread: they take the answer's Verdict (verdict.h: decided once per answer),
// hand its parts to the writer, the breaker's board or keeper, the metrics and the caps, and free
// the slot. Wake(), Reconfigure(), StopClaiming() and in_flight() may be called from any thread.
// The runner must outlive the HttpSender's callbacks, and the keeper and writer must outlive the
// runner: destroy the sender first. The runner thread is a ServiceThread (its start, wake-up, stop
// and the claim's backoff); its loop, the claim rules, is the runner's own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "breaker_keeper.h"
#include "cap_ledger.h"
#include "cap_summary.h"
#include "claim_store.h"
#include "completion_writer.h"
#include "config.h"
#include "endpoint_answers.h"
#include "front_choice.h"
#include "http_sender.h"
#include "lease.h"
#include "logger.h"
#include "metrics.h"
#include "news_claims.h"
#include "rate_gate.h"
#include "retry_policy.h"
#include "runner_store.h"
#include "service_thread.h"
#include "skip_scan_cursor.h"
#include "sleep_mark.h"
#include "store_connection.h"
#include "window_look_ahead.h"

namespace bulkhead {

class QueueRunner {
 public:
  struct Options {
    TierOptions tier;
    std::string node;
    std::chrono::milliseconds poll_interval{1000};
    Metrics* metrics = nullptr;  // nullptr: record nothing (tests, the benchmark's off runs)
    // The node's lease: no claim while it is not held. nullptr: always claim (tests that run
    // a runner without a node).
    const Lease* lease = nullptr;
  };

  // Starts the runner thread, which connects and claims at once (catching up on what was
  // enqueued while no node ran). `store` is the runner's own (runner_store.h): from here on only
  // the runner thread uses it (and HandBackInFlight() after the thread has ended). `store`,
  // `writer` and `keeper` must outlive the runner; `sender` must be destroyed before it.
  QueueRunner(Options options, RunnerStore& store, HttpSender& sender, CompletionWriter& writer,
              BreakerKeeper& keeper);
  // Stops claiming and joins the thread. Does not hand anything back: see HandBackInFlight().
  ~QueueRunner();
  QueueRunner(const QueueRunner&) = delete;
  QueueRunner& operator=(const QueueRunner&) = delete;

  // Claim now: work was enqueued, or the node reconnected and may have missed a wake-up.
  void Wake();

  // New settings for this tier (its name must not change); from the next claim on.
  void Reconfigure(const TierOptions& tier);

  // No more claims. Returns once the runner thread has ended; requests in flight run on.
  void StopClaiming();

  // Gives every job still in flight back as `available` without spending its attempt, and
  // forgets it, so a late answer for it is dropped. Only after StopClaiming(). Returns the
  // number given back; jobs the database no longer had as ours are not counted.
  int HandBackInFlight();

  // Appends the jobs this runner holds: in flight, or answered 410 and waiting for the
  // disable. Any thread. Taken before the writer's (CompletionWriter::HeldJobs): a result
  // reaches the writer before its job leaves the runner, so no job slips between the two.
  void HeldJobs(std::vector<int64_t>* jobs) const;

  size_t in_flight() const;
  // Requests in flight that have given their worker slot back (see "Stalled requests").
  size_t stalled() const;
  // Stalled requests may number at most this many times the tier's workers.
  static constexpr int kStalledPerWorker = 4;
  // The tier's worker slots now (after any reload).
  int workers() const;
  // Whether the runner thread runs and its last claim statement succeeded (false from a
  // failed claim until the next one succeeds): /readyz's "claim loop running".
  bool claim_loop_healthy() const { return running_.load() && claim_ok_.load(); }
  const std::string& queue() const { return options_.tier.name; }
  // Jobs of `channel` (of `tenant`) in flight on this node now.
  int channel_in_flight(int64_t channel) const;
  int tenant_in_flight(int64_t tenant) const;
  // Claim statements run and jobs they returned, since start.
  uint64_t claims() const { return claims_.load(); }
  // Of those claims, the ones a look of the sleeping runner's horizon started (a transaction
  // that ran when it fell asleep ended: SleepMark). How many depends on what else runs on the
  // database, so a test that counts claims leaves these out.
  uint64_t horizon_claims() const { return horizon_claims_.load(); }
  // Of those claims, the ones that ran the front alone (ClaimFront, ADR 0031).
  uint64_t front_claims() const { return front_claims_.load(); }
  uint64_t claimed() const { return claimed_.load(); }
  // Probes sent, and jobs the claim found behind a breaker and parked, since start.
  uint64_t probes() const { return probes_.load(); }
  uint64_t parked_at_claim() const { return parked_at_claim_.load(); }
  // Times a channel (tenant) reached its cap here since start.
  uint64_t channel_caps_hit() const { return cap_summary_.channel_caps_hit(); }
  uint64_t tenant_caps_hit() const { return cap_summary_.tenant_caps_hit(); }
  // Jobs a claim gave this node that their channel's rate limit sent back, since start.
  uint64_t rate_limited() const { return rate_limited_.load(); }
  // Jobs a Retry-After pushed later, and channels a 410 disabled (by this node), since start.
  uint64_t snoozed() const { return answers_.snoozed(); }
  uint64_t channels_gone() const { return answers_.channels_gone(); }

 private:
  void Run();
  // Returns the jobs to send; `taken` gets the rows the claim took (sent or parked). Without
  // `lend`, the claim lends nothing, and `lending_withheld` says whether it could have.
  std::vector<ClaimedJob> ClaimOrBackOff(int limit, bool lend, int* taken, bool* lending_withheld);
  // Registers the jobs as in flight; returns the channels and tenants they brought to the cap.
  using CapsReached = CapLedger::AtCap;
  std::vector<ClaimedJob> ClaimProbes(int limit);
  CapsReached Dispatch(std::vector<ClaimedJob> jobs);
  // Takes a token for each job of a rate-limited channel (RateGate) and hands back, unsent,
  // those its channel's bucket did not grant; returns the jobs to send. Runner thread.
  std::vector<ClaimedJob> AdmitByRate(std::vector<ClaimedJob> jobs);
  void OnOutcome(int64_t job_id, int attempt, const HttpOutcome& outcome);  // I/O thread
  std::chrono::steady_clock::time_point NextPoll();

  // Constant after construction (options_.tier is the tier as started; tier_ is current).
  const Options options_;
  RunnerStore& store_;  // used only by the runner thread (and HandBackInFlight() after it)
  HttpSender& sender_;
  CompletionWriter& writer_;
  BreakerKeeper& keeper_;
  BreakerBoard& board_;

  struct InFlight {
    // The job's attempt in the database, under this node: what its result is written as.
    int attempt = 0;
    // The attempt the request on the wire was sent as, which its answer carries. It differs
    // from `attempt` only for a job rescued while in flight here and claimed again by this
    // node (a database outage longer than the lease): the request already sent answers for
    // the new attempt, so the job is neither sent nor counted twice (issue 31).
    int sent_attempt = 0;
    int64_t channel = 0;
    int64_t tenant = 0;
    bool probe = false;
    bool last_attempt = false;  // a failure discards the job
    std::chrono::steady_clock::time_point sent_at{};
    bool stalled = false;  // gave its worker slot back (counted in stalled_)
  };
  // Slots in use: jobs in flight that have not given theirs back. Under mu_.
  int Occupied() const { return static_cast<int>(in_flight_.size()) - stalled_; }
  // Marks the requests in flight past stalled_after_ms as stalled, while the budget allows;
  // returns when the next one will be, or time_point::max() when none will. Under mu_.
  std::chrono::steady_clock::time_point ReleaseStalled(std::chrono::steady_clock::time_point now);

  // Taken before answers_' own mutex, never after: the waits read answers_.due() under mu_.
  // Also service_'s: the runner thread waits under it.
  mutable std::mutex mu_;
  // Guarded by mu_.
  TierOptions tier_;
  std::optional<RetryPolicy> retry_;  // always set; optional only to re-make it on reload
  CapLedger caps_;
  std::unordered_map<int64_t, InFlight> in_flight_;  // by job id
  int stalled_ = 0;                                  // entries of in_flight_ marked stalled
  bool wake_ = false;
  bool news_ = false;   // Wake() since the last claim: an enqueue (or a reconnect)
  uint64_t ended_ = 0;  // jobs ended since start (OnOutcome), for Run's claim-again rule

  std::atomic<uint64_t> claims_{0};
  std::atomic<uint64_t> horizon_claims_{0};
  std::atomic<uint64_t> front_claims_{0};
  std::atomic<uint64_t> claimed_{0};
  std::atomic<uint64_t> probes_{0};
  std::atomic<uint64_t> parked_at_claim_{0};
  std::atomic<uint64_t> rate_limited_{0};
  std::atomic<bool> running_{false};
  std::atomic<bool> claim_ok_{true};

  // Constant after construction: this tier's metric children (nullptr when not recording),
  // and the summaries of its repeated events (each safe for concurrent Add()).
  const Metrics::Tier* const metrics_;
  RepeatedEvent parked_log_;
  RepeatedEvent probes_log_;
  RepeatedEvent retries_log_[3];  // failed, timeout, refused
  RepeatedEvent discarded_log_;
  RepeatedEvent blocked_log_;       // SSRF refusals: discarded at once, logged apart
  RepeatedEvent rate_limited_log_;  // jobs a rate limit sent back

  // Caps reached, counted and summarized (runner thread; see cap_summary.h).
  CapSummary cap_summary_;
  // How far past its limit the next claim's windows read, from what the last one saw (runner
  // thread only; see window_look_ahead.h).
  WindowLookAhead look_ahead_;
  SkipScanCursor heads_;  // where the next claim's skip scan starts (issue 34)
  // The claim floor the last claim returned, which the next one passes (runner thread only;
  // ADR 0027). 0 until the first claim: it reads from the lowest id.
  int64_t claim_floor_ = 0;
  // Whether the next claim runs the front alone (runner thread only; see front_choice.h). And
  // whether the last one ran it and fell short, so that the runner claims again at once, with
  // the whole claim, for what the front does not read.
  FrontChoice front_;
  bool front_fell_short_ = false;
  // The 410 and Retry-After side effects: queued from the I/O thread, applied on the runner
  // thread with store_ (safe for concurrent use; see endpoint_answers.h).
  EndpointAnswers answers_;
  // Whether enqueues must notify this runner now (runner thread only; see sleep_mark.h).
  SleepMark sleep_;
  // Whether a wake-up's claim lends nothing (runner thread only; see news_claims.h).
  NewsClaims news_claims_;
  // Channels whose claimed jobs Dispatch handed back because the board knows them open while
  // the database may still read them closed (runner thread only). Each claim leaves them out,
  // as if at their cap, while the keeper's open of them is pending: without that the runner,
  // below its caps for them, claimed and handed back the same jobs in a tight loop until the
  // open committed (667 claims a second, issue 31). Once it has, the claim parks whatever of
  // them it picks (a hand-back that crossed the opening), as for any channel that is open.
  std::set<int64_t> handed_back_open_;
  // The channels' rate limits (runner thread only; see rate_gate.h): each claim takes at most
  // a limited channel's predicted tokens, and what its bucket does not grant goes back at once.
  RateGate rate_;
  // When a channel the rate limits left out has a token again: claim then (runner thread).
  std::chrono::steady_clock::time_point rate_due_ = std::chrono::steady_clock::time_point::max();

  ServiceThread service_{mu_};  // the runner thread: started last, joined first
};

}  // namespace bulkhead
