#include "mock_client.h"

#include <stdexcept>

namespace bulkhead::load {
namespace {

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

}  // namespace

MockClient::MockClient(std::string base_url)
    : base_url_(std::move(base_url)), curl_(curl_easy_init()) {
  if (curl_ == nullptr) throw std::runtime_error("curl_easy_init failed");
}

MockClient::~MockClient() { curl_easy_cleanup(curl_); }

std::string MockClient::Request(const std::string& method, const std::string& path,
                                const std::string& body) {
  std::string url = base_url_ + path;
  std::string response;
  curl_easy_reset(curl_);
  curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl_, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &response);
  if (method == "POST") {
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  CURLcode rc = curl_easy_perform(curl_);
  if (rc != CURLE_OK) {
    throw std::runtime_error("mock provider at " + url + ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) {
    throw std::runtime_error("mock provider at " + url + ": HTTP " + std::to_string(status) + ": " +
                             response);
  }
  return response;
}

nlohmann::json MockClient::Stats() { return nlohmann::json::parse(Request("GET", "/_mock/stats")); }

void MockClient::Reset() { Request("POST", "/_mock/reset"); }

void MockClient::SetSecrets(const std::vector<std::string>& secrets) {
  Request("POST", "/_mock/secrets", nlohmann::json(secrets).dump());
}

std::vector<MockRecord> MockClient::Records(const std::string& route) {
  std::vector<MockRecord> out;
  std::string escaped;
  for (char c : route) escaped += c == '/' ? std::string("%2F") : std::string(1, c);
  for (size_t since = 0;;) {
    auto page = nlohmann::json::parse(Request(
        "GET", "/_mock/records?limit=20000&since=" + std::to_string(since) + "&route=" + escaped));
    for (const auto& r : page["records"]) {
      MockRecord m;
      m.route = r["route"].get<std::string>();
      m.webhook_id = r["webhook_id"].get<std::string>();
      m.sent_at_us = r["sent_at_us"].get<int64_t>();
      m.received_at_us = r["received_at_us"].get<int64_t>();
      m.signature = r["signature"].get<std::string>();
      m.duplicate = r["duplicate"].get<bool>();
      out.push_back(std::move(m));
    }
    size_t next = page["next"].get<size_t>();
    if (next >= page["total"].get<size_t>() || next == since) break;
    since = next;
  }
  return out;
}

int64_t MockClient::RouteCounter(const nlohmann::json& stats, const std::string& route,
                                 const std::string& counter) {
  auto routes = stats.find("routes");
  if (routes == stats.end() || !routes->contains(route)) return 0;
  return (*routes)[route].value(counter, int64_t{0});
}

}  // namespace bulkhead::load
