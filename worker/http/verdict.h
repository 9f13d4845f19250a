// Verdict: what one delivery attempt's answer means — decided once, in one place, from the
// HttpSender's outcome alone. The queue runner calls Decide() once per answer and hands each
// part to the part that acts on it: the result to the CompletionWriter, the breaker signal to
// the BreakerBoard (or, for a probe, the BreakerKeeper) and to the CapLedger, the outcome word
// to Metrics, the snooze and the 410 to EndpointAnswers. None of them re-reads the outcome.
//
// The rules, per kind of answer (tests/verdict_test.cc has one row each):
//
//   answer                     result             breaker   outcome label   side effect
//   2xx                        delivered          success   delivered       —
//   3xx, 4xx but 410 and 429   retry (or discard) neither   failed          —
//   410 Gone                   retry (fallback)   neither   failed          disable the channel
//   429                        retry (or discard) failure   failed          snooze if Retry-After
//   503                        retry (or discard) failure   failed          snooze if Retry-After
//   other 5xx                  retry (or discard) failure   failed          —
//   timeout                    retry (or discard) failure   timeout         —
//   connect (refused)          retry (or discard) failure   refused         —
//   dns, tls, protocol         retry (or discard) failure   failed          —
//   blocked (SSRF guard)       permanent          failure   discarded       —
//   other (our side)           retry (or discard) neither   failed          —
//
// "Or discard": on the job's last attempt a failure is discarded (outcome `discarded`), except
// a 410, whose job is parked with its channel rather than discarded, so it counts `failed`.
// A probe's answer closes its breaker unless it is a breaker failure: the endpoint answered
// (even a 4xx), so it is up again.
//
// Retry-After (429 or 503 only): the asked delay, capped at the tier's retry_after_max_ms,
// lengthens this job's wait when longer than its retry delay (not on the last attempt: the job
// is discarded anyway), and asks for the channel's waiting jobs to be pushed as late — even on
// the last attempt, and even when the retry delay was longer, since the channel's other jobs
// were not going to wait that long.
//
// A pure function: no I/O, no clock (the wall-clock time for an HTTP-date Retry-After and the
// random point of the retry jitter are passed in), no shared state; safe from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "http_sender.h"
#include "retry_policy.h"

namespace bulkhead {

// How an attempt's answer counts for its channel's breaker (BreakerBoard):
// - a failure: no answer in time (timeout), no connection (refused, unreachable, DNS, TLS),
//   a broken exchange (reset, garbled or cut-off response), an HTTP 5xx or 429, an address
//   the SSRF guard refused (kBlocked). Each says the endpoint is down, asks us to back off, or
//   (blocked) can never be reached: sending it more is what the breaker prevents.
// - a success (2xx) resets the count: the endpoint works, and earlier failures were a blip.
// - neither: 3xx and 4xx other than 429. The endpoint is up and answering; it refuses this
//   payload, which the job's own retries and discard handle. Counting them would let one bad
//   payload close a healthy endpoint; resetting on them would let a flapping endpoint that
//   mixes 404s with timeouts keep its breaker closed. Our own failures (kOther) and a
//   cancelled request say nothing about the endpoint: neither.
enum class BreakerSignal { kSuccess, kFailure, kNeither };

// The breaker signal of an outcome (see above). kCancelled is kNeither.
BreakerSignal ClassifyForBreaker(const HttpOutcome& outcome);

// What one delivery attempt came to, as the `outcome` label of bulkhead_deliveries_total
// says it (Metrics::Tier::Delivered; DeliveryOutcomeName gives the word).
enum class DeliveryOutcome { kDelivered, kFailed, kTimeout, kRefused, kDiscarded };

// Classifies an attempt: a 2xx is delivered; otherwise a failure on the job's last attempt, or
// a permanent one (the SSRF guard refused the address: kBlocked), is discarded, a timeout is
// timeout, no connection (refused, unreachable) is refused, and anything else (a non-2xx, DNS, TLS,
// protocol) is failed. One word per attempt, so the outcomes add up to the attempts.
DeliveryOutcome ClassifyDelivery(const HttpOutcome& outcome, bool last_attempt);

// The reason recorded in jobs.last_error and the attempt log: "HTTP 503", the guard's
// "blocked: …" text, or "<error word>: <curl's message>". Empty when delivered. Always
// StorableText (valid UTF-8, no NUL): one text PostgreSQL refuses would fail its whole completion
// batch.
std::string FailureReason(const HttpOutcome& outcome);

// The attempt an answer belongs to.
struct AttemptFacts {
  int attempt = 1;     // 1-based
  bool last = false;   // attempt >= max_attempts: a failure discards the job
  bool probe = false;  // its channel's breaker probe
};

// The tier's rules an answer is judged by, and the two inputs Decide may not fetch itself.
struct JudgeRules {
  const RetryPolicy& retry;
  std::chrono::milliseconds retry_after_max;  // TierOptions::retry_after_max_ms
  double unit_random = 0.5;                   // [0, 1): the retry delay's point in its jitter band
  std::chrono::system_clock::time_point now;  // for a Retry-After given as an HTTP-date
};

struct Verdict {
  // The result to record (AttemptResult without the job's id and attempt).
  bool delivered = false;
  bool permanent = false;  // discarded now, whatever attempts remain (the SSRF guard refused)
  int status = 0;
  std::string error;  // FailureReason; empty when delivered
  double duration_ms = 0;
  int64_t retry_delay_ms = 0;  // when not delivered: the wait before the next attempt

  BreakerSignal breaker = BreakerSignal::kNeither;
  // A probe's answer: close its breaker (true) or re-open it. False for other attempts.
  bool probe_closes = false;
  DeliveryOutcome outcome = DeliveryOutcome::kFailed;  // the metric label

  // A Retry-After lengthened this job's own wait (retry_delay_ms is the asked delay).
  bool snoozed = false;
  // > 0: push the channel's waiting jobs to no earlier than now + this (Retry-After).
  std::chrono::milliseconds snooze_channel{0};
  // 410 Gone: disable the channel and park this job instead of recording the result; the
  // result above is the fallback, written as an ordinary failure if the disable cannot run.
  bool gone = false;
};

// The verdict on `outcome`, the answer to `attempt`. Not meant for kCancelled (the sender shut
// down: no answer, the runner hands the job back); given one, it returns a failure that counts
// as neither.
Verdict Decide(const HttpOutcome& outcome, const AttemptFacts& attempt, const JudgeRules& rules);

}  // namespace bulkhead
