#include "config_keys.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <vector>

#include "network_guard.h"

namespace bulkhead {

namespace config_rules {

bool IsTierName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string Shown(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() <= 60) return text;
  size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

// tier_fuzz found keys that broke a refusal in two, first unknown, then repeated.
std::string ShownKey(const std::string& name) {
  const bool plain = std::none_of(name.begin(), name.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  return plain
             ? name
             : nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace config_rules

namespace {

using config_rules::IsTierName;
using config_rules::kTierNameRule;
using config_rules::Shown;
using config_rules::ShownKey;
using nlohmann::json;
using Error = std::optional<ConfigError>;

// ---- Messages ------------------------------------------------------------------------------

template <typename Options>
std::string IntExpectation(const ConfigKey<Options>& key) {
  return "an integer from " + std::to_string(key.min) + " to " + std::to_string(key.max);
}

ConfigError Refusal(std::string_view key, std::string_view expectation, const std::string& shown) {
  return {"", std::string(key), "must be " + std::string(expectation) + ", not " + shown};
}

// "retry_delays_ms[2]": an entry of an array.
std::string Entry(std::string_view key, size_t index) {
  return std::string(key) + "[" + std::to_string(index) + "]";
}

// A JSON integer that fits int64_t. 5.0 and "5" are not integers.
std::optional<int64_t> AsInt64(const json& value) {
  if (value.is_number_unsigned()) {
    uint64_t number = value.get<uint64_t>();
    if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(number);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

// The struct and field type of a pointer to member.
template <typename T>
struct MemberOf;
template <typename C, typename V>
struct MemberOf<V C::*> {
  using Class = C;
  using Value = V;
};
template <auto M>
using ClassOf = typename MemberOf<decltype(M)>::Class;
template <auto M>
using ValueOf = typename MemberOf<decltype(M)>::Value;

// ---- Readers: the JSON type of each kind of key ------------------------------------------

// An integer; one too large for its field is refused here, in the range's words.
template <auto M>
Error ReadInt(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  using T = ValueOf<M>;
  std::optional<int64_t> number = AsInt64(value);
  if (!number || *number < std::numeric_limits<T>::min() ||
      *number > std::numeric_limits<T>::max()) {
    return Refusal(key.name, IntExpectation(key), Shown(value));
  }
  options.*M = static_cast<T>(*number);
  return std::nullopt;
}

template <auto M>
Error ReadNumber(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  if (!value.is_number()) return Refusal(key.name, key.expectation, Shown(value));
  options.*M = value.get<double>();
  return std::nullopt;
}

template <auto M>
Error ReadString(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  if (!value.is_string()) return Refusal(key.name, key.expectation, Shown(value));
  options.*M = value.get<std::string>();
  return std::nullopt;
}

// true or false only: "yes", 1 and "true" are refused, since a safety switch read wrongly is
// worse than one refused.
template <auto M>
Error ReadBool(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  if (!value.is_boolean()) return Refusal(key.name, key.expectation, Shown(value));
  options.*M = value.get<bool>();
  return std::nullopt;
}

// An array of strings; each entry's own rule is the row's check.
template <auto M>
Error ReadStrings(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  if (!value.is_array()) return Refusal(key.name, key.expectation, Shown(value));
  std::vector<std::string> strings;
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_string()) return Refusal(Entry(key.name, i), "a string", Shown(value[i]));
    strings.push_back(value[i].get<std::string>());
  }
  options.*M = std::move(strings);
  return std::nullopt;
}

// An array of integers; each entry's range is the row's check.
template <auto M>
Error ReadInts(const ConfigKey<ClassOf<M>>& key, const json& value, ClassOf<M>& options) {
  if (!value.is_array()) return Refusal(key.name, key.expectation, Shown(value));
  std::vector<int64_t> numbers;
  for (size_t i = 0; i < value.size(); ++i) {
    std::optional<int64_t> number = AsInt64(value[i]);
    if (!number) return Refusal(Entry(key.name, i), IntExpectation(key), Shown(value[i]));
    numbers.push_back(*number);
  }
  options.*M = std::move(numbers);
  return std::nullopt;
}

template <auto M>
json Value(const ClassOf<M>& options) {
  return json(options.*M);
}

// ---- Checks: the ranges and rules of each kind of key ------------------------------------

template <auto M>
Error CheckInt(const ConfigKey<ClassOf<M>>& key, const ClassOf<M>& options) {
  const int64_t value = options.*M;
  if (value >= key.min && value <= key.max) return std::nullopt;
  return Refusal(key.name, IntExpectation(key), std::to_string(value));
}

// A share: above 0, at most 1.
template <auto M>
Error CheckShare(const ConfigKey<ClassOf<M>>& key, const ClassOf<M>& options) {
  const double value = options.*M;
  if (value > 0.0 && value <= 1.0) return std::nullopt;
  return Refusal(key.name, key.expectation, Shown(json(value)));
}

// A fraction: 0 to 1.
template <auto M>
Error CheckFraction(const ConfigKey<ClassOf<M>>& key, const ClassOf<M>& options) {
  const double value = options.*M;
  if (value >= 0.0 && value <= 1.0) return std::nullopt;
  return Refusal(key.name, key.expectation, Shown(json(value)));
}

// 1 to `kMaxEntries` integers, each from key.min to key.max.
template <auto M, size_t kMaxEntries>
Error CheckInts(const ConfigKey<ClassOf<M>>& key, const ClassOf<M>& options) {
  const std::vector<int64_t>& values = options.*M;
  if (values.empty()) return Refusal(key.name, key.expectation, "[]");
  if (values.size() > kMaxEntries) {
    return Refusal(key.name, key.expectation, "an array of " + std::to_string(values.size()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] < key.min || values[i] > key.max) {
      return Refusal(Entry(key.name, i), IntExpectation(key), std::to_string(values[i]));
    }
  }
  return std::nullopt;
}

// Rows: a key of each kind, for `Options`.
template <auto M>
constexpr ConfigKey<ClassOf<M>> IntKey(std::string_view name, bool reloadable, int64_t min,
                                       int64_t max) {
  return {.name = name,
          .type = "integer",
          .reloadable = reloadable,
          .min = min,
          .max = max,
          .read = &ReadInt<M>,
          .check = &CheckInt<M>,
          .value = &Value<M>};
}

template <auto M>
constexpr ConfigKey<ClassOf<M>> StringKey(std::string_view name, std::string_view expectation,
                                          Error (*check)(const ConfigKey<ClassOf<M>>&,
                                                         const ClassOf<M>&)) {
  return {.name = name,
          .type = "string",
          .reloadable = false,
          .expectation = expectation,
          .read = &ReadString<M>,
          .check = check,
          .value = &Value<M>};
}

template <auto M>
constexpr ConfigKey<ClassOf<M>> StringsKey(std::string_view name, std::string_view expectation,
                                           Error (*check)(const ConfigKey<ClassOf<M>>&,
                                                          const ClassOf<M>&)) {
  return {.name = name,
          .type = "array of strings",
          .reloadable = false,
          .expectation = expectation,
          .read = &ReadStrings<M>,
          .check = check,
          .value = &Value<M>};
}

template <auto M>
constexpr ConfigKey<ClassOf<M>> ShareKey(std::string_view name) {
  return {.name = name,
          .type = "number",
          .reloadable = true,
          .expectation = "a number above 0 and at most 1",
          .read = &ReadNumber<M>,
          .check = &CheckShare<M>,
          .value = &Value<M>};
}

// With `also`, a rule against an earlier key.
template <typename Options>
constexpr ConfigKey<Options> Also(ConfigKey<Options> key,
                                  Error (*also)(const ConfigKey<Options>&, const Options&)) {
  key.also = also;
  return key;
}

// ---- Node keys' own rules ----------------------------------------------------------------

constexpr size_t kMaxNodeNameChars = 200;  // bulkhead.nodes.name's CHECK

// Characters as PostgreSQL's length() counts them in UTF-8: bytes that do not continue one.
size_t Utf8Length(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "host:port" or "[ipv6]:port", port 1..65535.
bool IsListenAddress(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (!AllDigits(port) || port.size() > 5) return false;
  int number = std::stoi(std::string(port));
  if (number < 1 || number > 65535) return false;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    std::string address(host.substr(1, host.size() - 2));
    in6_addr parsed;
    return inet_pton(AF_INET6, address.c_str(), &parsed) == 1;
  }
  return !host.empty() && std::none_of(host.begin(), host.end(), [](char c) {
    return c == ':' || c == '[' || c == ']' || std::isspace(static_cast<unsigned char>(c));
  });
}

using NodeKey = ConfigKey<NodeOptions>;

Error CheckNodeName(const NodeKey& key, const NodeOptions& o) {
  if (!o.node.empty() && Utf8Length(o.node) <= kMaxNodeNameChars) return std::nullopt;
  return Refusal(key.name, key.expectation,
                 o.node.empty() ? "\"\"" : "one of " + std::to_string(Utf8Length(o.node)));
}

Error CheckTiersDir(const NodeKey& key, const NodeOptions& o) {
  if (!o.tiers_dir.empty()) return std::nullopt;
  return Refusal(key.name, key.expectation, "\"\"");
}

Error CheckMetricsListen(const NodeKey& key, const NodeOptions& o) {
  if (IsListenAddress(o.metrics_listen)) return std::nullopt;
  return Refusal(key.name, key.expectation, Shown(json(o.metrics_listen)));
}

Error CheckAllowedNetworks(const NodeKey& key, const NodeOptions& o) {
  for (size_t i = 0; i < o.allowed_networks.size(); ++i) {
    auto parsed = ParseCidr(o.allowed_networks[i]);  // network_guard.h: the one CIDR parser
    if (auto* problem = std::get_if<std::string>(&parsed)) {
      return ConfigError{"", Entry(key.name, i), *problem};
    }
  }
  return std::nullopt;
}

Error CheckTiers(const NodeKey& key, const NodeOptions& o) {
  const std::vector<std::string>& tiers = o.tiers;
  for (size_t i = 0; i < tiers.size(); ++i) {
    if (!IsTierName(tiers[i])) {
      return Refusal(Entry(key.name, i), "a tier name matching " + std::string(kTierNameRule),
                     Shown(json(tiers[i])));
    }
    if (std::find(tiers.begin(), tiers.begin() + i, tiers[i]) != tiers.begin() + i) {
      return ConfigError{"", Entry(key.name, i), "names tier " + Shown(json(tiers[i])) + " again"};
    }
  }
  return std::nullopt;
}

// ---- Tier keys' rules against earlier keys -------------------------------------------------

using TierKey = ConfigKey<TierOptions>;

Error AtLeastCooldown(const TierKey& key, const TierOptions& t) {
  if (t.cooldown_max_ms >= t.cooldown_ms) return std::nullopt;
  return ConfigError{"", std::string(key.name),
                     "must be at least cooldown_ms (" + std::to_string(t.cooldown_ms) + "), not " +
                         std::to_string(t.cooldown_max_ms)};
}

Error AtLeastConnectTimeout(const TierKey& key, const TierOptions& t) {
  if (t.request_timeout_ms >= t.connect_timeout_ms) return std::nullopt;
  return ConfigError{"", std::string(key.name),
                     "must be at least connect_timeout_ms (" +
                         std::to_string(t.connect_timeout_ms) + "), not " +
                         std::to_string(t.request_timeout_ms)};
}

// ---- The tables ----------------------------------------------------------------------------
//
// Ranges are written here once; docs/configuration.md repeats them, and tests/config_test.cc
// checks every edge. Node keys are read once, at start; every tier key is applied again by a
// SIGHUP reload (node.h).

constexpr int64_t k7Days = 604'800'000;  // ms

const NodeKey kNodeKeys[] = {
    StringKey<&NodeOptions::database>("database", "a string (a libpq connection string or URL)",
                                      nullptr),
    StringKey<&NodeOptions::database_pool>(
        "database_pool", "a string (a libpq connection string or URL of a transaction pooler)",
        nullptr),
    StringKey<&NodeOptions::node>("node", "a string of 1 to 200 characters", &CheckNodeName),
    StringKey<&NodeOptions::tiers_dir>("tiers_dir", "a non-empty string (a folder)",
                                       &CheckTiersDir),
    StringKey<&NodeOptions::metrics_listen>(
        "metrics_listen", "\"host:port\" with a port from 1 to 65535", &CheckMetricsListen),
    StringsKey<&NodeOptions::allowed_networks>("allowed_networks",
                                               "an array of CIDR strings such as \"127.0.0.0/8\"",
                                               &CheckAllowedNetworks),
    {.name = "tls_insecure_skip_verify",
     .type = "boolean",
     .reloadable = false,
     .expectation = "true or false",
     .read = &ReadBool<&NodeOptions::tls_insecure_skip_verify>,
     .value = &Value<&NodeOptions::tls_insecure_skip_verify>},
    StringsKey<&NodeOptions::tiers>("tiers", "an array of tier names", &CheckTiers),
    IntKey<&NodeOptions::shutdown_grace_ms>("shutdown_grace_ms", false, 0, 600'000),
    IntKey<&NodeOptions::poll_interval_ms>("poll_interval_ms", false, 10, 60'000),
    IntKey<&NodeOptions::completion_batch_size>("completion_batch_size", false, 1, 10000),
    IntKey<&NodeOptions::completion_flush_ms>("completion_flush_ms", false, 1, 1000),
    IntKey<&NodeOptions::lease_ms>("lease_ms", false, 3000, 600'000),
    IntKey<&NodeOptions::retention_ms>("retention_ms", false, 60'000,
                                       31'536'000'000),  // 1 min .. 365 days
    IntKey<&NodeOptions::database_connect_timeout_ms>("database_connect_timeout_ms", false, 0,
                                                      600'000),
    IntKey<&NodeOptions::database_statement_timeout_ms>("database_statement_timeout_ms", false, 0,
                                                        3'600'000),
    IntKey<&NodeOptions::database_tcp_user_timeout_ms>("database_tcp_user_timeout_ms", false, 0,
                                                       600'000),
    IntKey<&NodeOptions::database_keepalive_idle_ms>("database_keepalive_idle_ms", false, 0,
                                                     7'200'000),
};

const TierKey kTierKeys[] = {
    IntKey<&TierOptions::workers>("workers", true, 1, 10000),
    ShareKey<&TierOptions::channel_share>("channel_share"),
    ShareKey<&TierOptions::tenant_share>("tenant_share"),
    ShareKey<&TierOptions::reserve_share>("reserve_share"),
    IntKey<&TierOptions::failure_threshold>("failure_threshold", true, 1, 1000),
    IntKey<&TierOptions::slow_call_ms>("slow_call_ms", true, 1, 3'600'000),
    IntKey<&TierOptions::stalled_after_ms>("stalled_after_ms", true, 1, 3'600'000),
    IntKey<&TierOptions::cooldown_ms>("cooldown_ms", true, 1000, 86'400'000),
    Also(IntKey<&TierOptions::cooldown_max_ms>("cooldown_max_ms", true, 1000, 86'400'000),
         &AtLeastCooldown),
    IntKey<&TierOptions::connect_timeout_ms>("connect_timeout_ms", true, 1, 600'000),
    Also(IntKey<&TierOptions::request_timeout_ms>("request_timeout_ms", true, 1, 3'600'000),
         &AtLeastConnectTimeout),
    {.name = "retry_delays_ms",
     .type = "array of integers",
     .reloadable = true,
     .min = 1,
     .max = k7Days,  // each entry
     .expectation = "a non-empty array of at most 100 delays in milliseconds",
     .read = &ReadInts<&TierOptions::retry_delays_ms>,
     .check = &CheckInts<&TierOptions::retry_delays_ms, 100>,
     .value = &Value<&TierOptions::retry_delays_ms>},
    {.name = "retry_jitter",
     .type = "number",
     .reloadable = true,
     .expectation = "a number from 0 to 1",
     .read = &ReadNumber<&TierOptions::retry_jitter>,
     .check = &CheckFraction<&TierOptions::retry_jitter>,
     .value = &Value<&TierOptions::retry_jitter>},
    IntKey<&TierOptions::retry_after_max_ms>("retry_after_max_ms", true, 0, k7Days),
};

// ---- Reading and checking by a table ---------------------------------------------------------

template <typename Options, typename Other>
Error Read(std::span<const ConfigKey<Options>> keys, std::span<const ConfigKey<Other>> other_keys,
           std::string_view other_place, const json& object, Options& options) {
  auto named = [](const auto& key_table, const std::string& name) {
    return std::any_of(key_table.begin(), key_table.end(),
                       [&](const auto& key) { return key.name == name; });
  };
  for (const auto& [name, value] : object.items()) {
    if (named(keys, name)) continue;
    std::string reason = "unknown key";
    if (named(other_keys, name)) reason += " here (it belongs in " + std::string(other_place) + ")";
    return ConfigError{"", ShownKey(name), reason};
  }
  for (const ConfigKey<Options>& key : keys) {
    auto it = object.find(key.name);
    if (it == object.end()) continue;
    if (Error error = key.read(key, *it, options)) return error;
  }
  return std::nullopt;
}

template <typename Options>
Error Check(std::span<const ConfigKey<Options>> keys, const Options& options) {
  for (const ConfigKey<Options>& key : keys) {
    if (key.check != nullptr) {
      if (Error error = key.check(key, options)) return error;
    }
    if (key.also != nullptr) {
      if (Error error = key.also(key, options)) return error;
    }
  }
  return std::nullopt;
}

}  // namespace

std::span<const ConfigKey<NodeOptions>> NodeKeys() { return kNodeKeys; }
std::span<const ConfigKey<TierOptions>> TierKeys() { return kTierKeys; }

std::optional<ConfigError> ReadKeys(const json& object, NodeOptions& options) {
  return Read(NodeKeys(), TierKeys(), "a tier file in tiers_dir", object, options);
}

std::optional<ConfigError> ReadKeys(const json& object, TierOptions& options) {
  return Read(TierKeys(), NodeKeys(), "the node's config file", object, options);
}

std::optional<ConfigError> TierOptions::Validate() const {
  if (!IsTierName(name)) {
    return ConfigError{"", "",
                       "the tier's name (its file name without .json) must match " +
                           std::string(kTierNameRule) + ", not " + Shown(json(name))};
  }
  return Check(TierKeys(), *this);
}

std::optional<ConfigError> NodeOptions::Validate() const { return Check(NodeKeys(), *this); }

}  // namespace bulkhead
