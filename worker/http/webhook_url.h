// IsWebhookUrl: whether a channel URL is one Bulkhead will send to — `http://` or `https://`
// (any case) followed by at least one character, with no whitespace or control character
// anywhere. The schema's CHECK (channels_url_is_http: '^https?://[^[:space:]]+$') holds the same
// rule for every writer; the CLI asks here first so that a bad --url is a usage error (exit 2)
// naming the flag, not a constraint violation. Control characters are refused here although
// the CHECK lets them through: no endpoint has them, and a URL is echoed in logs and output.
//
// Pure; safe from any thread. Fuzzed by tests/fuzz/url_fuzz.cc, which also holds it to
// libcurl's parser: a URL accepted here is never one libcurl reads with another scheme.
#pragma once

#include <string_view>

namespace bulkhead {

bool IsWebhookUrl(std::string_view url);

}  // namespace bulkhead
