// WebhookRequest: the HTTP request of one delivery attempt — a claimed job, signed per the
// Standard Webhooks specification (webhook_signature.h), with the tier's timeouts.
//
// Headers, in this order:
//   content-type       application/json
//   user-agent         Bulkhead/<version>
//   webhook-id         the job id: the same on every attempt, so receivers can deduplicate
//   webhook-timestamp  Unix seconds of `now`
//   webhook-signature  "v1,<sig>" with the channel's current secret, then one more per old
//                      secret still in its rotation window, newest retired first, separated by
//                      spaces (ADR 0008): receivers that have not switched yet still verify
//
// A pure function of its arguments (the clock is passed in): safe from any thread.
#pragma once

#include <chrono>
#include <optional>

#include "http_sender.h"
#include "store_types.h"  // ClaimedJob

namespace bulkhead {

// The error text of an attempt whose channel's secret cannot sign (HttpError::kOther).
inline constexpr const char* kUnsignableSecret = "the channel's secret is not whsec_ + base64";

struct RequestTimeouts {
  std::chrono::milliseconds connect{3000};   // TierOptions::connect_timeout_ms
  std::chrono::milliseconds request{10000};  // TierOptions::request_timeout_ms
};

// The request for `job`'s attempt, signed at `now`; takes the job's url and payload (they are
// moved out, not copied: a payload may be large). std::nullopt when the current secret is not
// "whsec_" + base64 — the schema's secret format makes that unreachable short of a hand-edited
// secret; the attempt then fails with kUnsignableSecret.
std::optional<HttpRequest> BuildWebhookRequest(ClaimedJob& job,
                                               std::chrono::system_clock::time_point now,
                                               RequestTimeouts timeouts);

}  // namespace bulkhead
