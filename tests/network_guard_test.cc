// NetworkGuard and ParseCidr: pure logic, every range of the deny list at both of its edges
// and just outside them, the IPv4-in-IPv6 embeddings, the allow list, and CIDR syntax.
#include "network_guard.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>
#include <vector>

namespace bulkhead {
namespace {

GuardVerdict Verdict(const NetworkGuard& guard, const std::string& address) {
  uint8_t bytes[16] = {};
  int family = address.find(':') == std::string::npos ? AF_INET : AF_INET6;
  EXPECT_EQ(inet_pton(family, address.c_str(), bytes), 1) << address;
  return guard.Check(family, bytes);
}

Network Cidr(const std::string& text) {
  auto parsed = ParseCidr(text);
  EXPECT_TRUE(std::holds_alternative<Network>(parsed)) << text;
  return std::holds_alternative<Network>(parsed) ? std::get<Network>(parsed) : Network{};
}

struct Edge {
  std::string first, last;    // the range's first and last address: both denied
  std::string range;          // as the verdict names it
  std::string before, after;  // just outside (empty: the range starts or ends its space)
};

// Each denied range at both edges, and its neighbours (which must be allowed, unless they fall
// in another denied range: those are left empty).
const std::vector<Edge> kIpv4Edges = {
    {"0.0.0.0", "0.255.255.255", "0.0.0.0/8", "", "1.0.0.0"},
    {"10.0.0.0", "10.255.255.255", "10.0.0.0/8", "9.255.255.255", "11.0.0.0"},
    {"100.64.0.0", "100.127.255.255", "100.64.0.0/10", "100.63.255.255", "100.128.0.0"},
    {"127.0.0.0", "127.255.255.255", "127.0.0.0/8", "126.255.255.255", "128.0.0.0"},
    {"168.63.129.16", "168.63.129.16", "168.63.129.16/32", "168.63.129.15", "168.63.129.17"},
    {"169.254.0.0", "169.254.255.255", "169.254.0.0/16", "169.253.255.255", "169.255.0.0"},
    {"172.16.0.0", "172.31.255.255", "172.16.0.0/12", "172.15.255.255", "172.32.0.0"},
    {"192.0.0.0", "192.0.0.255", "192.0.0.0/24", "191.255.255.255", "192.0.1.0"},
    {"192.0.2.0", "192.0.2.255", "192.0.2.0/24", "192.0.1.255", "192.0.3.0"},
    {"192.168.0.0", "192.168.255.255", "192.168.0.0/16", "192.167.255.255", "192.169.0.0"},
    {"198.18.0.0", "198.19.255.255", "198.18.0.0/15", "198.17.255.255", "198.20.0.0"},
    {"198.51.100.0", "198.51.100.255", "198.51.100.0/24", "198.51.99.255", "198.51.101.0"},
    {"203.0.113.0", "203.0.113.255", "203.0.113.0/24", "203.0.112.255", "203.0.114.0"},
    {"224.0.0.0", "239.255.255.255", "224.0.0.0/4", "223.255.255.255", ""},
    {"240.0.0.0", "255.255.255.254", "240.0.0.0/4", "", ""},
    {"255.255.255.255", "255.255.255.255", "255.255.255.255/32", "", ""},
};

const std::vector<Edge> kIpv6Edges = {
    {"::", "::", "::/128", "", ""},
    {"::1", "::1", "::1/128", "", ""},
    {"fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/7",
     "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe00::"},
    {"fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::/10",
     "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
    {"fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::/10", "", ""},
    {"ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::/8", "", ""},
    {"2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::/32",
     "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"},
    {"2001::", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/32",
     "2000:ffff:ffff:ffff::", "2001:1::"},
    {"100::", "100::ffff:ffff:ffff:ffff", "100::/64", "ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
     "100:0:0:1::"},
    {"64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:1::/48",
     "64:ff9b:0:ffff::", "64:ff9b:2::"},
};

TEST(NetworkGuard, DeniesEveryIpv4RangeAtBothEdgesAndAllowsItsNeighbours) {
  NetworkGuard guard;
  for (const Edge& edge : kIpv4Edges) {
    for (const std::string& inside : {edge.first, edge.last}) {
      GuardVerdict verdict = Verdict(guard, inside);
      EXPECT_FALSE(verdict.allowed) << inside;
      EXPECT_EQ(verdict.range, edge.range) << inside;
      EXPECT_EQ(verdict.address, inside);
    }
    for (const std::string& outside : {edge.before, edge.after}) {
      if (!outside.empty()) {
        EXPECT_TRUE(Verdict(guard, outside).allowed) << outside;
      }
    }
  }
}

TEST(NetworkGuard, DeniesEveryIpv6RangeAtBothEdgesAndAllowsItsNeighbours) {
  NetworkGuard guard;
  for (const Edge& edge : kIpv6Edges) {
    for (const std::string& inside : {edge.first, edge.last}) {
      GuardVerdict verdict = Verdict(guard, inside);
      EXPECT_FALSE(verdict.allowed) << inside;
      EXPECT_EQ(verdict.range, edge.range) << inside;
    }
    for (const std::string& outside : {edge.before, edge.after}) {
      if (!outside.empty()) {
        EXPECT_TRUE(Verdict(guard, outside).allowed) << outside;
      }
    }
  }
}

TEST(NetworkGuard, AllowsPublicAddresses) {
  NetworkGuard guard;
  for (const char* address : {"1.1.1.1", "8.8.8.8", "93.184.216.34", "2606:4700::1111",
                              "2a00:1450:4001:82a::200e", "64:ff9b::808:808"}) {
    GuardVerdict verdict = Verdict(guard, address);
    EXPECT_TRUE(verdict.allowed) << address;
    EXPECT_EQ(verdict.Text(), "");
  }
}

TEST(NetworkGuard, CloudMetadataAddressesAreDenied) {
  NetworkGuard guard;
  GuardVerdict aws = Verdict(guard, "169.254.169.254");
  EXPECT_FALSE(aws.allowed);
  EXPECT_EQ(aws.range, "169.254.0.0/16");
  GuardVerdict aws6 = Verdict(guard, "fd00:ec2::254");
  EXPECT_FALSE(aws6.allowed);
  EXPECT_EQ(aws6.range, "fc00::/7");
  // Azure's wire server (platform DNS, DHCP, health probes, VM agent) is a public address,
  // the same in every Azure virtual network, and answers only from inside one.
  GuardVerdict azure = Verdict(guard, "168.63.129.16");
  EXPECT_FALSE(azure.allowed);
  EXPECT_EQ(azure.range, "168.63.129.16/32");
  EXPECT_EQ(azure.Text(),
            "blocked: 168.63.129.16 is in Azure's wire server (platform DNS and metadata) "
            "(168.63.129.16/32); add it to allowed_networks to allow it");
  EXPECT_FALSE(Verdict(guard, "::ffff:168.63.129.16").allowed);
  // Only that one address: its neighbours are ordinary public addresses.
  EXPECT_TRUE(Verdict(guard, "168.63.129.17").allowed);
}

TEST(NetworkGuard, TheReasonNamesTheAddressTheRangeAndTheWayOut) {
  NetworkGuard guard;
  EXPECT_EQ(Verdict(guard, "10.0.0.5").Text(),
            "blocked: 10.0.0.5 is in a private range (10.0.0.0/8); add it to allowed_networks "
            "to allow it");
  EXPECT_EQ(Verdict(guard, "::1").Text(),
            "blocked: ::1 is in loopback (::1/128); add it to allowed_networks to allow it");
}

TEST(NetworkGuard, Ipv4EmbeddedInIpv6IsJudgedByTheIpv4Rules) {
  NetworkGuard guard;
  struct Case {
    std::string address, embedding, embedded, range;
  };
  const std::vector<Case> denied = {
      {"::ffff:127.0.0.1", "IPv4-mapped", "127.0.0.1", "127.0.0.0/8"},
      {"::ffff:10.0.0.5", "IPv4-mapped", "10.0.0.5", "10.0.0.0/8"},
      {"::ffff:169.254.169.254", "IPv4-mapped", "169.254.169.254", "169.254.0.0/16"},
      {"::127.0.0.1", "IPv4-compatible", "127.0.0.1", "127.0.0.0/8"},
      {"::192.168.1.1", "IPv4-compatible", "192.168.1.1", "192.168.0.0/16"},
      {"64:ff9b::127.0.0.1", "NAT64", "127.0.0.1", "127.0.0.0/8"},
      {"64:ff9b::a00:5", "NAT64", "10.0.0.5", "10.0.0.0/8"},
      {"2002:7f00:1::", "6to4", "127.0.0.1", "127.0.0.0/8"},
      {"2002:a9fe:a9fe:1::5", "6to4", "169.254.169.254", "169.254.0.0/16"},
      {"2002:c0a8:101::", "6to4", "192.168.1.1", "192.168.0.0/16"},
  };
  for (const Case& c : denied) {
    GuardVerdict verdict = Verdict(guard, c.address);
    EXPECT_FALSE(verdict.allowed) << c.address;
    EXPECT_EQ(verdict.embedding, c.embedding) << c.address;
    EXPECT_EQ(verdict.embedded, c.embedded) << c.address;
    EXPECT_EQ(verdict.range, c.range) << c.address;
  }
  EXPECT_EQ(Verdict(guard, "::ffff:10.0.0.5").Text(),
            "blocked: ::ffff:10.0.0.5 embeds 10.0.0.5 (IPv4-mapped), which is in a private "
            "range (10.0.0.0/8); add it to allowed_networks to allow it");
  // Public IPv4 inside each embedding is reachable as itself.
  for (const char* address :
       {"::ffff:8.8.8.8", "::8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::"}) {
    EXPECT_TRUE(Verdict(guard, address).allowed) << address;
  }
}

TEST(NetworkGuard, AllowedNetworksAreCheckedFirst) {
  NetworkGuard guard({Cidr("127.0.0.0/8"), Cidr("::1/128"), Cidr("10.1.0.0/16")});
  for (const char* address : {"127.0.0.1", "127.255.255.255", "::1", "10.1.2.3", "::ffff:127.0.0.1",
                              "64:ff9b::10.1.0.1", "2002:7f00:1::"}) {
    GuardVerdict verdict = Verdict(guard, address);
    EXPECT_TRUE(verdict.allowed) << address;
    EXPECT_EQ(verdict.Text(), "");
  }
  // Only what is listed: the rest of 10/8 and every other range stay denied.
  for (const char* address : {"10.2.0.1", "192.168.1.1", "::ffff:10.2.0.1", "fe80::1"}) {
    EXPECT_FALSE(Verdict(guard, address).allowed) << address;
  }
  GuardVerdict listed = Verdict(guard, "10.1.2.3");
  EXPECT_EQ(listed.range, "10.1.0.0/16");
}

TEST(NetworkGuard, ZeroPrefixAllowsEverything) {
  NetworkGuard guard({Cidr("0.0.0.0/0"), Cidr("::/0")});
  for (const char* address : {"127.0.0.1", "0.0.0.0", "255.255.255.255", "::", "::1", "ff02::1"}) {
    EXPECT_TRUE(Verdict(guard, address).allowed) << address;
  }
}

TEST(NetworkGuard, ChecksSocketAddressesOfBothFamiliesAndRefusesOthers) {
  NetworkGuard guard;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_FALSE(guard.Check(reinterpret_cast<sockaddr*>(&v4)).allowed);
  inet_pton(AF_INET, "1.1.1.1", &v4.sin_addr);
  EXPECT_TRUE(guard.Check(reinterpret_cast<sockaddr*>(&v4)).allowed);
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_loopback;
  EXPECT_FALSE(guard.Check(reinterpret_cast<sockaddr*>(&v6)).allowed);
  sockaddr unix_family{};
  unix_family.sa_family = AF_UNIX;
  GuardVerdict other = guard.Check(&unix_family);
  EXPECT_FALSE(other.allowed);
  EXPECT_NE(other.Text().find("family"), std::string::npos) << other.Text();
}

TEST(ParseCidr, ReadsIpv4AndIpv6Networks) {
  Network v4 = Cidr("192.168.0.0/16");
  EXPECT_EQ(v4.family, AF_INET);
  EXPECT_EQ(v4.prefix, 16);
  EXPECT_EQ(v4.ToString(), "192.168.0.0/16");
  Network v6 = Cidr("fd00::/8");
  EXPECT_EQ(v6.family, AF_INET6);
  EXPECT_EQ(v6.ToString(), "fd00::/8");
  EXPECT_EQ(Cidr("0.0.0.0/0").prefix, 0);
  EXPECT_EQ(Cidr("::/0").prefix, 0);
  EXPECT_EQ(Cidr("10.1.2.3/32").ToString(), "10.1.2.3/32");
  EXPECT_EQ(Cidr("::ffff:127.0.0.0/104").ToString(), "::ffff:127.0.0.0/104");
  EXPECT_EQ(Cidr("2001:DB8::/32").ToString(), "2001:db8::/32");
}

TEST(ParseCidr, RefusesMalformedNetworksWithTheReason) {
  const std::string network =
      "must be an IPv4 or IPv6 network such as \"10.0.0.0/8\" or \"fd00::/8\"";
  struct Case {
    std::string text, reason;
  };
  const std::vector<Case> cases = {
      {"10.0.0.0", network + ", not \"10.0.0.0\" (no /prefix length)"},
      {"", network + ", not \"\" (no /prefix length)"},
      {"/8", network + ", not \"/8\""},
      {"10.0.0/8", network + ", not \"10.0.0/8\""},
      {"10.0.0.0.0/8", network + ", not \"10.0.0.0.0/8\""},
      {"300.0.0.0/8", network + ", not \"300.0.0.0/8\""},
      {"010.0.0.0/8", network + ", not \"010.0.0.0/8\""},  // octal to some resolvers
      {"10.00.0.0/16", network + ", not \"10.00.0.0/16\""},
      {"0x0a.0.0.0/8", network + ", not \"0x0a.0.0.0/8\""},
      {"167772160/8", network + ", not \"167772160/8\""},
      {" 10.0.0.0/8", network + ", not \" 10.0.0.0/8\""},
      {"localhost/8", network + ", not \"localhost/8\""},
      {"fd00:::1/8", network + ", not \"fd00:::1/8\""},
      {"fe80::%eth0/64", network + ", not \"fe80::%eth0/64\""},
      {"10.0.0.0/33", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/33\""},
      {"10.0.0.0/", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/\""},
      {"10.0.0.0/-1", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/-1\""},
      {"10.0.0.0/+8", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/+8\""},
      {"10.0.0.0/08", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/08\""},
      {"10.0.0.0/8 ", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/8 \""},
      {"10.0.0.0/8/8", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/8/8\""},
      {"::/129", "must have a prefix length from 0 to 128 for IPv6, not \"::/129\""},
      {"::/0128", "must have a prefix length from 0 to 128 for IPv6, not \"::/0128\""},
      {"127.0.0.1/8",
       "has bits set past its /8 prefix: the network is \"127.0.0.0/8\", not \"127.0.0.1/8\""},
      {"192.168.1.77/20",
       "has bits set past its /20 prefix: the network is \"192.168.0.0/20\", not "
       "\"192.168.1.77/20\""},
      {"fd00::1/8",
       "has bits set past its /8 prefix: the network is \"fd00::/8\", not \"fd00::1/8\""},
  };
  for (const Case& c : cases) {
    auto parsed = ParseCidr(c.text);
    ASSERT_TRUE(std::holds_alternative<std::string>(parsed)) << c.text;
    EXPECT_EQ(std::get<std::string>(parsed), c.reason) << c.text;
  }
}

// Regression: cidr_fuzz's first run. Config strings are valid UTF-8 (parsed JSON), but
// ParseCidr is public, and quoting the bytes in its reason threw from nlohmann's dump.
TEST(ParseCidr, RefusesInvalidUtf8WithAReasonInsteadOfThrowing) {
  auto parsed = ParseCidr(
      "192.\xef"
      "168.1.77/20");
  ASSERT_TRUE(std::holds_alternative<std::string>(parsed));
  EXPECT_EQ(std::get<std::string>(parsed),
            "must be an IPv4 or IPv6 network such as \"10.0.0.0/8\" or \"fd00::/8\", not "
            "\"192.\xef\xbf\xbd"
            "168.1.77/20\"");
}

TEST(Network, ContainsOnlyItsOwnFamilyAndPrefix) {
  Network net = Cidr("10.0.0.0/9");
  uint8_t inside[4] = {10, 127, 255, 255};
  uint8_t outside[4] = {10, 128, 0, 0};
  EXPECT_TRUE(net.Contains(AF_INET, inside));
  EXPECT_FALSE(net.Contains(AF_INET, outside));
  uint8_t v6[16] = {10, 0, 0, 1};
  EXPECT_FALSE(net.Contains(AF_INET6, v6));
}

}  // namespace
}  // namespace bulkhead
