#include "queue_runner.h"

#include <algorithm>
#include <random>
#include <utility>

#include "logger.h"
#include "verdict.h"
#include "webhook_request.h"

namespace bulkhead {
namespace {

std::vector<std::chrono::milliseconds> Delays(const std::vector<int64_t>& millis) {
  std::vector<std::chrono::milliseconds> delays;
  for (int64_t ms : millis) delays.emplace_back(ms);
  return delays;
}

// A uniform draw in [0, 1) from a generator of the calling thread's own.
double UnitRandom() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

RepeatedEvent RetryLog(const std::string& tier, const char* outcome) {
  return RepeatedEvent(LogLevel::kInfo, "delivery_retries",
                       {{"tier", tier},
                        {"outcome", outcome},
                        {"detail", "failed attempts rescheduled for a retry"}});
}

}  // namespace

// How often a runner looks for breakers due a probe.
constexpr auto kProbeEvery = std::chrono::seconds(1);
// How often a runner without its node's lease looks again.
constexpr auto kLeaseRecheck = std::chrono::milliseconds(100);

CapLedger::Caps CapsOf(const TierOptions& tier) {
  return CapLedger::For(tier.workers, tier.channel_share, tier.tenant_share, tier.reserve_share);
}

QueueRunner::QueueRunner(Options options, RunnerStore& store, HttpSender& sender,
                         CompletionWriter& writer, BreakerKeeper& keeper)
    : options_(std::move(options)),
      store_(store),
      sender_(sender),
      writer_(writer),
      keeper_(keeper),
      board_(keeper.board(options_.tier.name)),
      tier_(options_.tier),
      retry_(std::in_place, Delays(tier_.retry_delays_ms), tier_.retry_jitter),
      caps_(CapsOf(tier_)),
      metrics_(options_.metrics ? &options_.metrics->ForTier(options_.tier.name) : nullptr),
      parked_log_(LogLevel::kInfo, "jobs_parked_at_claim",
                  {{"tier", options_.tier.name},
                   {"detail", "jobs the claim found behind a breaker that is not closed, parked"}}),
      probes_log_(
          LogLevel::kInfo, "breaker_probes_sent",
          {{"tier", options_.tier.name},
           {"detail", "one parked job per channel due a probe, sent to test its endpoint"}}),
      retries_log_{RetryLog(options_.tier.name, "failed"), RetryLog(options_.tier.name, "timeout"),
                   RetryLog(options_.tier.name, "refused")},
      discarded_log_(LogLevel::kWarn, "deliveries_discarded",
                     {{"tier", options_.tier.name},
                      {"detail", "jobs whose last attempt failed: discarded, not retried"}}),
      blocked_log_(LogLevel::kWarn, "deliveries_blocked",
                   {{"tier", options_.tier.name},
                    {"detail",
                     "jobs discarded at once: the SSRF guard refused their endpoint's address "
                     "(each job's last_error says which and why; allowed_networks lets a "
                     "network through)"}}),
      rate_limited_log_(LogLevel::kInfo, "deliveries_rate_limited",
                        {{"tier", options_.tier.name},
                         {"detail",
                          "claimed jobs of rate-limited channels sent back unsent: their "
                          "channel's fleet-wide bucket had no token left"}}),
      cap_summary_(options_.tier.name, metrics_),
      answers_({options_.tier.name, options_.node, metrics_}, store_, writer_),
      sleep_(options_.tier.name, options_.node),
      news_claims_(options_.poll_interval) {
  service_.Start([this] { Run(); });
}

void QueueRunner::Reconfigure(const TierOptions& tier) {
  {
    std::lock_guard lock(mu_);
    tier_ = tier;
    retry_.emplace(Delays(tier.retry_delays_ms), tier.retry_jitter);
    caps_.SetCaps(CapsOf(tier));
    wake_ = true;  // more workers, or larger caps, may mean room now
  }
  service_.Wake();
}

int QueueRunner::channel_in_flight(int64_t channel) const {
  std::lock_guard lock(mu_);
  return caps_.in_flight(channel);
}

int QueueRunner::tenant_in_flight(int64_t tenant) const {
  std::lock_guard lock(mu_);
  return caps_.tenant_in_flight(tenant);
}

QueueRunner::~QueueRunner() { StopClaiming(); }

void QueueRunner::Wake() {
  {
    std::lock_guard lock(mu_);
    wake_ = true;
    news_ = true;
  }
  service_.Wake();
}

void QueueRunner::StopClaiming() { service_.Stop(); }

size_t QueueRunner::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_.size();
}

