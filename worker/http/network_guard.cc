#include "network_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

namespace bulkhead {
namespace {

// The text as the operator wrote it, in JSON quotes, cut short (on a UTF-8 boundary) if long:
// the same words config.cc's errors use. Invalid UTF-8 (possible here, unlike in a parsed JSON
// string) is shown as U+FFFD rather than thrown about: cidr_fuzz's first run found that.
std::string Shown(std::string_view text) {
  std::string shown = nlohmann::json(std::string(text))
                          .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (shown.size() <= 60) return shown;
  size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
  return shown.substr(0, cut) + "...";
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A decimal number without sign or leading zeros ("0" itself is fine), at most `max`.
std::optional<int> StrictDecimal(std::string_view text, int max) {
  if (!AllDigits(text) || text.size() > 3 || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  int value = 0;
  for (char c : text) value = value * 10 + (c - '0');
  if (value > max) return std::nullopt;
  return value;
}

// Dotted-quad IPv4 exactly: four parts of 0..255, no leading zeros (an old resolver reads
// "010" as octal 8; inet_pton refuses it too, but the rule is ours, not glibc's, to keep).
bool StrictIpv4(std::string_view text) {
  int parts = 0;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!StrictDecimal(part, 255)) return false;
    ++parts;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts == 4;
}

std::string AddressText(int family, const uint8_t* address) {
  char text[INET6_ADDRSTRLEN] = {};
  if (inet_ntop(family, address, text, sizeof(text)) == nullptr) return "?";
  return text;
}

struct Range {
  Network network;
  const char* kind;
};

Network MustParse(std::string_view text) { return std::get<Network>(ParseCidr(text)); }

// The deny lists (see the header). Order matters only for the reason given: the first match
// names the range.
const std::vector<Range>& Ipv4Denied() {
  static const std::vector<Range> ranges = {
      {MustParse("0.0.0.0/8"), "\"this network\""},
      {MustParse("10.0.0.0/8"), "a private range"},
      {MustParse("100.64.0.0/10"), "carrier-grade NAT shared address space"},
      {MustParse("127.0.0.0/8"), "loopback"},
      // Azure's wire server: platform DNS, DHCP, load-balancer health probes and the VM agent's
      // channel to the host. A public address, the same in every Azure virtual network, that
      // answers only from inside one, so no private range covers it (the other clouds keep their
      // metadata in 169.254.0.0/16 or fd00:ec2::/32, below and in fc00::/7).
      {MustParse("168.63.129.16/32"), "Azure's wire server (platform DNS and metadata)"},
      {MustParse("169.254.0.0/16"), "link-local (cloud metadata lives here)"},
      {MustParse("172.16.0.0/12"), "a private range"},
      {MustParse("192.0.0.0/24"), "IETF protocol assignments"},
      {MustParse("192.0.2.0/24"), "a documentation range"},
      {MustParse("192.168.0.0/16"), "a private range"},
      {MustParse("198.18.0.0/15"), "a benchmarking range"},
      {MustParse("198.51.100.0/24"), "a documentation range"},
      {MustParse("203.0.113.0/24"), "a documentation range"},
      {MustParse("224.0.0.0/4"), "multicast"},
      {MustParse("255.255.255.255/32"), "broadcast"},
      {MustParse("240.0.0.0/4"), "a reserved range"},
  };
  return ranges;
}

// IPv6 ranges checked before the embeddings: exact addresses that /96 embeddings would
// otherwise read as IPv4 0.0.0.0 and 0.0.0.1.
const std::vector<Range>& Ipv6DeniedFirst() {
  static const std::vector<Range> ranges = {
      {MustParse("::/128"), "the unspecified address"},
      {MustParse("::1/128"), "loopback"},
  };
  return ranges;
}

const std::vector<Range>& Ipv6Denied() {
  static const std::vector<Range> ranges = {
      {MustParse("fc00::/7"), "unique local addresses (private)"},
      {MustParse("fe80::/10"), "link-local"},
      {MustParse("fec0::/10"), "site-local (deprecated, private)"},
      {MustParse("ff00::/8"), "multicast"},
      {MustParse("2001:db8::/32"), "a documentation range"},
      {MustParse("2001::/32"), "Teredo (an IPv4 tunnel whose address cannot be checked)"},
      {MustParse("100::/64"), "the discard-only range"},
      {MustParse("64:ff9b:1::/48"), "local-use NAT64 (private)"},
  };
  return ranges;
}

// An IPv4 address carried inside an IPv6 one.
struct Embedding {
  Network network;
  const char* name;
  int offset;  // where the 4 bytes start
};

const std::vector<Embedding>& Embeddings() {
  static const std::vector<Embedding> embeddings = {
      {MustParse("::ffff:0:0/96"), "IPv4-mapped", 12},
      {MustParse("::/96"), "IPv4-compatible", 12},
      {MustParse("64:ff9b::/96"), "NAT64", 12},
      {MustParse("2002::/16"), "6to4", 2},
  };
  return embeddings;
}

const Range* FindRange(const std::vector<Range>& ranges, int family, const uint8_t* address) {
  for (const Range& range : ranges) {
    if (range.network.Contains(family, address)) return &range;
  }
  return nullptr;
}

}  // namespace

bool Network::Contains(int address_family, const uint8_t* address) const {
  if (address_family != family) return false;
  int full = prefix / 8;
  if (std::memcmp(bytes.data(), address, full) != 0) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (address[full] & mask) == bytes[full];
}

std::string Network::ToString() const {
  return AddressText(family, bytes.data()) + "/" + std::to_string(prefix);
}

std::variant<Network, std::string> ParseCidr(std::string_view text) {
  const std::string expectation =
      "an IPv4 or IPv6 network such as \"10.0.0.0/8\" or \"fd00::/8\", not " + Shown(text);
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return "must be " + expectation + " (no /prefix length)";
  std::string address(text.substr(0, slash));
  std::string_view prefix_text = text.substr(slash + 1);
  Network network;
  network.family = address.find(':') == std::string::npos ? AF_INET : AF_INET6;
  const int max_prefix = network.family == AF_INET ? 32 : 128;
  uint8_t bytes[16] = {};
  bool address_ok = network.family == AF_INET
                        ? StrictIpv4(address)
                        : address.find('%') == std::string::npos;  // no zone id
  if (!address_ok || inet_pton(network.family, address.c_str(), bytes) != 1) {
    return "must be " + expectation;
  }
  std::optional<int> prefix = StrictDecimal(prefix_text, max_prefix);
  if (!prefix) {
    return "must have a prefix length from 0 to " + std::to_string(max_prefix) + " for " +
           (network.family == AF_INET ? "IPv4" : "IPv6") + ", not " + Shown(text);
  }
  network.prefix = *prefix;
  bool host_bits = false;
  for (int i = 0; i < max_prefix / 8; ++i) {
    int keep = std::clamp(network.prefix - 8 * i, 0, 8);
    uint8_t mask = keep == 0 ? 0 : static_cast<uint8_t>(0xFF << (8 - keep));
    network.bytes[i] = bytes[i] & mask;
    host_bits = host_bits || network.bytes[i] != bytes[i];
  }
  if (host_bits) {
    return "has bits set past its /" + std::to_string(network.prefix) +
           " prefix: the network is \"" + network.ToString() + "\", not " + Shown(text);
  }
  return network;
}

std::string GuardVerdict::Text() const {
  if (allowed) return "";
  std::string text = "blocked: " + address;
  if (!embedding.empty()) text += " embeds " + embedded + " (" + embedding + "), which";
  text += " is in " + kind;
  if (!range.empty()) text += " (" + range + ")";
  return text + "; add it to allowed_networks to allow it";
}

NetworkGuard::NetworkGuard(std::vector<Network> allowed) : allowed_(std::move(allowed)) {}

GuardVerdict NetworkGuard::Check(const sockaddr* address) const {
  if (address != nullptr && address->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(address);
    return Check(AF_INET, reinterpret_cast<const uint8_t*>(&in->sin_addr));
  }
  if (address != nullptr && address->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(address);
    return Check(AF_INET6, in6->sin6_addr.s6_addr);
  }
  GuardVerdict verdict;
  verdict.allowed = false;
  verdict.address =
      "an address of family " + std::to_string(address == nullptr ? -1 : int{address->sa_family});
  verdict.kind = "no IPv4 or IPv6 family";
  return verdict;
}

GuardVerdict NetworkGuard::Check(int family, const uint8_t* address) const {
  GuardVerdict verdict;
  verdict.address = AddressText(family, address);
  auto allowed_by_list = [&](int f, const uint8_t* a) {
    for (const Network& network : allowed_) {
      if (network.Contains(f, a)) {
        verdict.range = network.ToString();
        return true;
      }
    }
    return false;
  };
  auto deny = [&](const Range& range) {
    verdict.allowed = false;
    verdict.range = range.network.ToString();
    verdict.kind = range.kind;
    return verdict;
  };
  if (family != AF_INET && family != AF_INET6) {
    verdict.allowed = false;
    verdict.address = "an address of family " + std::to_string(family);
    verdict.kind = "no IPv4 or IPv6 family";
    return verdict;
  }
  if (allowed_by_list(family, address)) return verdict;
  if (family == AF_INET) {
    if (const Range* range = FindRange(Ipv4Denied(), AF_INET, address)) return deny(*range);
    return verdict;
  }
  if (const Range* range = FindRange(Ipv6DeniedFirst(), AF_INET6, address)) return deny(*range);
  for (const Embedding& embedding : Embeddings()) {
    if (!embedding.network.Contains(AF_INET6, address)) continue;
    const uint8_t* v4 = address + embedding.offset;
    if (allowed_by_list(AF_INET, v4)) return verdict;
    if (const Range* range = FindRange(Ipv4Denied(), AF_INET, v4)) {
      verdict.embedding = embedding.name;
      verdict.embedded = AddressText(AF_INET, v4);
      return deny(*range);
    }
    return verdict;  // a public IPv4 address, reached through IPv6
  }
  if (const Range* range = FindRange(Ipv6Denied(), AF_INET6, address)) return deny(*range);
  return verdict;
}

}  // namespace bulkhead
