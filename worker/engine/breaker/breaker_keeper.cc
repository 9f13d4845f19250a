#include "breaker_keeper.h"

#include <algorithm>
#include <charconv>

#include "cap_ledger.h"
#include "logger.h"
#include "store_failure.h"

namespace bulkhead {
namespace {

PoisonQuarantine::Options QuarantineOptions(Metrics* metrics) {
  PoisonQuarantine::Options options;
  options.event = "breaker_request_quarantined";
  options.text = "text";
  options.writer = Metrics::QuarantineWriter::kBreaker;
  options.metrics = metrics;
  options.recorded_detail =
      "the database refused this request's text; the transition was made with the text made "
      "storable";
  options.dropped_detail =
      "the database refused this request even with its text made storable; dropped (an open "
      "not made is asked again by the next failures, an unanswered probe expires)";
  return options;
}

BreakerBoard::Settings BoardSettings(const TierOptions& tier) {
  int cap = CapLedger::For(tier.workers, tier.channel_share, tier.tenant_share).channel;
  return {tier.failure_threshold, std::chrono::milliseconds(tier.slow_call_ms),
          std::min(tier.failure_threshold, cap)};
}

}  // namespace

BreakerKeeper::BreakerKeeper(Options options)
    : BreakerKeeper(options,
                    std::make_unique<StoreBreakerLedger>(options.database, options.pooling)) {}

BreakerKeeper::BreakerKeeper(Options options, std::unique_ptr<BreakerLedger> ledger)
    : options_(std::move(options)),
      tiers_(options_.tiers),
      ledger_(std::move(ledger)),
      batch_(std::max<int64_t>(options_.backlog_batch, 1)),
      quarantine_(QuarantineOptions(options_.metrics)) {
  for (const auto& tier : options_.tiers) {
    boards_.emplace(tier.name, std::make_unique<BreakerBoard>(BoardSettings(tier)));
  }
  service_.Start([this] { Run(); });
}

BreakerKeeper::~BreakerKeeper() { service_.Stop(); }

BreakerBoard& BreakerKeeper::board(const std::string& tier) { return *boards_.at(tier); }

TierOptions BreakerKeeper::Tier(const std::string& name) {
  std::lock_guard lock(mu_);
  for (const auto& tier : tiers_) {
    if (tier.name == name) return tier;
  }
  throw std::out_of_range("not a served tier: " + name);
}

void BreakerKeeper::Reconfigure(const TierOptions& tier) {
  {
    std::lock_guard lock(mu_);
    for (auto& t : tiers_) {
      if (t.name == tier.name) t = tier;
    }
  }
  board(tier.name).SetSettings(BoardSettings(tier));
}

void BreakerKeeper::RequestOpen(const std::string& tier, BreakerBoard::Trip trip) {
  {
    std::lock_guard lock(mu_);
    if (!open_requested_.insert(trip.channel).second) return;
    queue_.push_back({Request::kOpen, tier, trip.channel, 0, false, std::move(trip.reason)});
  }
  service_.Wake();
}

bool BreakerKeeper::OpenPending(int64_t channel) const {
  std::lock_guard lock(mu_);
  return open_requested_.count(channel) > 0;
}

void BreakerKeeper::ProbeAnswered(const std::string& tier, int64_t channel, int64_t job,
                                  bool success, const std::string& detail) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back({Request::kProbeAnswer, tier, channel, job, success, detail});
  }
  service_.Wake();
}

void BreakerKeeper::Learn(const std::string& payload) {
  int64_t channel = 0;
  const char* end = payload.data() + payload.size();
  auto [p, ec] = std::from_chars(payload.data(), end, channel);
  if (ec != std::errc() || p == end || *p != ' ') return;
  std::string state(p + 1, end);
  // "paused" and "resumed" do not move the breaker; the claim statement checks pausing.
  if (state != "open" && state != "half_open" && state != "closed") return;
  for (auto& [name, board] : boards_) board->Learn(channel, state == "closed");
}