void QueueRunner::HeldJobs(std::vector<int64_t>* jobs) const {
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, job] : in_flight_) jobs->push_back(id);
  }
  // After in_flight_: an answer reaches EndpointAnswers before it leaves in_flight_, so a job
  // moving between the two is seen in one of them.
  answers_.HeldJobs(jobs);
}

size_t QueueRunner::stalled() const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(stalled_);
}

std::chrono::steady_clock::time_point QueueRunner::ReleaseStalled(
    std::chrono::steady_clock::time_point now) {
  const auto after = std::chrono::milliseconds(tier_.stalled_after_ms);
  auto next = std::chrono::steady_clock::time_point::max();
  // At or past the request timeout nothing can stall: the rule is off.
  if (tier_.stalled_after_ms >= tier_.request_timeout_ms) return next;
  const int budget = kStalledPerWorker * tier_.workers;
  for (auto& [id, job] : in_flight_) {
    if (job.stalled || job.probe) continue;
    if (job.sent_at + after > now) {
      next = std::min(next, job.sent_at + after);
    } else if (stalled_ < budget) {
      job.stalled = true;
      ++stalled_;
      caps_.Failed(job.channel, now);  // its cap is 1 until it answers quickly
    }
  }
  return next;
}

int QueueRunner::workers() const {
  std::lock_guard lock(mu_);
  return tier_.workers;
}

std::chrono::steady_clock::time_point QueueRunner::NextPoll() {
  // ±20 %: nodes that started together do not poll together.
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             options_.poll_interval * (0.8 + 0.4 * UnitRandom()));
}

