// HttpGet: one blocking HTTP request over loopback with libcurl, for tests that read a node's
// status server or a Prometheus server's API. Used from the calling thread only.
#pragma once

#include <chrono>
#include <string>

namespace bulkhead::testing {

struct HttpAnswer {
  int status = 0;  // 0: no answer (refused, timed out)
  std::string body;
};

// GET (or, with `method`, another verb) `url`, giving up after `timeout`.
HttpAnswer HttpGet(const std::string& url,
                   std::chrono::milliseconds timeout = std::chrono::seconds(5),
                   const std::string& method = "GET");

}  // namespace bulkhead::testing