void BreakerKeeper::Run() {
  // Due timers and queued requests take turns: neither a long queue (a backlog moving batch by
  // batch) nor timers that keep failing can hold the other up.
  bool timers_next = true;
  std::unique_lock lock(mu_);
  while (!service_.stopping()) {
    auto now = std::chrono::steady_clock::now();
    auto next_timer = std::min({next_slow_check_, next_expire_, next_reconcile_});
    const bool timers_due = now >= next_timer;
    if (queue_.empty() && !timers_due) {
      service_.WaitUntil(lock, next_timer, [&] { return !queue_.empty(); });
      continue;
    }
    bool ok = true;
    if (timers_due && (timers_next || queue_.empty())) {
      timers_next = false;
      lock.unlock();
      ok = Maintain(now);
      lock.lock();
    } else {
      timers_next = true;
      Request request = std::move(queue_.front());
      queue_.pop_front();
      std::vector<Request> next;
      lock.unlock();
      ok = Execute(request, next);
      lock.lock();
      if (!ok) {
        queue_.push_back(std::move(request));  // after the others
      } else if (request.kind == Request::kOpen) {
        open_requested_.erase(request.channel);
      }
      for (auto& follow_up : next) queue_.push_back(std::move(follow_up));
    }
    if (ok) {
      service_.Succeeded();
      continue;
    }
    if (halved_) {
      // The batch did not fit in the statement timeout and is smaller now: the database is
      // there, so try again at once rather than after a reconnect's backoff.
      halved_ = false;
      continue;
    }
    ledger_->Reset();
    service_.SleepFor(lock, service_.Failed());  // 100 ms doubling to 5 s, jittered
  }
}

void BreakerKeeper::Count(const std::string& tier, std::string_view to, int64_t parked,
                          int64_t transitions) {
  if (!options_.metrics) return;
  const Metrics::Tier& m = options_.metrics->ForTier(tier);
  if (transitions > 0) {
    (to == "open" ? m.transitions_open : m.transitions_closed)
        ->Increment(static_cast<double>(transitions));
  }
  if (parked > 0) m.parked->Increment(static_cast<double>(parked));
}

bool BreakerKeeper::Execute(const Request& request, std::vector<Request>& next) {
  const TierOptions tier = Tier(request.tier);
  auto failed = [&](const std::exception& e) {
    const std::string sqlstate = SqlState(e);
    nlohmann::json fields = {{"tier", tier.name},
                             {"channel", request.channel},
                             {"sqlstate", sqlstate},
                             {"error", FirstLine(e.what())}};
    if (sqlstate == "57014" && batch_ > kMinBatch) {
      // Cancelled, by the statement timeout most likely: the batch did not fit in it.
      batch_ = std::max(batch_ / 2, kMinBatch);
      halved_ = true;
      fields["batch"] = batch_;
    }
    Log(LogLevel::kWarn, "breaker_transition_failed", fields);
    return false;
  };
  try {
    Transition(tier, request, next);
    return true;
  } catch (const std::exception& e) {
    if (!IsDataFailure(e)) return failed(e);
    // The request's data is refused and would be for ever: set it aside rather than block the
    // queue behind it. Its only free text is the reason; try once more with it made storable.
    try {
      quarantine_.Take(e, request.detail,
                       {{"tier", tier.name},
                        {"channel", request.channel},
                        {"request", request.kind == Request::kOpen          ? "open"
                                    : request.kind == Request::kProbeAnswer ? "probe_answer"
                                                                            : "backlog_batch"},
                        {"probe_job", request.job}},
                       [&](const std::string& storable) {
                         Request safe = request;
                         safe.detail = storable;
                         Transition(tier, safe, next);
                       });
    } catch (const std::exception& again) {
      return failed(again);  // the database went: stays queued
    }
    return true;
  }
}

void BreakerKeeper::FollowUp(const Request& request, Request::Kind kind, int64_t moved,
                             int64_t jobs, std::vector<Request>& next) {
  if (jobs >= batch_) {
    Request rest{kind, request.tier, request.channel, 0, false, "", moved};
    next.push_back(std::move(rest));
  } else if (request.kind == kind) {  // the last batch of a backlog moved in several
    Log(LogLevel::kInfo,
        kind == Request::kParkRest ? "breaker_backlog_parked" : "breaker_backlog_unparked",
        {{"tier", request.tier}, {"channel", request.channel}, {"jobs", moved}});
  }
}

