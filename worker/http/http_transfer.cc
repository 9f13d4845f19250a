#include "http_transfer.h"

#include <sys/socket.h>

#include <new>
#include <string_view>

namespace bulkhead {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool HasLineBreakOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

HttpError MapCurlError(CURLcode code) {
  switch (code) {
    case CURLE_OK:
      return HttpError::kNone;
    case CURLE_OPERATION_TIMEDOUT:
      return HttpError::kTimeout;
    case CURLE_COULDNT_CONNECT:
      return HttpError::kConnect;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return HttpError::kDns;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return HttpError::kTls;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP3:
    case CURLE_PARTIAL_FILE:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
      return HttpError::kProtocol;
    default:
      return HttpError::kOther;
  }
}

}  // namespace

std::chrono::microseconds HttpSender::Transfer::Elapsed() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - started);
}

// CURLOPT_WRITEFUNCTION: counts the body and stops the transfer past the cap. Stopping makes
// curl end with CURLE_WRITE_ERROR, which Finish reads back as a truncated success.
size_t HttpSender::Transfer::OnBody(char*, size_t size, size_t count, void* user) {
  auto* self = static_cast<Transfer*>(user);
  size_t bytes = size * count;
  size_t room = self->body_limit - self->body_bytes;
  if (bytes > room) {
    self->body_bytes += room;
    self->body_truncated = true;
    return CURL_WRITEFUNC_ERROR;
  }
  self->body_bytes += bytes;
  return bytes;
}

// CURLOPT_HEADERFUNCTION: one header line at a time (status lines included, of interim and
// final responses alike). Keeps only the final response's Retry-After, bounded.
size_t HttpSender::Transfer::OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* self = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  std::string_view line(data, bytes);
  if (line.starts_with("HTTP/")) {
    self->retry_after.clear();  // a new response begins (after a 1xx): forget the last one's
    return bytes;
  }
  constexpr std::string_view kName = "retry-after:";
  if (line.size() < kName.size() || !EqualsIgnoreCase(line.substr(0, kName.size()), kName)) {
    return bytes;
  }
  std::string_view value = line.substr(kName.size());
  while (!value.empty() && (value.back() == '\n' || value.back() == '\r' || value.back() == ' ' ||
                            value.back() == '\t')) {
    value.remove_suffix(1);
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
    value.remove_prefix(1);
  }
  if (value.size() > kMaxRetryAfterBytes) value = {};
  self->retry_after.assign(value);  // never more than kMaxRetryAfterBytes: no growth
  return bytes;
}

// CURLOPT_OPENSOCKETFUNCTION: every socket curl opens for this transfer comes through here,
// after DNS, with the very address it will connect to; a refused one gets no socket, and
// curl tries the host's next address or fails with CURLE_COULDNT_CONNECT. Checking here, not
// the URL's host before sending, is what defeats DNS rebinding: there is no second lookup
// between the check and the connect. A kept-alive connection was checked when it opened.
curl_socket_t HttpSender::Transfer::OnOpenSocket(void* user, curlsocktype, curl_sockaddr* address) {
  auto* self = static_cast<Transfer*>(user);
  GuardVerdict verdict = self->guard->Check(&address->addr);
  if (!verdict.allowed) {
    if (self->blocked.empty()) self->blocked = verdict.Text();
    return CURL_SOCKET_BAD;
  }
  ++self->sockets_opened;
  return socket(address->family, address->socktype, address->protocol);
}

// {kNone, ""} when the request can go on the wire, else the error it fails with, and why.
std::pair<HttpError, std::string> HttpSender::Transfer::Check() const {
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || HasLineBreakOrNul(name) || HasLineBreakOrNul(value) ||
        name.find(':') != std::string::npos) {
      return {HttpError::kProtocol, "invalid header name or value: " + name};
    }
  }
  if (request.connect_timeout.count() <= 0 || request.request_timeout.count() <= 0) {
    return {HttpError::kOther, "connect_timeout and request_timeout must be positive"};
  }
  return {HttpError::kNone, ""};
}

