// url_fuzz: a channel URL, as the CLI checks it (IsWebhookUrl) and as libcurl reads it when the
// node sends (curl_url_set, the parser behind CURLOPT_URL), on arbitrary bytes.
//
// On every input, or the target aborts (a finding):
// - IsWebhookUrl returns, and what it accepts starts with http:// or https:// (any case) and
//   holds no space or control character (its contract, webhook_url.h);
// - a URL it accepts is never one libcurl reads with a scheme other than http or https (libcurl
//   may refuse it: the send then fails unsent, which is safe), so the scheme check and the
//   sender's CURLOPT_PROTOCOLS_STR agree.
#include <curl/curl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "webhook_url.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "url_fuzz: contract broken: %s\n", what);
  std::abort();
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

struct UrlHandle {
  CURLU* url = curl_url();
  ~UrlHandle() { curl_url_cleanup(url); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const bool accepted = bulkhead::IsWebhookUrl(text);
  if (accepted) {
    std::string_view head(text);
    if (!IEquals(head.substr(0, 7), "http://") && !IEquals(head.substr(0, 8), "https://")) {
      Fail("accepted a URL that is not http:// or https://");
    }
    for (char c : text) {
      auto byte = static_cast<unsigned char>(c);
      if (byte <= 0x20 || byte == 0x7f) Fail("accepted a space or a control character");
    }
  }
  if (!accepted) return 0;
  UrlHandle handle;
  if (handle.url == nullptr) return 0;  // out of memory: nothing to check
  if (curl_url_set(handle.url, CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) return 0;
  char* scheme = nullptr;
  if (curl_url_get(handle.url, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK) {
    std::string_view s(scheme);
    bool http = IEquals(s, "http") || IEquals(s, "https");
    curl_free(scheme);
    if (!http) Fail("libcurl reads an accepted URL with another scheme");
  }
  return 0;
}
