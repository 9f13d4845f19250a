// NetworkGuard: the SSRF guard's rules — which addresses a webhook may be sent to.
//
// Tenants choose their endpoints' URLs, and the worker sends from inside the operator's
// network, so every address a request is about to dial is checked here first (HttpSender does
// it in libcurl's open-socket callback, after DNS: see docs/adr/0007-ssrf-guard.md). Denied by
// default, each with the range it fell in:
//   IPv4  0.0.0.0/8 ("this network"), 10/8, 172.16/12, 192.168/16 (private), 100.64/10
//         (carrier-grade NAT), 127/8 (loopback), 169.254/16 (link-local: cloud metadata
//         169.254.169.254), 168.63.129.16/32 (Azure's wire server: platform DNS and metadata,
//         a public address reachable only from inside Azure), 192.0.0/24 (IETF protocol
//         assignments), 192.0.2/24, 198.51.100/24, 203.0.113/24 (documentation), 198.18/15
//         (benchmarking), 224/4 (multicast), 255.255.255.255/32 (broadcast), 240/4 (reserved).
//   IPv6  ::/128 (unspecified), ::1/128 (loopback), fc00::/7 (unique local: fd00:ec2::254, a
//         cloud metadata address, is in it), fe80::/10 (link-local), fec0::/10 (site-local,
//         deprecated), ff00::/8 (multicast), 2001:db8::/32 (documentation), 2001::/32 (Teredo:
//         its embedded address is obfuscated, so it is refused whole), 100::/64 (discard-only).
//   IPv4 in IPv6: ::ffff:0:0/96 (mapped), ::/96 (compatible), 64:ff9b::/96 (NAT64) and
//         2002::/16 (6to4) carry an IPv4 address; that address is judged by the IPv4 rules
//         (and the allow list), so ::ffff:10.0.0.5 is as private as 10.0.0.5, and
//         64:ff9b::8.8.8.8 is as public as 8.8.8.8.
// `allowed_networks` (NodeOptions) let listed networks through, checked before the deny list:
// an allowed IPv4 network also allows that IPv4 address embedded in IPv6.
//
// CIDR syntax (ParseCidr, also what config.cc uses to validate `allowed_networks`: one parser):
// "address/prefix", the address as inet_pton reads it (IPv4: exactly four decimal parts, no
// leading zeros, no octal or hex; IPv6: RFC 4291 text, no zone id), the prefix decimal without
// sign or leading zeros, 0..32 or 0..128. Bits set past the prefix are refused ("10.0.0.1/8"),
// naming the network meant: an operator who wrote a host address with a prefix most likely
// meant something else, and silently masking it would hide the mistake.
//
// Pure logic, no state but the allow list, constant after construction: safe for concurrent
// use. Nothing here throws but std::bad_alloc.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bulkhead {

// An IPv4 or IPv6 network: the address with every bit past the prefix clear.
struct Network {
  int family = AF_INET;             // AF_INET or AF_INET6
  std::array<uint8_t, 16> bytes{};  // network byte order; IPv4 uses the first 4
  int prefix = 0;                   // 0..32 or 0..128

  // Whether `address` (4 or 16 bytes of `family`) lies in this network.
  bool Contains(int address_family, const uint8_t* address) const;
  // "10.0.0.0/8", "fc00::/7".
  std::string ToString() const;
};

// Parses "10.0.0.0/8" or "fc00::/7" (see the syntax above). On failure, the reason, written
// to follow the key in a config error: "must be an IPv4 or IPv6 network such as …".
std::variant<Network, std::string> ParseCidr(std::string_view text);

// What the guard says about one address.
struct GuardVerdict {
  bool allowed = true;
  std::string address;  // as text: "10.0.0.5", "::ffff:10.0.0.5"
  // When denied: the range it fell in ("10.0.0.0/8") and its kind ("a private range").
  // When allowed by allowed_networks: range is the listed network; kind is empty.
  std::string range;
  std::string kind;
  // When denied through an IPv4 address embedded in IPv6: how ("IPv4-mapped") and the
  // embedded address.
  std::string embedding;
  std::string embedded;

  // "blocked: 10.0.0.5 is in a private range (10.0.0.0/8); add it to allowed_networks to
  // allow it"; empty when allowed.
  std::string Text() const;
};

class NetworkGuard {
 public:
  // Denies every range above and allows nothing extra.
  NetworkGuard() = default;
  // Denies every range above; `allowed` let their addresses through.
  explicit NetworkGuard(std::vector<Network> allowed);

  // The verdict on a socket address about to be dialled. Families other than AF_INET and
  // AF_INET6 (a Unix socket) are denied.
  GuardVerdict Check(const sockaddr* address) const;
  // The same for raw bytes: 4 for AF_INET, 16 for AF_INET6, network byte order.
  GuardVerdict Check(int family, const uint8_t* address) const;

  const std::vector<Network>& allowed() const { return allowed_; }

 private:
  // Constant after construction (not const only so that Options structs holding a guard stay
  // assignable).
  std::vector<Network> allowed_;
};

}  // namespace bulkhead
