#include "storable_text.h"

namespace bulkhead {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The length of the well-formed UTF-8 sequence at the start of `s` (Unicode Table 3-7), or 0.
size_t SequenceLength(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto in = [&](size_t i, unsigned lo, unsigned hi) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  unsigned b = byte(0);
  if (b >= 0x01 && b <= 0x7F) return 1;
  if (b >= 0xC2 && b <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    unsigned lo = b == 0xE0 ? 0xA0 : 0x80;  // no overlong form
    unsigned hi = b == 0xED ? 0x9F : 0xBF;  // no surrogate
    return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    unsigned lo = b == 0xF0 ? 0x90 : 0x80;  // no overlong form
    unsigned hi = b == 0xF4 ? 0x8F : 0xBF;  // nothing past U+10FFFF
    return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;  // NUL, a continuation byte, C0, C1, F5..FF
}

}  // namespace

std::string StorableText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    size_t n = SequenceLength(text);
    if (n == 0) {
      out += kReplacement;
      n = 1;
    } else {
      out.append(text.substr(0, n));
    }
    text.remove_prefix(n);
  }
  return out;
}

}  // namespace bulkhead
