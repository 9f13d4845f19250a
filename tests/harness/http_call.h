// HttpCall: one blocking HTTP(S) request over loopback with libcurl, with the method, headers
// and body a test chooses, and the answer's headers — for the tests of the operator console.
// (HttpGet, http_get.h, is the short form for a plain GET.) Used from the calling thread only.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace bulkhead::testing {

struct HttpCall {
  std::string method = "GET";
  std::string url{};
  std::vector<std::string> headers{};  // "Name: value"
  std::string body{};
  std::string ca_file{};  // HTTPS: the certificate to trust (a test's self-signed one)
};

struct HttpReply {
  int status = 0;  // 0: no answer (refused, timed out, a TLS failure)
  std::multimap<std::string, std::string> headers;  // names in lower case
  std::string body;

  // The first value of header `lower_name`, "" when absent.
  std::string Header(const std::string& lower_name) const;
};

// Sends `call`, giving up after 10 s; redirects are not followed.
HttpReply Send(const HttpCall& call);

}  // namespace bulkhead::testing
