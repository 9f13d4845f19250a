#include "http_call.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace bulkhead::testing {
namespace {

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t AppendHeader(char* data, size_t size, size_t n, void* out) {
  std::string line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of("\r\n") + 1);
    static_cast<std::multimap<std::string, std::string>*>(out)->emplace(name, value);
  }
  return size * n;
}

}  // namespace

std::string HttpReply::Header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? "" : it->second;
}

HttpReply Send(const HttpCall& call) {
  HttpReply reply;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return reply;
  curl_slist* headers = nullptr;
  for (const std::string& h : call.headers) headers = curl_slist_append(headers, h.c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> owned(headers, curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, call.url.c_str());
  if (call.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);  // a HEAD's answer has no body to wait for
  } else {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, call.method.c_str());
  }
  if (!call.body.empty() || call.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  if (!call.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, call.ca_file.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, AppendHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.headers);
  if (curl_easy_perform(c) != CURLE_OK) return HttpReply{};
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  reply.status = static_cast<int>(status);
  return reply;
}

}  // namespace bulkhead::testing
