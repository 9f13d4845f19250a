#include "route_behaviour.h"

#include <charconv>

namespace bulkhead::mock {
namespace {

std::optional<int64_t> ParseInt(std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    return std::nullopt;
  }
  return value;
}

std::optional<double> ParseFraction(std::string_view text) {
  // std::from_chars for double exists in GCC 12's libstdc++.
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value >= 0 && value <= 1)) {
    return std::nullopt;
  }
  return value;
}

std::string Bad(std::string_view name, std::string_view value, std::string_view expected) {
  return std::string(name) + "=" + std::string(value) + ": " + std::string(expected);
}

}  // namespace

std::optional<std::string> PercentDecoded(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    int hi = hex(text[i + 1]), lo = hex(text[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::pair<std::string_view, std::string_view> SplitTarget(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return {target, {}};
  return {target.substr(0, q), target.substr(q + 1)};
}

std::optional<std::string_view> QueryParameter(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    auto eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    if (key == name) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

ParsedRoute ParseRoute(std::string_view target) {
  auto [path, query] = SplitTarget(target);
  constexpr std::string_view kPrefix = "/hook/";
  if (!path.starts_with(kPrefix) || path.size() == kPrefix.size()) {
    return {std::nullopt, "not a mock route: " + std::string(path) + " (routes are /hook/<name>)"};
  }
  RouteBehaviour b;
  b.route = std::string(path);
  if (path == "/hook/healthy") {
    b.delay_min = std::chrono::milliseconds(20);
    b.delay_max = std::chrono::milliseconds(30);
  } else if (path == "/hook/hang-dead") {
    b.hang = true;
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    auto eq = pair.find('=');
    std::string_view name = pair.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    if (name == "status" || name == "fail_status") {
      auto v = ParseInt(value, 100, 599);
      if (!v) return {std::nullopt, Bad(name, value, "must be a status from 100 to 599")};
      (name == "status" ? b.status : b.fail_status) = static_cast<int>(*v);
    } else if (name == "delay_ms") {
      auto dash = value.find('-');
      auto lo = ParseInt(value.substr(0, dash), 0, 3'600'000);
      auto hi =
          dash == std::string_view::npos ? lo : ParseInt(value.substr(dash + 1), 0, 3'600'000);
      if (!lo || !hi || *hi < *lo) {
        return {std::nullopt,
                Bad(name, value, "must be N or A-B milliseconds, 0..3600000, A <= B")};
      }
      b.delay_min = std::chrono::milliseconds(*lo);
      b.delay_max = std::chrono::milliseconds(*hi);
    } else if (name == "fail") {
      auto v = ParseFraction(value);
      if (!v) return {std::nullopt, Bad(name, value, "must be a fraction from 0 to 1")};
      b.fail_fraction = *v;
    } else if (name == "hang") {
      if (value != "0" && value != "1") return {std::nullopt, Bad(name, value, "must be 0 or 1")};
      b.hang = value == "1";
    } else if (name == "body_bytes") {
      auto v = ParseInt(value, 0, kMaxBodyBytes);
      if (!v) return {std::nullopt, Bad(name, value, "must be 0 to 67108864 bytes")};
      b.body_bytes = *v;
    } else if (name == "drip_ms") {
      auto v = ParseInt(value, 1, 60'000);
      if (!v) return {std::nullopt, Bad(name, value, "must be 1 to 60000 milliseconds")};
      b.drip_every = std::chrono::milliseconds(*v);
    } else if (name == "drip_bytes") {
      auto v = ParseInt(value, 1, 1 << 20);
      if (!v) return {std::nullopt, Bad(name, value, "must be 1 to 1048576 bytes")};
      b.drip_bytes = *v;
    } else if (name == "retry_after" || name == "location") {
      // Header values: decoded, and refused with a control character (CR, LF, NUL), which
      // would let a URL write headers of its own into the answer.
      auto v = PercentDecoded(value);
      bool control = false;
      for (char c : v.value_or("")) control |= static_cast<unsigned char>(c) < 0x20 && c != '\t';
      if (!v || v->empty() || v->size() > 1024 || control) {
        return {std::nullopt, Bad(name, value,
                                  "must be 1 to 1024 percent-encoded characters, no control "
                                  "characters")};
      }
      (name == "retry_after" ? b.retry_after : b.location) = std::move(*v);
    } else if (name == "garbage" || name == "endless") {
      if (value != "0" && value != "1") return {std::nullopt, Bad(name, value, "must be 0 or 1")};
      (name == "garbage" ? b.garbage : b.endless) = value == "1";
    } else {
      return {std::nullopt, "unknown parameter '" + std::string(name) +
                                "' (status, delay_ms, fail, fail_status, hang, body_bytes, "
                                "drip_ms, drip_bytes, retry_after, location, garbage, endless)"};
    }
  }
  return {std::move(b), {}};
}

}  // namespace bulkhead::mock