void QueueRunner::Run() {
  running_ = true;
  struct Ended {
    std::atomic<bool>& running;
    ~Ended() { running = false; }
  } ended{running_};
  bool more = true;  // claim at once: work may have queued up while no node ran
  auto next_poll = NextPoll();
  auto next_probe = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!service_.stopping()) {
    const auto now = std::chrono::steady_clock::now();
    const auto next_stall = ReleaseStalled(now);
    int free = tier_.workers - Occupied();
    if (now >= cap_summary_.next_summary()) {
      const CapLedger::Caps caps = caps_.caps();
      lock.unlock();
      cap_summary_.Summarize(now, caps);
      lock.lock();
      continue;
    }
    if (now >= answers_.due()) {
      lock.unlock();
      answers_.Apply(now);
      lock.lock();
      continue;
    }
    if (free > 0 && options_.lease && !options_.lease->Held(now)) {
      // The node's heartbeat has not landed for most of a lease: what it claimed now, rescue
      // could give to another node. Wait for a heartbeat (or stop); the node logs the lapse.
      // The leader may delete this node's sleeping mark meanwhile: write it again after.
      sleep_.Lost();
      service_.SleepFor(lock, kLeaseRecheck);
      continue;
    }
    if (free > 0 && now >= next_probe) {
      next_probe = now + kProbeEvery;
      lock.unlock();
      cap_summary_.CountReached(Dispatch(ClaimProbes(free)));
      lock.lock();
      continue;
    }
    if (free > 0 && now >= sleep_.look_at()) {
      // Asleep, and a transaction that was running when the runner fell asleep may have
      // committed a job that could not notify it (SleepMark): claim if one has ended.
      lock.unlock();
      const bool ended = sleep_.Look(store_, now);
      lock.lock();
      if (ended && !more) ++horizon_claims_;
      more = more || ended;
      continue;
    }
    bool due = more || wake_ || now >= next_poll || now >= rate_due_;
    if (free > 0 && due && writer_.Saturated()) {
      // Results are not being written fast enough: claiming more would only pile them up,
      // and what is unwritten is what a crash sends twice (CompletionWriter's bound). Looked
      // at again every 2 ms: a batch takes a few ms to write, so the claims resume soon after.
      service_.SleepFor(lock, std::chrono::milliseconds(2));
      continue;
    }
    if (free > 0 && due) {
      const bool polled = now >= next_poll;
      wake_ = false;
      // An enqueue's wake-up: this claim lends nothing, and the claim right after it does
      // (ADR 0015), while such claims find news (NewsClaims).
      const bool notified = std::exchange(news_, false);
      const bool news = notified && news_claims_.WithoutLending(now);
      // The commit that notified took the mark: write it again before the next wait.
      if (notified) sleep_.Notified();
      const uint64_t ended_before = ended_;
      lock.unlock();
      // The poll writes the sleeping mark again before it claims: the leader deletes the marks
      // of a node whose lease lapsed, and a crash empties the table, unseen by a waiting runner.
      if (polled && sleep_.marked()) sleep_.Write(store_);
      int taken = 0;
      bool lending_withheld = false;
      std::vector<ClaimedJob> jobs =
          AdmitByRate(ClaimOrBackOff(free, !news, &taken, &lending_withheld));
      rate_due_ = rate_.next_due(std::chrono::steady_clock::now());
      if (news) news_claims_.Took(taken, now);
      sleep_.Claimed();
      next_poll = NextPoll();
      std::vector<std::pair<int64_t, int64_t>> claimed;  // channel, tenant
      claimed.reserve(jobs.size());
      for (const auto& job : jobs) claimed.emplace_back(job.channel_id, job.tenant_id);
      CapsReached reached = Dispatch(std::move(jobs));
      cap_summary_.CountReached(reached);
      lock.lock();
      // When to claim again at once, rather than wait for an end that wakes the runner (one of
      // a channel at its window or cap, or of a tenant at its cap), an enqueue or the poll:
      // - the claim filled every free slot;
      // - it took jobs, and jobs ended while it ran: its counts were stale by its end, and the
      //   room those ends opened may fit more. A lone tenant whose count fell below its cap
      //   during a claim waited for the poll (206 deliveries/s against 4,455 uncapped).
      // - it took jobs of a channel that is still below its window and whose tenant is below
      //   its cap: the claim took less than the caps allow it, and no end of that channel will
      //   wake the runner. Either the channel has nothing more due (the next claim takes
      //   nothing, and the runner waits), or the claim left room unused: the skip scan shares
      //   a tenant's room among its channels rounded up, so a channel with fewer jobs than its
      //   share leaves the rest of the tenant's room to no one. A lone tenant on a 100 ms
      //   endpoint drained in bursts between one-second pauses, 1,123 deliveries/s against
      //   3,905 (test ALoneTenantBelowItsCapIsClaimedAgainWithoutWaitingForThePoll).
      // - it was a wake-up's claim, which lent nothing it could have lent: the claim after it
      //   lends. (A wake-up's claim takes the news; a borrower's lent jobs, tens of rows to
      //   lock and write, wait one claim more, where a 50/s tenant's job waited for them.)
      // - it ran the front alone and fell short: the whole claim finds what the front does not
      //   read (lower priorities, the skip scan's heads, lending; ADR 0031).
      // A claim that took nothing found nothing the caps let through.
      const bool below_caps = std::any_of(claimed.begin(), claimed.end(), [&](const auto& c) {
        return !caps_.Holds(c.first, c.second);
      });
      more = taken == free || (taken > 0 && (ended_ != ended_before || below_caps)) ||
             lending_withheld || std::exchange(front_fell_short_, false);
      continue;
    }
    if (free > 0 && sleep_.NeedsMark()) {
      // About to wait with free slots: from now on enqueues must notify this runner. Then
      // claim once more, for what committed before the mark did (SleepMark).
      lock.unlock();
      sleep_.Write(store_);
      lock.lock();
      more = sleep_.marked();
      continue;
    }
    if (free > 0) {
      // The queue was drained, or what is left is capped: wait for an enqueue, a capped
      // channel's slot, the poll, the sleeping mark's next look, or stop.
      service_.WaitUntil(
          lock,
          std::min({next_poll, next_probe, cap_summary_.next_summary(), answers_.due(),
                    sleep_.look_at(), rate_due_}),
          [&] { return wake_ || answers_.due() <= std::chrono::steady_clock::now(); });
    } else {
      // Every slot busy: wait for one to free, for a request to stall and give its slot
      // back, for answers to apply (or stop). A wake-up is remembered meanwhile.
      service_.WaitUntil(
          lock, std::min({cap_summary_.next_summary(), next_stall, answers_.due()}), [&] {
            return Occupied() < tier_.workers || answers_.due() <= std::chrono::steady_clock::now();
          });
    }
  }
  // 410s that arrived before the stop are applied; later ones go to the writer (OnOutcome).
  lock.unlock();
  if (sleep_.marked()) sleep_.Delete(store_);
  answers_.Close(std::chrono::steady_clock::now());
}

