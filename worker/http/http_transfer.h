// HttpSender::Transfer: one request on the wire, as the I/O thread drives it. Owns its easy
// handle and everything the handle points into (the body, the header list, the error buffer),
// so nothing moves while curl holds the handle. It checks and configures the request, meets
// libcurl's body, header and open-socket callbacks (the body cap, Retry-After, the SSRF guard)
// and turns curl's end into an HttpOutcome.
//
// Private to the sender (http_sender.cc includes it; nothing else may): only the I/O thread
// touches a Transfer, from Start to its callback.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "http_exchange.h"
#include "http_sender.h"
#include "network_guard.h"

namespace bulkhead {

struct HttpSender::Transfer {
  struct EasyCleanup {
    void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
  };
  struct SlistCleanup {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
  };
  using Clock = std::chrono::steady_clock;
  using HeaderList = std::unique_ptr<curl_slist, SlistCleanup>;

  explicit Transfer(Outgoing p) : request(std::move(p.request)), done(std::move(p.done)) {}

  HttpRequest request;
  Callback done;
  std::unique_ptr<CURL, EasyCleanup> easy;
  HeaderList headers;
  char error[CURL_ERROR_SIZE] = {};
  Clock::time_point started = Clock::now();
  size_t body_limit = 0;
  size_t body_bytes = 0;
  bool body_truncated = false;
  std::string retry_after;  // the last response's, at most kMaxRetryAfterBytes
  const NetworkGuard* guard = nullptr;

  // The first address the guard refused, as its verdict's text; empty if none was. And the
  // sockets the guard let open: kBlocked only when every address was refused.
  std::string blocked;
  int sockets_opened = 0;

  std::chrono::microseconds Elapsed() const;

  // CURLOPT_WRITEFUNCTION: counts the body and stops the transfer past the cap. Stopping makes
  // curl end with CURLE_WRITE_ERROR, which Finish reads back as a truncated success.
  static size_t OnBody(char*, size_t size, size_t count, void* user);

  // CURLOPT_HEADERFUNCTION: one header line at a time (status lines included, of interim and
  // final responses alike). Keeps only the final response's Retry-After, bounded.
  static size_t OnHeader(char* data, size_t size, size_t count, void* user);

  // CURLOPT_OPENSOCKETFUNCTION: every socket curl opens for this transfer comes through here,
  // after DNS, with the very address it will connect to; a refused one gets no socket, and
  // curl tries the host's next address or fails with CURLE_COULDNT_CONNECT. Checking here, not
  // the URL's host before sending, is what defeats DNS rebinding: there is no second lookup
  // between the check and the connect. A kept-alive connection was checked when it opened.
  static curl_socket_t OnOpenSocket(void* user, curlsocktype, curl_sockaddr* address);

  // {kNone, ""} when the request can go on the wire, else the error it fails with, and why.
  std::pair<HttpError, std::string> Check() const;

  // Builds the header list: the caller's, then blanks that remove curl's defaults.
  HeaderList BuildHeaders() const;

  // Sets every option; returns the first failure.
  CURLcode Configure(const Options& options);

  // The outcome of a transfer curl reported done with `code`.
  HttpOutcome Finish(CURLcode code) const;
};

}  // namespace bulkhead
