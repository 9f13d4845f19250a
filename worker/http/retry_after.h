// ParseRetryAfter: reads an HTTP `Retry-After` header value (RFC 9110 §10.2.3) into a delay.
//
// A pure function of its two arguments: no clock, no locale, no allocation, no global state;
// safe from any thread. It is fed whatever an endpoint sends, so every input is well defined
// (the fuzz target relies on that): it never reads outside `value`, never overflows.
//
// Accepted forms, with optional spaces or tabs around the value:
// - delta-seconds: 1*DIGIT ("120"). Leading zeros are fine.
// - HTTP-date, in the three forms RFC 9110 §5.6.7 says a recipient must accept:
//     IMF-fixdate  "Sun, 06 Nov 1994 08:49:37 GMT"
//     RFC 850      "Sunday, 06-Nov-94 08:49:37 GMT" (a two-digit year is the one nearest
//                  before `now` + 50 years, as §5.6.7 asks)
//     asctime      "Sun Nov  6 08:49:37 1994"
//   Names are matched case-sensitively, as the grammar writes them; the weekday must be a
//   weekday name but is not checked against the date (senders get it wrong; it adds nothing).
//
// Results:
// - a delay (>= 0): a date in the past (or now) gives zero;
// - std::nullopt, "no delay asked": empty, garbage, a sign, a fraction, an invalid date
//   (31 Feb, hour 24), a number that overflows, and absurd values — more than kMaxRetryAfter
//   (one year) ahead. A year is far beyond any cap a tier may set (at most 7 days), so such a
//   value is a broken server (a Unix timestamp sent as seconds, a year 9999), not a request
//   to wait: it is ignored rather than honoured at the cap.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace bulkhead {

// Retry-After values further ahead than this are treated as garbage (see above).
inline constexpr std::chrono::seconds kMaxRetryAfter{365LL * 24 * 3600};

// The delay `value` asks for, as seen at `now`; std::nullopt for none (see the header comment).
std::optional<std::chrono::seconds> ParseRetryAfter(std::string_view value,
                                                    std::chrono::system_clock::time_point now);

}  // namespace bulkhead
