#include "queue_runner.h"

#include <random>

#include "logger.h"
#include "version.h"
#include "webhook_signature.h"

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

// The reason recorded in jobs.last_error and the attempt log.
std::string FailureReason(const HttpOutcome& outcome) {
  if (outcome.error == HttpError::kNone) return "HTTP " + std::to_string(outcome.status);
  return std::string(HttpErrorName(outcome.error)) + ": " + outcome.error_text;
}

const std::string kUserAgent = std::string("Bulkhead/") + kVersion;

}  // namespace

// How often a runner looks for breakers due a probe.
constexpr auto kProbeEvery = std::chrono::seconds(1);

QueueRunner::QueueRunner(Options options, HttpSender& sender, CompletionWriter& writer,
                         BreakerKeeper& keeper)
    : options_(std::move(options)),
      retry_(Delays(options_.tier.retry_delays_ms), options_.tier.retry_jitter),
      sender_(sender),
      writer_(writer),
      keeper_(keeper),
      board_(keeper.board(options_.tier.name)),
      store_(options_.database),
      thread_([this] { Run(); }) {}

QueueRunner::~QueueRunner() { StopClaiming(); }

void QueueRunner::Wake() {
  {
    std::lock_guard lock(mu_);
    wake_ = true;
  }
  cv_.notify_one();
}

void QueueRunner::StopClaiming() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

size_t QueueRunner::in_flight() const {
  std::lock_guard lock(mu_);
  return in_flight_.size();
}

std::chrono::steady_clock::time_point QueueRunner::NextPoll() {
  // ±20 %: nodes that started together do not poll together.
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             options_.poll_interval * (0.8 + 0.4 * UnitRandom()));
}

void QueueRunner::Run() {
  const int workers = options_.tier.workers;
  bool more = true;  // claim at once: work may have queued up while no node ran
  auto next_poll = NextPoll();
  auto next_probe = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stop_) {
    int free = workers - static_cast<int>(in_flight_.size());
    if (free > 0 && std::chrono::steady_clock::now() >= next_probe) {
      next_probe = std::chrono::steady_clock::now() + kProbeEvery;
      lock.unlock();
      Dispatch(ClaimProbes(free));
      lock.lock();
      continue;
    }
    bool due = more || wake_ || std::chrono::steady_clock::now() >= next_poll;
    if (free > 0 && due && writer_.Saturated()) {
      // Results are not being written fast enough: claiming more would only pile them up.
      cv_.wait_for(lock, std::chrono::milliseconds(10), [&] { return stop_; });
      continue;
    }
    if (free > 0 && due) {
      wake_ = false;
      lock.unlock();
      int taken = 0;
      std::vector<ClaimedJob> jobs = ClaimOrBackOff(free, &taken);
      more = taken == free;
      next_poll = NextPoll();
      Dispatch(std::move(jobs));
      lock.lock();
      continue;
    }
    if (free > 0) {
      // The queue was drained: wait for an enqueue, the poll, or stop.
      cv_.wait_until(lock, std::min(next_poll, next_probe), [&] { return stop_ || wake_; });
    } else {
      // Every slot busy: wait for one to free (or stop). A wake-up is remembered meanwhile.
      cv_.wait(lock, [&] { return stop_ || static_cast<int>(in_flight_.size()) < workers; });
    }
  }
}

std::vector<ClaimedJob> QueueRunner::ClaimOrBackOff(int limit, int* taken) {
  auto backoff = std::chrono::milliseconds(100);
  while (true) {
    try {
      int parked = 0;
      std::vector<ClaimedJob> jobs =
          store_.Get().Claim(options_.tier.name, limit, options_.node, &parked);
      ++claims_;
      claimed_ += jobs.size();
      parked_at_claim_ += parked;
      *taken = static_cast<int>(jobs.size()) + parked;
      return jobs;
    } catch (const std::exception& e) {
      Log(LogLevel::kWarn, "claim_failed",
          {{"tier", options_.tier.name},
           {"error", FirstLine(e.what())},
           {"retry_in_ms", backoff.count()}});
      store_.Reset();
    }
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, backoff, [&] { return stop_; })) return {};
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  }
}

std::vector<ClaimedJob> QueueRunner::ClaimProbes(int limit) {
  const TierOptions& tier = options_.tier;
  try {
    std::vector<ClaimedJob> probes =
        store_.Get().ClaimProbes(tier.name, limit, options_.node,
                                 tier.request_timeout_ms + BreakerKeeper::kProbeMargin.count());
    probes_ += probes.size();
    for (const auto& probe : probes) {
      Log(LogLevel::kInfo, "breaker_probe",
          {{"tier", tier.name}, {"channel", probe.channel_id}, {"job", probe.id}});
    }
    return probes;
  } catch (const std::exception& e) {
    // The next claim backs off and reconnects; the probe waits for the next round.
    Log(LogLevel::kWarn, "probe_claim_failed",
        {{"tier", tier.name}, {"error", FirstLine(e.what())}});
    store_.Reset();
    return {};
  }
}

