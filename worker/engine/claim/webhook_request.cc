#include "webhook_request.h"

#include <string>

#include "version.h"
#include "webhook_signature.h"

namespace bulkhead {
namespace {

const std::string kUserAgent = std::string("Bulkhead/") + kVersion;

}  // namespace

std::optional<HttpRequest> BuildWebhookRequest(ClaimedJob& job,
                                               std::chrono::system_clock::time_point now,
                                               RequestTimeouts timeouts) {
  const int64_t timestamp =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::string webhook_id = std::to_string(job.id);
  // Current secret first, then the old ones still in their rotation window (ADR 0008).
  std::optional<std::string> signature =
      SignWebhookAll(job.secret, job.old_secrets, webhook_id, timestamp, job.payload);
  if (!signature) return std::nullopt;
  HttpRequest request;
  request.url = std::move(job.url);
  request.body = std::move(job.payload);
  request.headers = {{"content-type", "application/json"},
                     {"user-agent", kUserAgent},
                     {"webhook-id", std::move(webhook_id)},
                     {"webhook-timestamp", std::to_string(timestamp)},
                     {"webhook-signature", std::move(*signature)}};
  request.connect_timeout = timeouts.connect;
  request.request_timeout = timeouts.request;
  return request;
}

}  // namespace bulkhead
