#include "webhook_url.h"

namespace bulkhead {
namespace {

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != prefix[i]) return false;
  }
  return true;
}

}  // namespace

bool IsWebhookUrl(std::string_view url) {
  size_t rest = StartsWithIgnoreCase(url, "https://")  ? 8
                : StartsWithIgnoreCase(url, "http://") ? 7
                                                       : 0;
  if (rest == 0 || url.size() == rest) return false;
  for (char c : url) {
    const auto byte = static_cast<unsigned char>(c);
    // Control characters (0x00-0x1f, 0x7f) and the ASCII whitespace among them, plus space.
    if (byte < 0x20 || byte == 0x7f || byte == ' ') return false;
  }
  return true;
}

}  // namespace bulkhead
