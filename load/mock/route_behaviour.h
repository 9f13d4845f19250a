// RouteBehaviour: what the mock provider does with one request to /hook/..., decided from the
// request target alone. Pure functions; safe from any thread.
//
// Three named routes are presets, and query parameters refine any /hook/<name> route (the
// named ones too), so that a scenario can make a channel misbehave by its URL alone:
//
//   /hook/healthy    200 after a uniformly random 20–30 ms (the seed's healthy provider)
//   /hook/hang-dead  reads the request and never answers (the seed's dead provider)
//   /hook/fast       200 at once
//   /hook/<other>    200 at once, unless its parameters say otherwise
//
//   status=N         the answer's status, 100..599 (default 200)
//   delay_ms=N|A-B   answer after N ms, or after a uniformly random A..B ms
//   fail=F           answer fail_status instead of status with probability F (0..1)
//   fail_status=N    the failure's status (default 503)
//   hang=1           never answer (hang=0 undoes the preset of /hook/hang-dead)
//   body_bytes=N     the answer carries N bytes of body ('x'), at most 64 MiB (default 2: "ok")
//   drip_ms=N        send the body drip_bytes at a time, N ms apart (a slow-drip body)
//   drip_bytes=N     bytes per drip (default 1)
//   retry_after=V    send "Retry-After: V" (percent-decoded: "120", or an HTTP date written
//                    "Sun,%2006%20Nov%201994%2008:49:37%20GMT"); with status=429 or 503
//   location=URL     send "Location: URL" (percent-decoded), for a 3xx status
//   garbage=1        answer bytes that are not HTTP at all, then close the connection
//   endless=1        a body that never ends: no Content-Length, drip_bytes every drip_ms (or
//                    64 KiB blocks back to back without drip_ms) until the client hangs up
//
// An unknown parameter or a bad value is an error: the mock answers it with 400 and says which,
// so a typo in a scenario's URL shows at once instead of silently testing the wrong thing.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bulkhead::mock {

// The largest body the mock will make up for body_bytes.
inline constexpr int64_t kMaxBodyBytes = 64 << 20;

struct RouteBehaviour {
  std::string route;  // the path without the query: "/hook/healthy", the key of the statistics
  int status = 200;
  std::chrono::milliseconds delay_min{0};
  std::chrono::milliseconds delay_max{0};  // == delay_min for a fixed delay
  double fail_fraction = 0;
  int fail_status = 503;
  bool hang = false;
  int64_t body_bytes = -1;                  // -1: the default body "ok"
  std::chrono::milliseconds drip_every{0};  // 0: the body in one write
  int64_t drip_bytes = 1;
  std::string retry_after;  // "" : no Retry-After header
  std::string location;     // "" : no Location header
  bool garbage = false;
  bool endless = false;
};

// The behaviour of `target` (path and query, as in the request line), or the reason it is not
// one: a path outside /hook/, an unknown parameter, a value out of range.
struct ParsedRoute {
  std::optional<RouteBehaviour> behaviour;
  std::string error;
};
ParsedRoute ParseRoute(std::string_view target);

// %XX decoded ("+" stays "+"); std::nullopt for a bad escape.
std::optional<std::string> PercentDecoded(std::string_view text);

// Splits a request target into its path and its query (without the '?').
std::pair<std::string_view, std::string_view> SplitTarget(std::string_view target);

// The value of parameter `name` in `query` ("a=1&b=2"), undecoded; std::nullopt when absent.
std::optional<std::string_view> QueryParameter(std::string_view query, std::string_view name);

}  // namespace bulkhead::mock
