// cidr_fuzz: ParseCidr (an `allowed_networks` entry) and the SSRF guard's verdict on arbitrary
// bytes.
//
// On every input the contract must hold (network_guard.h), or the target aborts (a finding):
// - ParseCidr returns; it throws nothing but std::bad_alloc;
// - a refusal is a reason in one line that starts "must " or "has ";
// - an accepted network has a prefix within its family's range, no bits set past the prefix,
//   and its ToString() parses back to the same network;
// - the guard, given the input's first 16 bytes as an IPv6 address and its first 4 as an IPv4
//   one, returns a verdict whose Text() is empty exactly when the address is allowed; a guard
//   that allows the parsed network allows its first address.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <variant>

#include "network_guard.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "cidr_fuzz: contract broken: %s\n", what);
  std::abort();
}

void CheckVerdict(const bulkhead::GuardVerdict& verdict) {
  if (verdict.allowed != verdict.Text().empty()) Fail("Text() disagrees with allowed");
  if (!verdict.allowed && verdict.Text().rfind("blocked: ", 0) != 0) Fail("a bad refusal text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = bulkhead::ParseCidr(text);
  if (const auto* reason = std::get_if<std::string>(&parsed)) {
    if (reason->find('\n') != std::string::npos) Fail("a reason over two lines");
    if (reason->rfind("must ", 0) != 0 && reason->rfind("has ", 0) != 0) Fail("a bad reason");
  } else {
    const auto& network = std::get<bulkhead::Network>(parsed);
    const int max = network.family == AF_INET ? 32 : 128;
    if (network.family != AF_INET && network.family != AF_INET6) Fail("an unknown family");
    if (network.prefix < 0 || network.prefix > max) Fail("a prefix out of range");
    for (int bit = network.prefix; bit < max; ++bit) {
      if (network.bytes[bit / 8] & (0x80 >> (bit % 8))) Fail("a bit set past the prefix");
    }
    auto again = bulkhead::ParseCidr(network.ToString());
    const auto* round_trip = std::get_if<bulkhead::Network>(&again);
    if (round_trip == nullptr || round_trip->family != network.family ||
        round_trip->prefix != network.prefix || round_trip->bytes != network.bytes) {
      Fail("ToString() does not parse back to the same network");
    }
    const bulkhead::NetworkGuard allowing({network});
    bulkhead::GuardVerdict first = allowing.Check(network.family, network.bytes.data());
    CheckVerdict(first);
    if (!first.allowed) Fail("a listed network's first address is refused");
  }
  uint8_t address[16] = {};
  std::memcpy(address, data, size < 16 ? size : 16);
  static const bulkhead::NetworkGuard guard;
  CheckVerdict(guard.Check(AF_INET6, address));
  CheckVerdict(guard.Check(AF_INET, address));
  return 0;
}
