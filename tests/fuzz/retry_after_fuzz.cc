// retry_after_fuzz: ParseRetryAfter (worker/http/retry_after.h) on arbitrary bytes.
//
// The first 8 bytes of an input pick `now` (any 64-bit count of seconds, clamped to what
// system_clock can hold around it, so the far past and far future are fuzzed too); the rest is
// the header value. On every input the contract must hold, or the target aborts (a finding):
// - it returns: no crash, no sanitizer report, no exception;
// - a delay is never negative and never more than kMaxRetryAfter;
// - it is a pure function: the same value at the same `now` gives the same answer;
// - space or tab around the value changes nothing.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "retry_after.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "retry_after_fuzz: contract broken: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using std::chrono::seconds;
  using std::chrono::system_clock;
  int64_t raw = 0;
  if (size >= sizeof(raw)) {
    std::memcpy(&raw, data, sizeof(raw));
    data += sizeof(raw);
    size -= sizeof(raw);
  }
  // system_clock counts nanoseconds in 64 bits: about ±292 years around 1970.
  constexpr int64_t kLimit = 9'000'000'000LL;  // seconds, about ±285 years
  const int64_t s = raw % kLimit;
  const system_clock::time_point now{
      std::chrono::duration_cast<system_clock::duration>(seconds(s))};
  const std::string_view value(reinterpret_cast<const char*>(data), size);

  const auto delay = bulkhead::ParseRetryAfter(value, now);
  if (delay) {
    if (*delay < seconds(0)) Fail("a negative delay");
    if (*delay > bulkhead::kMaxRetryAfter) Fail("a delay beyond kMaxRetryAfter");
  }
  if (bulkhead::ParseRetryAfter(value, now) != delay) Fail("two answers to one question");
  const std::string padded = " \t" + std::string(value) + "\t ";
  if (bulkhead::ParseRetryAfter(padded, now) != delay) Fail("surrounding blanks changed it");
  return 0;
}