QueueRunner::CapsReached QueueRunner::Dispatch(std::vector<ClaimedJob> jobs) {
  // A channel this node has just tripped (or learned open) may still read closed in the
  // database for the round trip it takes the keeper to open it: its jobs go back unsent,
  // with their attempt, and the opening (or the next claim) parks them.
  std::vector<OwnedJob> held;
  std::erase_if(jobs, [&](const ClaimedJob& job) {
    if (job.probe || !board_.KnownOpen(job.channel_id)) return false;
    held.push_back({job.id, job.attempt});
    handed_back_open_.insert(job.channel_id);
    return true;
  });
  if (!held.empty()) {
    try {
      store_.HandBack(held, options_.node);
    } catch (const std::exception& e) {
      // They stay executing under our name until lease rescue; nothing is lost.
      Log(LogLevel::kWarn, "hand_back_failed",
          {{"tier", options_.tier.name}, {"jobs", held.size()}, {"error", FirstLine(e.what())}});
      store_.Reset();
    }
  }
  CapsReached reached;
  if (jobs.empty()) return reached;
  std::vector<OwnedJob> adopted;  // claimed again while in flight here, logged below
  std::chrono::milliseconds connect_timeout, request_timeout;
  {
    // Register before sending, so that the callback always finds its job.
    std::lock_guard lock(mu_);
    std::erase_if(jobs, [&](const ClaimedJob& job) {
      auto [it, inserted] = in_flight_.try_emplace(
          job.id, InFlight{job.attempt, job.attempt, job.channel_id, job.tenant_id, job.probe,
                           job.attempt >= job.max_attempts, std::chrono::steady_clock::now()});
      if (inserted) return false;
      // Rescued while its request is in flight here, and claimed again by this node: that
      // request answers for the new attempt (InFlight::sent_attempt).
      it->second.attempt = job.attempt;
      it->second.last_attempt = job.attempt >= job.max_attempts;
      adopted.push_back({job.id, job.attempt});
      return true;
    });
    for (const auto& job : jobs) {
      CapLedger::Reached r = caps_.Add(job.channel_id, job.tenant_id);
      if (r.channel) reached.channels.emplace_back(job.channel_id, job.tenant_id);
      if (r.tenant) reached.tenants.push_back(job.tenant_id);
    }
    connect_timeout = std::chrono::milliseconds(tier_.connect_timeout_ms);
    request_timeout = std::chrono::milliseconds(tier_.request_timeout_ms);
  }
  for (const auto& [id, attempt] : adopted) {
    Log(LogLevel::kWarn, "claimed_while_in_flight",
        {{"tier", options_.tier.name},
         {"job", id},
         {"attempt", attempt},
         {"detail",
          "rescued while its request was in flight on this node; that request answers for "
          "this attempt, and the job is not sent again"}});
  }
  const auto sent_at = std::chrono::steady_clock::now();
  for (const auto& job : jobs) {
    if (!job.probe) board_.Started(job.channel_id, job.id, sent_at);
  }
  const auto now = std::chrono::system_clock::now();  // every request of a claim: one timestamp
  // The claim's requests go to the sender at once: one wake-up of its I/O thread, not one each.
  std::vector<HttpSender::Outgoing> requests;
  requests.reserve(jobs.size());
  for (auto& job : jobs) {
    const int64_t id = job.id;
    const int attempt = job.attempt;
    std::optional<HttpRequest> request =
        BuildWebhookRequest(job, now, {connect_timeout, request_timeout});
    if (!request) {
      HttpOutcome unsigned_outcome;
      unsigned_outcome.error = HttpError::kOther;
      unsigned_outcome.error_text = kUnsignableSecret;
      OnOutcome(id, attempt, unsigned_outcome);
      continue;
    }
    requests.push_back({std::move(*request), [this, id, attempt](const HttpOutcome& outcome) {
                          OnOutcome(id, attempt, outcome);
                        }});
  }
  if (!requests.empty()) sender_.Send(std::move(requests));
  return reached;
}

