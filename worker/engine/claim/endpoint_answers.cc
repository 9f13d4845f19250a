#include "endpoint_answers.h"

#include <algorithm>

namespace bulkhead {

// A channel's waiting jobs are snoozed (Retry-After) at most this often: a throttled channel
// answering 429 to every request in flight costs one statement a second, not one per answer.
constexpr auto kSnoozeEvery = std::chrono::seconds(1);
// A 410's disable that fails this many times (the database is down) is given up: the
// attempt is written as an ordinary failure instead, so the job is not left executing.
constexpr int kGoneTries = 5;
// A failed disable is tried again after this pause (the claim's own backoff runs meanwhile).
constexpr auto kGoneRetryAfter = std::chrono::milliseconds(500);

EndpointAnswers::EndpointAnswers(Options options, RunnerStore& store, CompletionWriter& writer)
    : options_(std::move(options)),
      store_(store),
      writer_(writer),
      snoozed_log_(LogLevel::kInfo, "deliveries_snoozed",
                   {{"tier", options_.tier},
                    {"detail",
                     "jobs pushed later by a 429 or 503 Retry-After: answering jobs and their "
                     "channels' waiting jobs"}}) {}

bool EndpointAnswers::Gone(bulkhead::GoneAnswer answer, AttemptResult fallback) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  gone_.push_back({std::move(answer), std::move(fallback), 0});
  queued_ = true;
  due_ = Clock::now();
  return true;
}

void EndpointAnswers::Snooze(int64_t channel, Clock::time_point until) {
  std::lock_guard lock(mu_);
  auto [it, added] = snoozes_.emplace(channel, until);
  if (!added) it->second = std::max(it->second, until);
  queued_ = true;
  due_ = std::min(due_, Clock::now());
}

void EndpointAnswers::CountSnoozed() {
  ++snoozed_;
  snoozed_log_.Add();
  if (options_.metrics) options_.metrics->snoozed->Increment();
}

void EndpointAnswers::HeldJobs(std::vector<int64_t>* jobs) const {
  std::lock_guard lock(mu_);
  for (const auto& g : gone_) jobs->push_back(g.answer.job);
  jobs->insert(jobs->end(), applying_.begin(), applying_.end());
}

EndpointAnswers::Clock::time_point EndpointAnswers::due() const {
  std::lock_guard lock(mu_);
  return due_;
}

void EndpointAnswers::Run(Clock::time_point now, bool last) {
  std::vector<PendingGone> gone;
  std::vector<std::pair<int64_t, int64_t>> snoozes;  // channel, ms from now
  auto next = Clock::time_point::max();
  {
    std::lock_guard lock(mu_);
    gone.swap(gone_);
    for (const auto& g : gone) applying_.push_back(g.answer.job);
    queued_ = false;
    if (last) closed_ = true;
    for (auto it = snoozes_.begin(); it != snoozes_.end();) {
      auto at = snoozed_at_.find(it->first);
      if (at != snoozed_at_.end() && now < at->second + kSnoozeEvery) {
        next = std::min(next, at->second + kSnoozeEvery);
        ++it;
        continue;
      }
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(it->second - now).count();
      if (left > 0) snoozes.emplace_back(it->first, left);
      it = snoozes_.erase(it);
    }
  }
  const std::string& tier = options_.tier;
  std::vector<PendingGone> retry;
  for (auto& g : gone) {
    try {
      GoneOutcome done = store_.DisableGone(g.answer, options_.node);
      if (done.disabled) {
        ++channels_gone_;
        if (options_.metrics) options_.metrics->channels_gone->Increment();
        // One line per channel disabled: rare, and each one needs an operator.
        Log(LogLevel::kWarn, "channel_disabled_gone",
            {{"tier", tier},
             {"channel", g.answer.channel},
             {"job", g.answer.job},
             {"jobs_parked", done.jobs},
             {"detail",
              "the endpoint answered 410 Gone: enqueue refuses the channel and its backlog "
              "waits parked; bulkhead channel enable + resume sends it, bulkhead cancel ends "
              "it"}});
      }
    } catch (const std::exception& e) {
      store_.Reset();
      if (++g.tries < kGoneTries && !last) {
        retry.push_back(std::move(g));
        continue;
      }
      Log(LogLevel::kError, "channel_disable_failed",
          {{"tier", tier},
           {"channel", g.answer.channel},
           {"job", g.answer.job},
           {"error", FirstLine(e.what())},
           {"detail", "the 410 is recorded as an ordinary failed attempt instead"}});
      writer_.Add(std::move(g.fallback));
    }
  }
  for (const auto& [channel, delay_ms] : snoozes) {
    try {
      int n = store_.SnoozeChannel(channel, delay_ms);
      snoozed_ += n;
      if (n > 0) {
        snoozed_log_.Add(n);
        if (options_.metrics) options_.metrics->snoozed->Increment(n);
      }
    } catch (const std::exception& e) {
      // Not snoozing costs the channel's other jobs an early attempt each, no more: each
      // answer snoozes its own job, and the next Retry-After asks again.
      Log(LogLevel::kWarn, "snooze_failed",
          {{"tier", tier}, {"channel", channel}, {"error", FirstLine(e.what())}});
      store_.Reset();
    }
    snoozed_at_[channel] = now;
  }
  std::erase_if(snoozed_at_, [&](const auto& entry) { return now >= entry.second + kSnoozeEvery; });
  {
    std::lock_guard lock(mu_);
    for (auto& g : retry) gone_.push_back(std::move(g));
    applying_.clear();  // each one written, handed to the writer, or queued again
    // Failed disables are tried again after a pause (the claim's own backoff runs meanwhile).
    if (!retry.empty()) next = std::min(next, now + kGoneRetryAfter);
    if (queued_) next = now;  // more arrived while the statements ran
    due_ = next;
  }
}

}  // namespace bulkhead
