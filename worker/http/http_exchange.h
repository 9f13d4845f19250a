// The exchange an HttpSender performs: the request a caller hands it (HttpRequest) and what came
// of it (HttpOutcome, with HttpError for a request that got no complete answer). Plain values,
// safe to copy between threads; the sender and its callers share them (http_sender.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bulkhead {

struct HttpRequest {
  std::string url;  // http:// or https:// only; anything else fails with kProtocol, unsent
  std::string body;
  // Sent as given, in order. Names and values must not contain CR, LF or NUL (such a request
  // fails with kProtocol, unsent). curl's default "Accept" and form "Content-Type" are not sent
  // unless given here; "Expect: 100-continue" never is.
  std::vector<std::pair<std::string, std::string>> headers;
  std::chrono::milliseconds connect_timeout{3000};   // TCP + TLS handshake; must be > 0
  std::chrono::milliseconds request_timeout{10000};  // whole request, connect included; > 0
};

enum class HttpError {
  kNone,       // a response arrived, whatever its status (its body maybe cut at the cap)
  kTimeout,    // connect_timeout or request_timeout ran out
  kConnect,    // no connection (refused, unreachable): the request was surely not received
  kDns,        // the host name did not resolve
  kTls,        // TLS handshake or certificate verification failed
  kBlocked,    // the SSRF guard refused every address the host resolved to: surely not sent
  kProtocol,   // not HTTP: bad URL or scheme, invalid header, garbled or cut-off response,
               // connection reset or closed mid-exchange
  kCancelled,  // the sender shut down first
  kOther,      // anything else (out of memory, an invalid timeout, …)
};

// "none", "timeout", "connect", "dns", "tls", "blocked", "protocol", "cancelled", "other": stable
// words for logs and metric labels.
std::string_view HttpErrorName(HttpError error);

struct HttpOutcome {
  int status = 0;  // HTTP status if a status line arrived, else 0
  HttpError error = HttpError::kNone;
  // Why it was not delivered: curl's message for a transport error ("Failed to connect to
  // 127.0.0.1 port 9 after 0 ms: Couldn't connect to server"), the guard's verdict for
  // kBlocked ("blocked: 10.0.0.5 is in a private range (10.0.0.0/8); add it to
  // allowed_networks to allow it"), "HTTP 503" for a complete non-2xx response; empty when
  // delivered. curl's message is as curl wrote it: it may hold bytes that are not UTF-8, which
  // FailureReason (verdict.h), the one way it is stored, makes StorableText.
  std::string error_text;
  std::chrono::microseconds duration{0};  // from the start of the transfer to its end
  size_t body_bytes = 0;                  // response body bytes read, at most the cap
  bool body_truncated = false;  // the body went past max_response_bytes; the rest was not read
  // The final response's Retry-After header value, as sent (surrounding spaces trimmed); empty
  // when there was none. A value longer than kMaxRetryAfterBytes is kept as "" too: no valid
  // one is that long, and the cap keeps a header flood from costing memory.
  std::string retry_after;

  // A complete 2xx response. A body cut at the cap still counts: the status had arrived.
  bool delivered() const { return error == HttpError::kNone && status >= 200 && status < 300; }
};

// The longest Retry-After value kept: an IMF-fixdate is 29 bytes, delta-seconds a few.
inline constexpr size_t kMaxRetryAfterBytes = 64;

}  // namespace bulkhead