void QueueRunner::Dispatch(std::vector<ClaimedJob> jobs) {
  // A channel this node has just tripped (or learned open) may still read closed in the
  // database for the round trip it takes the keeper to open it: its jobs go back unsent,
  // with their attempt, and the opening (or the next claim) parks them.
  std::vector<OwnedJob> held;
  std::erase_if(jobs, [&](const ClaimedJob& job) {
    if (job.probe || !board_.KnownOpen(job.channel_id)) return false;
    held.push_back({job.id, job.attempt});
    return true;
  });
  if (!held.empty()) {
    try {
      store_.Get().HandBack(held, options_.node);
    } catch (const std::exception& e) {
      // They stay executing under our name until lease rescue; nothing is lost.
      Log(LogLevel::kWarn, "hand_back_failed",
          {{"tier", options_.tier.name}, {"jobs", held.size()}, {"error", FirstLine(e.what())}});
      store_.Reset();
    }
  }
  if (jobs.empty()) return;
  {
    // Register before sending, so that the callback always finds its job.
    std::lock_guard lock(mu_);
    for (const auto& job : jobs) {
      in_flight_.emplace(job.id, InFlight{job.attempt, job.channel_id, job.probe});
    }
  }
  const auto sent_at = std::chrono::steady_clock::now();
  for (const auto& job : jobs) {
    if (!job.probe) board_.Started(job.channel_id, job.id, sent_at);
  }
  const int64_t timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  for (auto& job : jobs) {
    std::string webhook_id = std::to_string(job.id);
    std::optional<std::string> signature =
        SignWebhook(job.secret, webhook_id, timestamp, job.payload);
    if (!signature) {
      // The schema's secret format makes this unreachable short of a hand-edited secret.
      HttpOutcome unsigned_outcome;
      unsigned_outcome.error = HttpError::kOther;
      unsigned_outcome.error_text = "the channel's secret is not whsec_ + base64";
      OnOutcome(job.id, job.attempt, unsigned_outcome);
      continue;
    }
    HttpRequest request;
    request.url = std::move(job.url);
    request.body = std::move(job.payload);
    request.headers = {{"content-type", "application/json"},
                       {"user-agent", kUserAgent},
                       {"webhook-id", webhook_id},
                       {"webhook-timestamp", std::to_string(timestamp)},
                       {"webhook-signature", *signature}};
    request.connect_timeout = std::chrono::milliseconds(options_.tier.connect_timeout_ms);
    request.request_timeout = std::chrono::milliseconds(options_.tier.request_timeout_ms);
    int64_t id = job.id;
    int attempt = job.attempt;
    sender_.Send(std::move(request), [this, id, attempt](const HttpOutcome& outcome) {
      OnOutcome(id, attempt, outcome);
    });
  }
}

void QueueRunner::OnOutcome(int64_t job_id, int attempt, const HttpOutcome& outcome) {
  InFlight job;
  {
    std::lock_guard lock(mu_);
    auto it = in_flight_.find(job_id);
    // Handed back already (shutdown): the database has it as available again.
    if (it == in_flight_.end() || it->second.attempt != attempt) return;
    job = it->second;
  }
  if (outcome.error != HttpError::kCancelled) {
    const BreakerSignal signal = ClassifyForBreaker(outcome);
    const std::string detail = outcome.delivered() ? "" : FailureReason(outcome);
    if (job.probe) {
      // The endpoint answered (even a 4xx): it is up again, and the probe closes the breaker.
      keeper_.ProbeAnswered(options_.tier.name, job.channel, job_id,
                            signal != BreakerSignal::kFailure, detail);
    } else if (auto trip = board_.Finished(job.channel, job_id, signal, detail,
                                           std::chrono::steady_clock::now())) {
      keeper_.RequestOpen(options_.tier.name, std::move(*trip));
    }
    AttemptResult result;
    result.id = job_id;
    result.attempt = attempt;
    result.delivered = outcome.delivered();
    result.status = outcome.status;
    result.duration_ms = std::chrono::duration<double, std::milli>(outcome.duration).count();
    if (!result.delivered) {
      result.error = detail;
      result.retry_delay_ms = retry_.NextDelay(attempt, UnitRandom()).count();
    }
    // Before the slot frees: the result is in the writer's hands before a new claim can
    // follow, so the writer's backlog stays bounded by the slots.
    writer_.Add(std::move(result));
  }
  {
    std::lock_guard lock(mu_);
    // A cancelled request stays registered: HandBackInFlight() gives it back.
    if (outcome.error != HttpError::kCancelled) in_flight_.erase(job_id);
  }
  cv_.notify_one();
}

int QueueRunner::HandBackInFlight() {
  std::vector<OwnedJob> jobs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, job] : in_flight_) jobs.push_back({id, job.attempt});
    in_flight_.clear();
  }
  if (jobs.empty()) return 0;
  try {
    return store_.Get().HandBack(jobs, options_.node);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "hand_back_failed",
        {{"tier", options_.tier.name}, {"jobs", jobs.size()}, {"error", FirstLine(e.what())}});
    return 0;
  }
}

}  // namespace bulkhead