void QueueRunner::OnOutcome(int64_t job_id, int attempt, const HttpOutcome& outcome) {
  InFlight job;
  {
    std::lock_guard lock(mu_);
    auto it = in_flight_.find(job_id);
    // Handed back already (shutdown): the database has it as available again.
    if (it == in_flight_.end() || it->second.sent_attempt != attempt) return;
    job = it->second;
  }
  // The database's attempt, which a rescue and a claim again may have moved on from the one
  // the request was sent as.
  attempt = job.attempt;
  // The sender shut down before an answer: no verdict, the job stays registered for
  // HandBackInFlight().
  if (outcome.error == HttpError::kCancelled) {
    service_.Wake();
    return;
  }
  Verdict verdict;
  {
    std::lock_guard lock(mu_);
    verdict = Decide(outcome, {attempt, job.last_attempt, job.probe},
                     {*retry_, std::chrono::milliseconds(tier_.retry_after_max_ms), UnitRandom(),
                      std::chrono::system_clock::now()});
  }
  if (job.probe) {
    keeper_.ProbeAnswered(options_.tier.name, job.channel, job_id, verdict.probe_closes,
                          verdict.error);
  } else if (auto trip = board_.Finished(job.channel, job_id, verdict.breaker, verdict.error,
                                         std::chrono::steady_clock::now())) {
    keeper_.RequestOpen(options_.tier.name, std::move(*trip));
  }
  if (metrics_) {
    metrics_->Delivered(verdict.outcome);
    metrics_->delivery_duration->Observe(std::chrono::duration<double>(outcome.duration).count());
  }
  switch (verdict.outcome) {
    case DeliveryOutcome::kDelivered:
      break;
    case DeliveryOutcome::kDiscarded:
      if (verdict.permanent) {
        blocked_log_.Add();
        if (metrics_) metrics_->blocked->Increment();
      } else {
        discarded_log_.Add();
      }
      break;
    default:
      retries_log_[static_cast<int>(verdict.outcome) - 1].Add();
  }
  AttemptResult result;
  result.id = job_id;
  result.attempt = attempt;
  result.delivered = verdict.delivered;
  result.permanent = verdict.permanent;
  result.status = verdict.status;
  result.error = verdict.error;
  result.duration_ms = verdict.duration_ms;
  result.retry_delay_ms = verdict.retry_delay_ms;
  if (verdict.snoozed) answers_.CountSnoozed();
  if (verdict.snooze_channel.count() > 0) {
    answers_.Snooze(job.channel, std::chrono::steady_clock::now() + verdict.snooze_channel);
  }
  bool gone = false;
  if (verdict.gone) {
    std::lock_guard lock(mu_);
    // The runner applies it; after a stop, the runner is gone: written as a failure.
    gone = !service_.stopping() &&
           answers_.Gone({job.channel, job_id, attempt, verdict.error, result.duration_ms}, result);
  }
  // Before the slot frees: the result is in the writer's hands (or the runner's) before a
  // new claim can follow, so the writer's backlog stays bounded by the slots.
  if (!gone) writer_.Add(std::move(result));
  {
    std::lock_guard lock(mu_);
    // Its stalled mark is read here, not from the copy above: the runner may have set it since.
    auto it = in_flight_.find(job_id);
    if (it != in_flight_.end() && it->second.stalled) --stalled_;
    // Read before the answer moves the channel's window: a quick answer grows it, and a
    // channel at its window would then not count as held back.
    const bool opened = caps_.Holds(job.channel, job.tenant);
    // A failing channel's cap is 1 until an attempt succeeds; only a quick success grows its
    // window (CapLedger).
    if (verdict.breaker == BreakerSignal::kFailure) {
      caps_.Failed(job.channel, std::chrono::steady_clock::now());
    } else if (verdict.delivered &&
               outcome.duration < std::chrono::milliseconds(tier_.stalled_after_ms)) {
      caps_.Succeeded(job.channel);
    } else if (verdict.delivered) {
      caps_.Answered(job.channel);
    }
    in_flight_.erase(job_id);
    caps_.Remove(job.channel, job.tenant);
    ++ended_;
    // Its channel was at its window or cap, or its tenant at its cap: the caps may have held
    // jobs of it back, and this slot is for them. (Read after a quick answer had grown the
    // window, a channel at its window did not count.)
    if (opened) wake_ = true;
  }
  service_.Wake();
}

int QueueRunner::HandBackInFlight() {
  std::vector<OwnedJob> jobs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, job] : in_flight_) {
      jobs.push_back({id, job.attempt});
      caps_.Remove(job.channel, job.tenant);
    }
    in_flight_.clear();
    stalled_ = 0;
  }
  if (jobs.empty()) return 0;
  try {
    return store_.HandBack(jobs, options_.node);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "hand_back_failed",
        {{"tier", options_.tier.name}, {"jobs", jobs.size()}, {"error", FirstLine(e.what())}});
    return 0;
  }
}

}  // namespace bulkhead
