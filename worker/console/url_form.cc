#include "url_form.h"

#include <cctype>

namespace bulkhead::console {
namespace {

bool IsHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
int HexValue(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

}  // namespace

std::optional<std::string> UrlDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] != '%') {
      out.push_back(text[i]);
    } else if (i + 2 < text.size() && IsHex(text[i + 1]) && IsHex(text[i + 2])) {
      out.push_back(static_cast<char>(HexValue(text[i + 1]) * 16 + HexValue(text[i + 2])));
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<Form> ParseForm(std::string_view text) {
  Form form;
  while (!text.empty()) {
    const size_t end = text.find('&');
    const std::string_view pair = text.substr(0, end);
    if (!pair.empty()) {
      const size_t equals = pair.find('=');
      std::optional<std::string> name = UrlDecode(pair.substr(0, equals));
      std::optional<std::string> value =
          UrlDecode(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
      if (!name || !value) return std::nullopt;
      form[std::move(*name)] = std::move(*value);
    }
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return form;
}

}  // namespace bulkhead::console
