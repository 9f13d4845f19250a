// Webhook signatures: the `webhook-signature` header of the Standard Webhooks specification
// (https://www.standardwebhooks.com/, "Signature scheme"), symmetric variant.
//
// A channel's secret is "whsec_" + base64 of the key bytes. The signature is
// "v1," + base64(HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<body>")), over the exact
// body bytes sent. The id and the timestamp must contain no '.': ours are a job id and Unix
// seconds, so they cannot.
//
// Pure functions with no shared state: safe to call from any thread. A malformed secret is an
// expected failure (the database checks only its shape) and comes back as std::nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bulkhead {

// The key bytes of a "whsec_" secret, or std::nullopt unless `secret` is "whsec_" followed by
// standard base64 (RFC 4648 §4: A–Z a–z 0–9 + /) of at least one byte. Padding may be given
// or left out; nothing else (no whitespace, no URL-safe alphabet) is accepted.
//
// The specification asks for keys of 24 to 64 bytes; bulkhead.new_secret() makes 32. Shorter
// keys are still signed with rather than refused, so that a delivery never fails on a key an
// application chose.
std::optional<std::string> DecodeWebhookSecret(std::string_view secret);

// The `webhook-signature` value for one attempt: "v1," + 44 base64 characters. std::nullopt
// when DecodeWebhookSecret(secret) is (or, not expected on a working OpenSSL, when HMAC fails).
std::optional<std::string> SignWebhook(std::string_view secret, std::string_view webhook_id,
                                       int64_t timestamp, std::string_view body);

// The `webhook-signature` value for a channel in a rotation: SignWebhook with `current`, then
// with each of `old_secrets` in their order (ours: newest retired first), joined by single
// spaces. std::nullopt when `current` cannot sign; an old secret that cannot sign is left out
// (the schema refuses both shapes, so neither happens short of a hand-edited row), so that the
// receivers that already switched still verify. No old secrets: exactly SignWebhook(current).
std::optional<std::string> SignWebhookAll(std::string_view current,
                                          std::span<const std::string> old_secrets,
                                          std::string_view webhook_id, int64_t timestamp,
                                          std::string_view body);

}  // namespace bulkhead