void BreakerKeeper::Transition(const TierOptions& tier, const Request& request,
                               std::vector<Request>& next) {
  BreakerLedger& store = *ledger_;
  switch (request.kind) {
    case Request::kOpen: {
      BreakerTransition t =
          store.OpenBreaker(request.channel, tier.cooldown_ms, request.detail, batch_);
      if (!t.done) return;
      ++opened_;
      Count(tier.name, "open", t.jobs);
      Log(LogLevel::kWarn, "breaker_opened",
          {{"tier", tier.name},
           {"channel", request.channel},
           {"parked", t.jobs},
           {"more_to_park", t.jobs >= batch_},
           {"cooldown_ms", tier.cooldown_ms},
           {"reason", request.detail}});
      FollowUp(request, Request::kParkRest, t.jobs, t.jobs, next);
      return;
    }
    case Request::kProbeAnswer: {
      if (request.success) {
        BreakerTransition t = store.CloseBreaker(request.channel, request.job, batch_);
        if (!t.done) return;
        ++closed_;
        Count(tier.name, "closed", 0);
        board(tier.name).Learn(request.channel, true);
        Log(LogLevel::kInfo, "breaker_closed",
            {{"tier", tier.name},
             {"channel", request.channel},
             {"probe_job", request.job},
             {"unparked", t.jobs},
             {"more_to_unpark", t.jobs >= batch_}});
        FollowUp(request, Request::kUnparkRest, t.jobs, t.jobs, next);
        return;
      }
      std::string reason =
          "probe job " + std::to_string(request.job) + " failed: " + request.detail;
      BreakerTransition t = store.ReopenBreaker(request.channel, request.job, tier.cooldown_ms,
                                                tier.cooldown_max_ms, reason, batch_);
      if (!t.done) return;
      ++reopened_;
      Count(tier.name, "open", t.jobs);
      Log(LogLevel::kWarn, "breaker_reopened",
          {{"tier", tier.name},
           {"channel", request.channel},
           {"probe_job", request.job},
           {"parked", t.jobs},
           {"more_to_park", t.jobs >= batch_},
           {"reason", reason}});
      FollowUp(request, Request::kParkRest, t.jobs, t.jobs, next);
      return;
    }
    case Request::kParkRest: {
      const int64_t jobs = store.ParkBacklog(request.channel, batch_);
      Count(tier.name, "open", jobs, 0);
      FollowUp(request, Request::kParkRest, request.moved + jobs, jobs, next);
      return;
    }
    case Request::kUnparkRest: {
      const int64_t jobs = store.UnparkBacklog(request.channel, batch_);
      FollowUp(request, Request::kUnparkRest, request.moved + jobs, jobs, next);
      return;
    }
  }
}

bool BreakerKeeper::Maintain(std::chrono::steady_clock::time_point now) {
  if (now >= next_slow_check_) {
    next_slow_check_ = now + options_.slow_check_every;
    for (auto& [tier, board] : boards_) {
      for (auto& trip : board->CheckSlow(now)) RequestOpen(tier, std::move(trip));
    }
  }
  try {
    if (now >= next_expire_) {
      std::vector<TierOptions> tiers;
      {
        std::lock_guard lock(mu_);
        tiers = tiers_;
      }
      for (const auto& tier : tiers) {
        int expired = ledger_->ExpireProbes(tier.name, tier.cooldown_ms, tier.cooldown_max_ms);
        if (expired > 0) {
          Count(tier.name, "open", 0, expired);
          Log(LogLevel::kWarn, "breaker_probes_expired",
              {{"tier", tier.name},
               {"breakers", expired},
               {"detail", "probes got no answer in time; their breakers are open again"}});
        }
      }
      next_expire_ = now + options_.expire_every;
    }
    if (now >= next_reconcile_) {
      std::vector<int64_t> not_closed = ledger_->NotClosedBreakers();
      for (auto& [tier, board] : boards_) board->Resync(not_closed);
      next_reconcile_ = now + options_.reconcile_every;
    }
    return true;
  } catch (const std::exception& e) {
    Log(LogLevel::kWarn, "breaker_maintenance_failed", {{"error", FirstLine(e.what())}});
    return false;
  }
}

}  // namespace bulkhead
