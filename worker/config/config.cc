#include "config.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>
#include <system_error>

#include "network_guard.h"

namespace bulkhead {
namespace {

using nlohmann::json;

// ---- Ranges: the one place each is written (docs/configuration.md repeats them) ----------

struct IntRule {
  std::string_view key;
  int64_t min;
  int64_t max;
};

constexpr IntRule kWorkers{"workers", 1, 10000};
constexpr IntRule kFailureThreshold{"failure_threshold", 1, 1000};
constexpr IntRule kCooldown{"cooldown_ms", 1000, 86'400'000};
constexpr IntRule kCooldownMax{"cooldown_max_ms", 1000, 86'400'000};
constexpr IntRule kSlowCall{"slow_call_ms", 1, 3'600'000};
constexpr IntRule kStalledAfter{"stalled_after_ms", 1, 3'600'000};
constexpr IntRule kConnectTimeout{"connect_timeout_ms", 1, 600'000};
constexpr IntRule kRequestTimeout{"request_timeout_ms", 1, 3'600'000};
constexpr IntRule kRetryDelay{"retry_delays_ms", 1, 604'800'000};  // each entry: up to 7 days
constexpr size_t kMaxRetryDelays = 100;
constexpr IntRule kRetryAfterMax{"retry_after_max_ms", 0, 604'800'000};  // up to 7 days
constexpr IntRule kShutdownGrace{"shutdown_grace_ms", 0, 600'000};
constexpr IntRule kPollInterval{"poll_interval_ms", 10, 60'000};
constexpr IntRule kCompletionBatch{"completion_batch_size", 1, 10000};
constexpr IntRule kCompletionFlush{"completion_flush_ms", 1, 1000};
constexpr IntRule kLease{"lease_ms", 3000, 600'000};
constexpr IntRule kRetention{"retention_ms", 60'000, 31'536'000'000};  // 1 min .. 365 days
constexpr size_t kMaxNodeNameChars = 200;  // bulkhead.nodes.name's CHECK

constexpr std::string_view kTierNameRule = "^[a-z][a-z0-9_]{0,62}$";

constexpr std::array<std::string_view, 13> kTierKeys = {
    "workers",
    "channel_share",
    "tenant_share",
    "failure_threshold",
    "slow_call_ms",
    "stalled_after_ms",
    "cooldown_ms",
    "cooldown_max_ms",
    "connect_timeout_ms",
    "request_timeout_ms",
    "retry_delays_ms",
    "retry_jitter",
    "retry_after_max_ms",
};
constexpr std::array<std::string_view, 13> kNodeKeys = {
    "database",
    "node",
    "tiers_dir",
    "metrics_listen",
    "allowed_networks",
    "tls_insecure_skip_verify",
    "tiers",
    "shutdown_grace_ms",
    "poll_interval_ms",
    "completion_batch_size",
    "completion_flush_ms",
    "lease_ms",
    "retention_ms",
};

// ---- Messages ------------------------------------------------------------------------------

// A value as the operator wrote it, cut short (on a UTF-8 character boundary) if long.
std::string Shown(const json& value) {
  std::string text = value.dump();
  if (text.size() <= 60) return text;
  size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string Shown(int64_t value) { return std::to_string(value); }
std::string Shown(double value) { return Shown(json(value)); }
std::string Shown(const std::string& value) { return Shown(json(value)); }
// A path in quotes, never cut short.
std::string Quoted(const std::filesystem::path& path) { return json(path.string()).dump(); }

std::string IntExpectation(const IntRule& rule) {
  return "an integer from " + std::to_string(rule.min) + " to " + std::to_string(rule.max);
}

ConfigError Refusal(std::string_view key, std::string_view expectation, const std::string& shown) {
  return {"", std::string(key), "must be " + std::string(expectation) + ", not " + shown};
}

// ---- Value rules shared by the readers and Validate() ------------------------------------

bool IsTierName(std::string_view name) {
  if (name.empty() || name.size() > 63 || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string TierNameExpectation() { return "a tier name matching " + std::string(kTierNameRule); }

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

// Keeps the first error of a run of checks, so that each check is one line.
class Checks {
 public:
  void Int(const IntRule& rule, int64_t value) {
    if (!error_ && (value < rule.min || value > rule.max)) {
      error_ = Refusal(rule.key, IntExpectation(rule), Shown(value));
    }
  }
  void Fail(ConfigError error) {
    if (!error_) error_ = std::move(error);
  }
  bool failed() const { return error_.has_value(); }
  std::optional<ConfigError> Result() && { return std::move(error_); }

 private:
  std::optional<ConfigError> error_;
};

// ---- Reading JSON into the structs: types here, ranges in Validate() ----------------------

// Reads the keys of one JSON object into fields; keeps the first error. Range checks are
// Validate()'s, but an integer too large for its field is refused here with the same words.
class Reader {
 public:
  explicit Reader(const json& object) : object_(object) {}

  // Every key must be one of `known`; a key of `other` (the other kind of file's) is told
  // where it belongs, `other_place`.
  void OnlyKeys(std::span<const std::string_view> known, std::span<const std::string_view> other,
                std::string_view other_place) {
    for (const auto& [key, value] : object_.items()) {
      if (error_) return;
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string reason = "unknown key";
      if (std::find(other.begin(), other.end(), key) != other.end()) {
        reason += " here (it belongs in " + std::string(other_place) + ")";
      }
      error_ = ConfigError{"", key, reason};
    }
  }

  template <typename T>
  void Int(const IntRule& rule, T* out) {
    const json* value = Find(rule.key);
    if (value == nullptr) return;
    std::optional<int64_t> number = AsInt64(*value);
    if (!number || *number < std::numeric_limits<T>::min() ||
        *number > std::numeric_limits<T>::max()) {
      error_ = Refusal(rule.key, IntExpectation(rule), Shown(*value));
      return;
    }
    *out = static_cast<T>(*number);
  }

  void Number(std::string_view key, std::string_view expectation, double* out) {
    const json* value = Find(key);
    if (value == nullptr) return;
    if (!value->is_number()) {
      error_ = Refusal(key, expectation, Shown(*value));
      return;
    }
    *out = value->get<double>();
  }

  void String(std::string_view key, std::string_view expectation, std::string* out) {
    const json* value = Find(key);
    if (value == nullptr) return;
    if (!value->is_string()) {
      error_ = Refusal(key, expectation, Shown(*value));
      return;
    }
    *out = value->get<std::string>();
  }

  // true or false only: "yes", 1 and "true" are refused, since a safety switch read wrongly
  // is worse than one refused.
  void Bool(std::string_view key, bool* out) {
    const json* value = Find(key);
    if (value == nullptr) return;
    if (!value->is_boolean()) {
      error_ = Refusal(key, "true or false", Shown(*value));
      return;
    }
    *out = value->get<bool>();
  }

  // An array of strings; each entry's own rule is Validate()'s.
  void Strings(std::string_view key, std::string_view expectation, std::vector<std::string>* out) {
    const json* value = Find(key);
    if (value == nullptr) return;
    if (!value->is_array()) {
      error_ = Refusal(key, expectation, Shown(*value));
      return;
    }
    std::vector<std::string> strings;
    for (size_t i = 0; i < value->size(); ++i) {
      if (!(*value)[i].is_string()) {
        error_ = Refusal(Entry(key, i), "a string", Shown((*value)[i]));
        return;
      }
      strings.push_back((*value)[i].get<std::string>());
    }
    *out = std::move(strings);
  }

  // An array of integers; each entry's range is Validate()'s.
  void Ints(std::string_view key, std::string_view expectation, const IntRule& entry_rule,
            std::vector<int64_t>* out) {
    const json* value = Find(key);
    if (value == nullptr) return;
    if (!value->is_array()) {
      error_ = Refusal(key, expectation, Shown(*value));
      return;
    }
    std::vector<int64_t> numbers;
    for (size_t i = 0; i < value->size(); ++i) {
      std::optional<int64_t> number = AsInt64((*value)[i]);
      if (!number) {
        error_ = Refusal(Entry(key, i), IntExpectation(entry_rule), Shown((*value)[i]));
        return;
      }
      numbers.push_back(*number);
    }
    *out = std::move(numbers);
  }

  std::optional<ConfigError> Result() && { return std::move(error_); }

  static std::string Entry(std::string_view key, size_t index) {
    return std::string(key) + "[" + std::to_string(index) + "]";
  }

 private:
  const json* Find(std::string_view key) const {
    if (error_) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  // A JSON integer that fits int64_t. 5.0 and "5" are not integers.
  static std::optional<int64_t> AsInt64(const json& value) {
    if (value.is_number_unsigned()) {
      uint64_t number = value.get<uint64_t>();
      if (number > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(number);
    }
    if (value.is_number_integer()) return value.get<int64_t>();
    return std::nullopt;
  }

  const json& object_;
  std::optional<ConfigError> error_;
};

// Thrown by the parse callback on a repeated key; caught in ParseObject.
struct DuplicateKey {
  std::string key;
};

// std::strerror's words, without its static buffer.
std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

std::variant<std::string, ConfigError> ReadFile(const std::filesystem::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ConfigError{path.string(), "", "cannot read: " + ErrnoText(errno)};
  std::string text;
  char buffer[8192];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file)) > 0) text.append(buffer, got);
  int read_errno = std::ferror(file) ? errno : 0;
  std::fclose(file);
  if (read_errno != 0) {
    return ConfigError{path.string(), "", "cannot read: " + ErrnoText(read_errno)};
  }
  return text;
}

// The file's one JSON object. Repeated keys are refused: JSON parsers disagree on which wins.
std::variant<json, ConfigError> ParseObject(const std::filesystem::path& path) {
  auto text = ReadFile(path);
  if (auto* error = std::get_if<ConfigError>(&text)) return *error;
  std::vector<std::set<std::string>> open_objects;
  auto no_repeats = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end) open_objects.pop_back();
    if (event == json::parse_event_t::key &&
        !open_objects.back().insert(parsed.get<std::string>()).second) {
      throw DuplicateKey{parsed.get<std::string>()};
    }
    return true;
  };
  json object;
  try {
    object = json::parse(std::get<std::string>(text), no_repeats);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 3, column 1: …" without the tag.
    std::string what = e.what();
    size_t tag_end = what.find("] ");
    return ConfigError{
        path.string(), "",
        "invalid JSON: " + (tag_end == std::string::npos ? what : what.substr(tag_end + 2))};
  } catch (const json::out_of_range& e) {
    // A number past double's range ("lease_ms": 1e400) is a parse-time error of its own kind;
    // found by tests/fuzz/config_fuzz, which saw it end `bulkhead run` in std::terminate.
    std::string what = e.what();
    size_t tag_end = what.find("] ");
    return ConfigError{
        path.string(), "",
        "invalid JSON: " + (tag_end == std::string::npos ? what : what.substr(tag_end + 2))};
  } catch (const DuplicateKey& duplicate) {
    return ConfigError{path.string(), duplicate.key, "repeated key"};
  }
  if (!object.is_object()) {
    std::string type = object.type_name();
    std::string article = object.is_null()                        ? ""
                          : (type == "array" || type == "object") ? "an "
                                                                  : "a ";
    return ConfigError{path.string(), "", "must hold one JSON object, not " + article + type};
  }
  return object;
}

ConfigError InFile(ConfigError error, const std::filesystem::path& path) {
  error.file = path.string();
  return error;
}

constexpr std::string_view kShareExpectation = "a number above 0 and at most 1";
constexpr std::string_view kJitterExpectation = "a number from 0 to 1";
constexpr std::string_view kDelaysExpectation =
    "a non-empty array of at most 100 delays in milliseconds";
constexpr std::string_view kNodeExpectation = "a string of 1 to 200 characters";
constexpr std::string_view kTiersDirExpectation = "a non-empty string (a folder)";
constexpr std::string_view kListenExpectation = "\"host:port\" with a port from 1 to 65535";
constexpr std::string_view kNetworksExpectation =
    "an array of CIDR strings such as \"127.0.0.0/8\"";
constexpr std::string_view kTiersExpectation = "an array of tier names";

std::variant<TierOptions, ConfigError> ReadTier(const std::filesystem::path& path,
                                                const std::string& name) {
  auto parsed = ParseObject(path);
  if (auto* error = std::get_if<ConfigError>(&parsed)) return *error;
  const json& object = std::get<json>(parsed);
  TierOptions tier;
  tier.name = name;
  Reader read(object);
  read.OnlyKeys(kTierKeys, kNodeKeys, "the node's config file");
  read.Int(kWorkers, &tier.workers);
  read.Number("channel_share", kShareExpectation, &tier.channel_share);
  read.Number("tenant_share", kShareExpectation, &tier.tenant_share);
  read.Int(kFailureThreshold, &tier.failure_threshold);
  read.Int(kSlowCall, &tier.slow_call_ms);
  read.Int(kStalledAfter, &tier.stalled_after_ms);
  read.Int(kCooldown, &tier.cooldown_ms);
  read.Int(kCooldownMax, &tier.cooldown_max_ms);
  read.Int(kConnectTimeout, &tier.connect_timeout_ms);
  read.Int(kRequestTimeout, &tier.request_timeout_ms);
  read.Ints("retry_delays_ms", kDelaysExpectation, kRetryDelay, &tier.retry_delays_ms);
  read.Number("retry_jitter", kJitterExpectation, &tier.retry_jitter);
  read.Int(kRetryAfterMax, &tier.retry_after_max_ms);
  if (auto error = std::move(read).Result()) return InFile(*error, path);
  if (auto error = tier.Validate()) return InFile(*error, path);
  return tier;
}

}  // namespace

// ---- Public ----------------------------------------------------------------------------------

std::string ConfigError::Message() const {
  return key.empty() ? file + ": " + reason : file + ": " + key + ": " + reason;
}

std::vector<int64_t> DefaultRetryDelaysMs() {
  std::vector<int64_t> delays;
  for (auto delay : kDefaultRetryDelays) delays.push_back(delay.count());
  return delays;
}

std::optional<ConfigError> TierOptions::Validate() const {
  Checks check;
  if (!IsTierName(name)) {
    check.Fail({"", "",
                "the tier's name (its file name without .json) must match " +
                    std::string(kTierNameRule) + ", not " + Shown(name)});
  }
  check.Int(kWorkers, workers);
  if (!(channel_share > 0.0 && channel_share <= 1.0)) {
    check.Fail(Refusal("channel_share", kShareExpectation, Shown(channel_share)));
  }
  if (!(tenant_share > 0.0 && tenant_share <= 1.0)) {
    check.Fail(Refusal("tenant_share", kShareExpectation, Shown(tenant_share)));
  }
  check.Int(kFailureThreshold, failure_threshold);
  check.Int(kSlowCall, slow_call_ms);
  check.Int(kStalledAfter, stalled_after_ms);
  check.Int(kCooldown, cooldown_ms);
  check.Int(kCooldownMax, cooldown_max_ms);
  if (cooldown_max_ms < cooldown_ms) {
    check.Fail({"", "cooldown_max_ms",
                "must be at least cooldown_ms (" + std::to_string(cooldown_ms) + "), not " +
                    std::to_string(cooldown_max_ms)});
  }
  check.Int(kConnectTimeout, connect_timeout_ms);
  check.Int(kRequestTimeout, request_timeout_ms);
  if (request_timeout_ms < connect_timeout_ms) {
    check.Fail({"", "request_timeout_ms",
                "must be at least connect_timeout_ms (" + std::to_string(connect_timeout_ms) +
                    "), not " + std::to_string(request_timeout_ms)});
  }
  if (retry_delays_ms.empty()) check.Fail(Refusal("retry_delays_ms", kDelaysExpectation, "[]"));
  if (retry_delays_ms.size() > kMaxRetryDelays) {
    check.Fail(Refusal("retry_delays_ms", kDelaysExpectation,
                       "an array of " + std::to_string(retry_delays_ms.size())));
  }
  for (size_t i = 0; i < retry_delays_ms.size() && !check.failed(); ++i) {
    if (retry_delays_ms[i] < kRetryDelay.min || retry_delays_ms[i] > kRetryDelay.max) {
      check.Fail(Refusal(Reader::Entry("retry_delays_ms", i), IntExpectation(kRetryDelay),
                         Shown(retry_delays_ms[i])));
    }
  }
  if (!(retry_jitter >= 0.0 && retry_jitter <= 1.0)) {
    check.Fail(Refusal("retry_jitter", kJitterExpectation, Shown(retry_jitter)));
  }
  check.Int(kRetryAfterMax, retry_after_max_ms);
  return std::move(check).Result();
}

std::optional<ConfigError> NodeOptions::Validate() const {
  Checks check;
  if (node.empty() || Utf8Length(node) > kMaxNodeNameChars) {
    check.Fail(Refusal("node", kNodeExpectation,
                       node.empty() ? "\"\"" : "one of " + std::to_string(Utf8Length(node))));
  }
  if (tiers_dir.empty()) check.Fail(Refusal("tiers_dir", kTiersDirExpectation, "\"\""));
  if (!IsListenAddress(metrics_listen)) {
    check.Fail(Refusal("metrics_listen", kListenExpectation, Shown(metrics_listen)));
  }
  for (size_t i = 0; i < allowed_networks.size() && !check.failed(); ++i) {
    auto parsed = ParseCidr(allowed_networks[i]);  // network_guard.h: the one CIDR parser
    if (auto* problem = std::get_if<std::string>(&parsed)) {
      check.Fail({"", Reader::Entry("allowed_networks", i), *problem});
    }
  }
  for (size_t i = 0; i < tiers.size() && !check.failed(); ++i) {
    if (!IsTierName(tiers[i])) {
      check.Fail(Refusal(Reader::Entry("tiers", i), TierNameExpectation(), Shown(tiers[i])));
    } else if (std::find(tiers.begin(), tiers.begin() + i, tiers[i]) != tiers.begin() + i) {
      check.Fail({"", Reader::Entry("tiers", i), "names tier " + Shown(tiers[i]) + " again"});
    }
  }
  check.Int(kShutdownGrace, shutdown_grace_ms);
  check.Int(kPollInterval, poll_interval_ms);
  check.Int(kCompletionBatch, completion_batch_size);
  check.Int(kCompletionFlush, completion_flush_ms);
  check.Int(kLease, lease_ms);
  check.Int(kRetention, retention_ms);
  return std::move(check).Result();
}

std::string NodeOptions::DefaultNodeName() {
  char host[256] = {};  // HOST_NAME_MAX is 64 on Linux; the last byte stays NUL
  std::string name = gethostname(host, sizeof(host) - 1) == 0 ? host : "";
  return (name.empty() ? "bulkhead" : name) + "-" + std::to_string(getpid());
}

std::variant<std::vector<TierOptions>, ConfigError> LoadTiers(
    const std::filesystem::path& dir, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::filesystem::path>> files;  // name, path
  if (names.empty()) {
    std::error_code ec;
    std::filesystem::directory_iterator it(dir, ec);
    if (ec) return ConfigError{dir.string(), "", "cannot list tier files: " + ec.message()};
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
      const std::filesystem::path& path = it->path();
      if (path.extension() != ".json") continue;
      std::string name = path.stem().string();
      if (!IsTierName(name)) {
        return ConfigError{path.string(), "",
                           "is not a tier file: a tier's name is its file name without .json "
                           "and must match " +
                               std::string(kTierNameRule)};
      }
      files.emplace_back(name, path);
    }
    if (ec) return ConfigError{dir.string(), "", "cannot list tier files: " + ec.message()};
    if (files.empty()) {
      return ConfigError{dir.string(), "", "holds no tier files (<tier>.json): a node needs one"};
    }
  } else {
    for (const std::string& name : names) {
      if (!IsTierName(name)) {
        return ConfigError{
            dir.string(), "tiers",
            "must name tiers matching " + std::string(kTierNameRule) + ", not " + Shown(name)};
      }
      files.emplace_back(name, dir / (name + ".json"));
    }
  }
  std::vector<TierOptions> tiers;
  for (const auto& [name, path] : files) {
    auto tier = ReadTier(path, name);
    if (auto* error = std::get_if<ConfigError>(&tier)) return *error;
    tiers.push_back(std::move(std::get<TierOptions>(tier)));
  }
  std::sort(tiers.begin(), tiers.end(),
            [](const TierOptions& a, const TierOptions& b) { return a.name < b.name; });
  return tiers;
}

std::variant<Config, ConfigError> LoadConfig(const std::filesystem::path& file) {
  auto parsed = ParseObject(file);
  if (auto* error = std::get_if<ConfigError>(&parsed)) return *error;
  const json& object = std::get<json>(parsed);
  Config config;
  config.file = file;
  NodeOptions& node = config.node;
  Reader read(object);
  read.OnlyKeys(kNodeKeys, kTierKeys, "a tier file in tiers_dir");
  read.String("database", "a string (a libpq connection string or URL)", &node.database);
  read.String("node", kNodeExpectation, &node.node);
  read.String("tiers_dir", kTiersDirExpectation, &node.tiers_dir);
  read.String("metrics_listen", kListenExpectation, &node.metrics_listen);
  read.Strings("allowed_networks", kNetworksExpectation, &node.allowed_networks);
  read.Bool("tls_insecure_skip_verify", &node.tls_insecure_skip_verify);
  read.Strings("tiers", kTiersExpectation, &node.tiers);
  read.Int(kShutdownGrace, &node.shutdown_grace_ms);
  read.Int(kPollInterval, &node.poll_interval_ms);
  read.Int(kCompletionBatch, &node.completion_batch_size);
  read.Int(kCompletionFlush, &node.completion_flush_ms);
  read.Int(kLease, &node.lease_ms);
  read.Int(kRetention, &node.retention_ms);
  if (auto error = std::move(read).Result()) return InFile(*error, file);
  if (auto error = node.Validate()) return InFile(*error, file);

  std::filesystem::path dir = node.tiers_dir;
  if (dir.is_relative()) dir = file.parent_path() / dir;
  node.tiers_dir = dir.string();
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return ConfigError{
        file.string(), "tiers_dir",
        Quoted(dir) + " is not a folder" + (ec ? ": " + ec.message() : std::string())};
  }
  for (const std::string& name : node.tiers) {
    if (!std::filesystem::exists(dir / (name + ".json"), ec)) {
      return ConfigError{
          file.string(), "tiers",
          "names tier " + Shown(name) + ", but " + Quoted(dir) + " has no " + name + ".json"};
    }
  }
  auto tiers = LoadTiers(dir, node.tiers);
  if (auto* error = std::get_if<ConfigError>(&tiers)) return *error;
  config.tiers = std::move(std::get<std::vector<TierOptions>>(tiers));
  return config;
}

}  // namespace bulkhead
