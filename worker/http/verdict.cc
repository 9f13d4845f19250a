#include "verdict.h"

#include <algorithm>

#include "retry_after.h"
#include "storable_text.h"

namespace bulkhead {

BreakerSignal ClassifyForBreaker(const HttpOutcome& outcome) {
  switch (outcome.error) {
    case HttpError::kNone:
      if (outcome.delivered()) return BreakerSignal::kSuccess;
      if (outcome.status == 429 || outcome.status >= 500) return BreakerSignal::kFailure;
      return BreakerSignal::kNeither;
    case HttpError::kTimeout:
    case HttpError::kConnect:
    case HttpError::kDns:
    case HttpError::kTls:
    case HttpError::kProtocol:
    // A channel whose URL points inside fails every time: it must park, and be probed once a
    // cooldown, rather than have each of its jobs dialled and refused.
    case HttpError::kBlocked:
      return BreakerSignal::kFailure;
    case HttpError::kCancelled:
    case HttpError::kOther:  // our side (out of memory, a bad option), not the endpoint's
      return BreakerSignal::kNeither;
  }
  return BreakerSignal::kNeither;
}

DeliveryOutcome ClassifyDelivery(const HttpOutcome& outcome, bool last_attempt) {
  if (outcome.delivered()) return DeliveryOutcome::kDelivered;
  if (last_attempt || outcome.error == HttpError::kBlocked) return DeliveryOutcome::kDiscarded;
  if (outcome.error == HttpError::kTimeout) return DeliveryOutcome::kTimeout;
  if (outcome.error == HttpError::kConnect) return DeliveryOutcome::kRefused;
  return DeliveryOutcome::kFailed;
}

std::string FailureReason(const HttpOutcome& outcome) {
  if (outcome.delivered()) return "";
  if (outcome.error == HttpError::kNone) return "HTTP " + std::to_string(outcome.status);
  // The one way an outcome's text reaches the database: curl's buffer can echo bytes that are
  // not UTF-8 (a peer's, a host name as typed), and one such text would poison a completion
  // batch, so it is made storable here.
  if (outcome.error == HttpError::kBlocked) return StorableText(outcome.error_text);
  return std::string(HttpErrorName(outcome.error)) + ": " + StorableText(outcome.error_text);
}

Verdict Decide(const HttpOutcome& outcome, const AttemptFacts& attempt, const JudgeRules& rules) {
  Verdict v;
  v.delivered = outcome.delivered();
  v.permanent = outcome.error == HttpError::kBlocked;
  v.status = outcome.status;
  v.duration_ms = std::chrono::duration<double, std::milli>(outcome.duration).count();
  v.error = FailureReason(outcome);
  v.breaker = ClassifyForBreaker(outcome);
  // The endpoint answered (even a 4xx): it is up again, and the probe closes the breaker.
  v.probe_closes = attempt.probe && v.breaker != BreakerSignal::kFailure;
  // 410 Gone: the channel is to be disabled and this job parked, not retried or discarded, so
  // the attempt is counted failed even if it was the last.
  v.gone = outcome.error == HttpError::kNone && outcome.status == 410;
  v.outcome = ClassifyDelivery(outcome, attempt.last && !v.gone);
  if (v.delivered) return v;

  v.retry_delay_ms = rules.retry.NextDelay(attempt.attempt, rules.unit_random).count();
  // A 429 or 503 that says how long to wait: lengthens this job's wait, and its channel's.
  int64_t asked_ms = 0;
  if (outcome.error == HttpError::kNone && (outcome.status == 429 || outcome.status == 503) &&
      !outcome.retry_after.empty()) {
    if (auto asked = ParseRetryAfter(outcome.retry_after, rules.now)) {
      asked_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*asked).count();
    }
  }
  asked_ms = std::min(asked_ms, static_cast<int64_t>(rules.retry_after_max.count()));
  if (asked_ms > 0) {
    if (asked_ms > v.retry_delay_ms && !attempt.last) {
      v.retry_delay_ms = asked_ms;
      v.snoozed = true;
    }
    v.snooze_channel = std::chrono::milliseconds(asked_ms);
  }
  return v;
}

}  // namespace bulkhead
