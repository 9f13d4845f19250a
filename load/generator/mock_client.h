// MockClient: the harness's HTTP client for the mock provider's control routes (/_mock/...),
// over libcurl. One easy handle, reused (keep-alive); use one client per thread.
// curl_global_init is main()'s job. Throws std::runtime_error when the mock cannot be reached
// or answers other than 200: without its records a scenario has nothing to measure.
#pragma once

#include <curl/curl.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace bulkhead::load {

struct MockRecord {
  std::string route;
  std::string webhook_id;
  int64_t sent_at_us = -1;
  int64_t received_at_us = 0;
  std::string signature;  // unchecked | missing | valid | invalid
  bool duplicate = false;
};

class MockClient {
 public:
  explicit MockClient(std::string base_url);  // "http://127.0.0.1:8090"
  ~MockClient();
  MockClient(const MockClient&) = delete;
  MockClient& operator=(const MockClient&) = delete;

  nlohmann::json Stats();
  void Reset();
  void SetSecrets(const std::vector<std::string>& secrets);
  // Every record of `route` (all routes when empty), paging through /_mock/records.
  std::vector<MockRecord> Records(const std::string& route = {});

  // A route's counter from Stats() ("requests", "in_flight", …); 0 when the route is unseen.
  static int64_t RouteCounter(const nlohmann::json& stats, const std::string& route,
                              const std::string& counter);

 private:
  std::string Request(const std::string& method, const std::string& path,
                      const std::string& body = {});

  const std::string base_url_;
  CURL* curl_;  // owned
};

}  // namespace bulkhead::load