// Builds the header list: the caller's, then blanks that remove curl's defaults.
HttpSender::Transfer::HeaderList HttpSender::Transfer::BuildHeaders() const {
  curl_slist* list = nullptr;
  auto append = [&list](const std::string& line) {
    curl_slist* grown = curl_slist_append(list, line.c_str());
    if (grown == nullptr) throw std::bad_alloc();
    list = grown;
  };
  bool has_accept = false, has_content_type = false;
  try {
    for (const auto& [name, value] : request.headers) {
      has_accept |= EqualsIgnoreCase(name, "accept");
      has_content_type |= EqualsIgnoreCase(name, "content-type");
      if (EqualsIgnoreCase(name, "expect")) continue;
      // "Name:" would tell curl to remove the header; "Name;" sends it with an empty value.
      append(value.empty() ? name + ";" : name + ": " + value);
    }
    append("Expect:");
    if (!has_accept) append("Accept:");
    if (!has_content_type) append("Content-Type:");
  } catch (...) {
    curl_slist_free_all(list);
    throw;
  }
  return HeaderList(list);
}

// Sets every option; returns the first failure.
CURLcode HttpSender::Transfer::Configure(const Options& options) {
  body_limit = options.max_response_bytes;
  guard = &options.guard;
  headers = BuildHeaders();
  CURL* e = easy.get();
  CURLcode rc = CURLE_OK;
  auto set = [&rc](CURLcode result) {
    if (rc == CURLE_OK) rc = result;
  };
  set(curl_easy_setopt(e, CURLOPT_PRIVATE, this));
  set(curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error));
  set(curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L));
  set(curl_easy_setopt(e, CURLOPT_URL, request.url.c_str()));
  set(curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https"));
  set(curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"));
  set(curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L));
  // The environment's http_proxy / HTTPS_PROXY / ALL_PROXY must not reroute webhooks.
  set(curl_easy_setopt(e, CURLOPT_PROXY, ""));
  set(curl_easy_setopt(e, CURLOPT_NOPROXY, "*"));
  set(curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1)));
  set(curl_easy_setopt(e, CURLOPT_POST, 1L));
  set(curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size())));
  set(curl_easy_setopt(e, CURLOPT_POSTFIELDS, request.body.data()));
  set(curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get()));
  set(curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                       static_cast<long>(request.connect_timeout.count())));
  set(curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(request.request_timeout.count())));
  set(curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::OnBody));
  set(curl_easy_setopt(e, CURLOPT_WRITEDATA, this));
  set(curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader));
  set(curl_easy_setopt(e, CURLOPT_HEADERDATA, this));
  set(curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &Transfer::OnOpenSocket));
  set(curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, this));
  // libcurl's defaults, set anyway: a reused handle must never inherit "off".
  const long verify = options.tls_verify ? 1L : 0L;
  set(curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, verify));
  set(curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, options.tls_verify ? 2L : 0L));
  return rc;
}

// The outcome of a transfer curl reported done with `code`.
HttpOutcome HttpSender::Transfer::Finish(CURLcode code) const {
  HttpOutcome outcome;
  long status = 0;
  curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &status);
  outcome.status = static_cast<int>(status);
  outcome.duration = Elapsed();
  outcome.body_bytes = body_bytes;
  outcome.body_truncated = body_truncated;
  outcome.retry_after = retry_after;
  if (code == CURLE_WRITE_ERROR && body_truncated) code = CURLE_OK;  // our own stop
  outcome.error = MapCurlError(code);
  if (outcome.error != HttpError::kNone && !blocked.empty() && sockets_opened == 0) {
    // The guard refused every address curl tried: no socket, nothing sent.
    outcome.error = HttpError::kBlocked;
    outcome.error_text = blocked;
  } else if (outcome.error != HttpError::kNone) {
    outcome.error_text = error[0] != '\0' ? error : curl_easy_strerror(code);
  } else if (!outcome.delivered()) {
    outcome.error_text = "HTTP " + std::to_string(outcome.status);
  }
  return outcome;
}

}  // namespace bulkhead
