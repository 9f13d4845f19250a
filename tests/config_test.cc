// Configuration: defaults, the shipped tier files, which tiers a node serves, and every way a
// config or tier file is refused — each with its file, key and reason.
#include "config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace bulkhead {
namespace {

namespace fs = std::filesystem;

const std::vector<int64_t> kDefaultDelays = {5000,     300000,   1800000, 7200000,
                                             18000000, 36000000, 36000000};

// Each test gets a fresh folder, removed afterwards; tier files go to <folder>/tiers.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/bulkhead-config-XXXXXX";
    ASSERT_NE(mkdtemp(path), nullptr);
    dir_ = path;
    fs::create_directory(dir_ / "tiers");
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path Write(const fs::path& relative, const std::string& text) {
    fs::path path = dir_ / relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // A node config `node_json` beside tiers/default.json holding `tier_json`.
  std::variant<Config, ConfigError> Load(const std::string& node_json,
                                         const std::string& tier_json = "{}") {
    Write("tiers/default.json", tier_json);
    return LoadConfig(Write("node.json", node_json));
  }

  fs::path config_file() const { return dir_ / "node.json"; }
  fs::path tier_file(const std::string& name = "default") const {
    return dir_ / "tiers" / (name + ".json");
  }

  fs::path dir_;
};

// The refusal in `result`; fails the test when the config loaded.
template <typename T>
ConfigError Refused(const std::variant<T, ConfigError>& result) {
  if (const auto* error = std::get_if<ConfigError>(&result)) return *error;
  ADD_FAILURE() << "the configuration loaded, but should have been refused";
  return {};
}

template <typename T>
void ExpectRefused(const std::variant<T, ConfigError>& result, const fs::path& file,
                   const std::string& key, const std::string& reason) {
  ConfigError error = Refused(result);
  EXPECT_EQ(error.file, file.string());
  EXPECT_EQ(error.key, key);
  EXPECT_EQ(error.reason, reason);
}

Config Loaded(const std::variant<Config, ConfigError>& result) {
  if (const auto* error = std::get_if<ConfigError>(&result)) {
    ADD_FAILURE() << "refused: " << error->Message();
    return {};
  }
  return std::get<Config>(result);
}

std::string Quoted(const std::string& text) { return nlohmann::json(text).dump(); }

// ---- Loading -------------------------------------------------------------------------------

TEST_F(ConfigTest, UsesEveryDefaultWhenKeysAreAbsent) {
  const Config config = Loaded(Load("{}", "{}"));
  EXPECT_EQ(config.file, config_file());

  const NodeOptions& node = config.node;
  EXPECT_EQ(node.database, "");
  EXPECT_EQ(node.node, NodeOptions::DefaultNodeName());
  EXPECT_EQ(node.tiers_dir, (dir_ / "tiers").string());
  EXPECT_EQ(node.metrics_listen, "127.0.0.1:9464");
  EXPECT_TRUE(node.allowed_networks.empty());
  EXPECT_FALSE(node.tls_insecure_skip_verify);
  EXPECT_TRUE(node.tiers.empty());
  EXPECT_EQ(node.shutdown_grace_ms, 10000);
  EXPECT_EQ(node.poll_interval_ms, 1000);
  EXPECT_EQ(node.completion_batch_size, 500);
  EXPECT_EQ(node.completion_flush_ms, 5);
  EXPECT_EQ(node.lease_ms, 15000);
  EXPECT_EQ(node.retention_ms, 604800000);

  ASSERT_EQ(config.tiers.size(), 1u);
  const TierOptions& tier = config.tiers[0];
  EXPECT_EQ(tier.name, "default");
  EXPECT_EQ(tier.workers, 200);
  EXPECT_EQ(tier.channel_share, 0.5);
  EXPECT_EQ(tier.tenant_share, 0.5);
  EXPECT_EQ(tier.reserve_share, 0.1);
  EXPECT_EQ(tier.failure_threshold, 5);
  EXPECT_EQ(tier.slow_call_ms, 2000);
  EXPECT_EQ(tier.stalled_after_ms, 500);
  EXPECT_EQ(tier.cooldown_ms, 30000);
  EXPECT_EQ(tier.cooldown_max_ms, 600000);
  EXPECT_EQ(tier.connect_timeout_ms, 3000);
  EXPECT_EQ(tier.request_timeout_ms, 10000);
  EXPECT_EQ(tier.retry_delays_ms, kDefaultDelays);
  EXPECT_EQ(tier.retry_jitter, 0.1);
  EXPECT_EQ(tier.retry_after_max_ms, 3600000);
}

TEST_F(ConfigTest, DefaultNodeNameIsTheHostNameAndPid) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(NodeOptions::DefaultNodeName(), std::string(host) + "-" + std::to_string(getpid()));
}

TEST_F(ConfigTest, ReadsEveryNodeKey) {
  Write("elsewhere/gold.json", "{}");
  Write("elsewhere/silver.json", "{}");
  const Config config = Loaded(LoadConfig(Write("node.json", R"({
    "database": "postgresql://app@db/bulkhead",
    "node": "worker-a",
    "tiers_dir": "elsewhere",
    "metrics_listen": "[::1]:9100",
    "allowed_networks": ["127.0.0.0/8", "fd00::/8"],
    "tls_insecure_skip_verify": true,
    "tiers": ["silver"],
    "shutdown_grace_ms": 0,
    "poll_interval_ms": 250,
    "completion_batch_size": 10000,
    "completion_flush_ms": 1000
  })")));
  const NodeOptions& node = config.node;
  EXPECT_EQ(node.database, "postgresql://app@db/bulkhead");
  EXPECT_EQ(node.node, "worker-a");
  EXPECT_EQ(node.tiers_dir, (dir_ / "elsewhere").string());
  EXPECT_EQ(node.metrics_listen, "[::1]:9100");
  EXPECT_EQ(node.allowed_networks, (std::vector<std::string>{"127.0.0.0/8", "fd00::/8"}));
  EXPECT_TRUE(node.tls_insecure_skip_verify);
  EXPECT_EQ(node.tiers, std::vector<std::string>{"silver"});
  EXPECT_EQ(node.shutdown_grace_ms, 0);
  EXPECT_EQ(node.poll_interval_ms, 250);
  EXPECT_EQ(node.completion_batch_size, 10000);
  EXPECT_EQ(node.completion_flush_ms, 1000);
  ASSERT_EQ(config.tiers.size(), 1u);
  EXPECT_EQ(config.tiers[0].name, "silver");
}

TEST_F(ConfigTest, ReadsEveryTierKey) {
  const Config config = Loaded(Load("{}", R"({
    "workers": 10000,
    "channel_share": 1,
    "tenant_share": 0.25,
    "failure_threshold": 1000,
    "slow_call_ms": 3600000,
    "stalled_after_ms": 3600000,
    "cooldown_ms": 1000,
    "cooldown_max_ms": 86400000,
    "connect_timeout_ms": 600000,
    "request_timeout_ms": 600000,
    "retry_delays_ms": [1, 604800000],
    "retry_jitter": 0
  })"));
  ASSERT_EQ(config.tiers.size(), 1u);
  const TierOptions& tier = config.tiers[0];
  EXPECT_EQ(tier.workers, 10000);
  EXPECT_EQ(tier.channel_share, 1.0);
  EXPECT_EQ(tier.tenant_share, 0.25);
  EXPECT_EQ(tier.failure_threshold, 1000);
  EXPECT_EQ(tier.slow_call_ms, 3600000);
  EXPECT_EQ(tier.stalled_after_ms, 3600000);
  EXPECT_EQ(tier.cooldown_ms, 1000);
  EXPECT_EQ(tier.cooldown_max_ms, 86400000);
  EXPECT_EQ(tier.connect_timeout_ms, 600000);
  EXPECT_EQ(tier.request_timeout_ms, 600000);
  EXPECT_EQ(tier.retry_delays_ms, (std::vector<int64_t>{1, 604800000}));
  EXPECT_EQ(tier.retry_jitter, 0.0);
}

// tiers/ beside tests/, found from this source file: no build-time path needed.
TEST(ShippedTiers, LoadWithTwoHundredDefaultAndFiveBulkWorkersAndSpellOutEveryKey) {
  const fs::path dir = fs::path(__FILE__).parent_path().parent_path() / "tiers";
  auto result = LoadTiers(dir, {});
  ASSERT_TRUE(std::holds_alternative<std::vector<TierOptions>>(result))
      << std::get<ConfigError>(result).Message();
  const auto& tiers = std::get<std::vector<TierOptions>>(result);
  ASSERT_EQ(tiers.size(), 2u);
  EXPECT_EQ(tiers[0].name, "bulk");
  EXPECT_EQ(tiers[0].workers, 5);
  EXPECT_EQ(tiers[1].name, "default");
  EXPECT_EQ(tiers[1].workers, 200);
  for (const TierOptions& tier : tiers) {
    SCOPED_TRACE(tier.name);
    EXPECT_EQ(tier.channel_share, 0.5);
    EXPECT_EQ(tier.tenant_share, 0.5);
    EXPECT_EQ(tier.failure_threshold, 5);
    EXPECT_EQ(tier.slow_call_ms, 2000);
    EXPECT_EQ(tier.stalled_after_ms, 500);
    EXPECT_EQ(tier.cooldown_ms, 30000);
    EXPECT_EQ(tier.cooldown_max_ms, 600000);
    EXPECT_EQ(tier.connect_timeout_ms, 3000);
    EXPECT_EQ(tier.request_timeout_ms, 10000);
    EXPECT_EQ(tier.retry_delays_ms, kDefaultDelays);
    EXPECT_EQ(tier.retry_jitter, 0.1);
    EXPECT_EQ(tier.retry_after_max_ms, 3600000);

    std::ifstream in(dir / (tier.name + ".json"));
    std::set<std::string> keys;
    const nlohmann::json file = nlohmann::json::parse(in);
    for (const auto& [key, value] : file.items()) keys.insert(key);
    EXPECT_EQ(keys, (std::set<std::string>{
                        "workers", "channel_share", "tenant_share", "reserve_share",
                        "failure_threshold", "slow_call_ms", "stalled_after_ms", "cooldown_ms",
                        "cooldown_max_ms", "connect_timeout_ms", "request_timeout_ms",
                        "retry_delays_ms", "retry_jitter", "retry_after_max_ms"}));
  }
}

TEST_F(ConfigTest, ResolvesARelativeTiersDirAgainstTheConfigFilesFolder) {
  Write("shared/tiers/default.json", R"({"workers": 7})");
  fs::path file = Write("etc/bulkhead/node.json", R"({"tiers_dir": "../../shared/tiers"})");
  const Config config = Loaded(LoadConfig(file));
  EXPECT_EQ(config.node.tiers_dir, (dir_ / "etc/bulkhead/../../shared/tiers").string());
  ASSERT_EQ(config.tiers.size(), 1u);
  EXPECT_EQ(config.tiers[0].workers, 7);
}

TEST_F(ConfigTest, TakesAnAbsoluteTiersDirAsItIs) {
  Write("abs/default.json", R"({"workers": 3})");
  fs::path file =
      Write("etc/node.json", "{\"tiers_dir\": " + Quoted((dir_ / "abs").string()) + "}");
  const Config config = Loaded(LoadConfig(file));
  EXPECT_EQ(config.node.tiers_dir, (dir_ / "abs").string());
  ASSERT_EQ(config.tiers.size(), 1u);
  EXPECT_EQ(config.tiers[0].workers, 3);
}

TEST_F(ConfigTest, ServesEveryTierFileSortedByNameWhenTiersIsAbsentOrEmpty) {
  Write("tiers/gold.json", R"({"workers": 40})");
  Write("tiers/bulk.json", R"({"workers": 5})");
  Write("tiers/README.md", "not a tier");
  Write("tiers/default.json.bak", "{not json");
  for (const char* node_json : {"{}", R"({"tiers": []})"}) {
    SCOPED_TRACE(node_json);
    const Config config = Loaded(Load(node_json));
    ASSERT_EQ(config.tiers.size(), 3u);
    EXPECT_EQ(config.tiers[0].name, "bulk");
    EXPECT_EQ(config.tiers[0].workers, 5);
    EXPECT_EQ(config.tiers[1].name, "default");
    EXPECT_EQ(config.tiers[1].workers, 200);
    EXPECT_EQ(config.tiers[2].name, "gold");
    EXPECT_EQ(config.tiers[2].workers, 40);
  }
}

TEST_F(ConfigTest, ServesOnlyTheNamedTiersAndReadsNoOtherFile) {
  Write("tiers/gold.json", R"({"workers": 40})");
  Write("tiers/broken.json", "{not json");
  Write("tiers/Not_A_Tier.json", "{}");
  const Config config = Loaded(Load(R"({"tiers": ["gold", "default"]})"));
  ASSERT_EQ(config.tiers.size(), 2u);
  EXPECT_EQ(config.tiers[0].name, "default");
  EXPECT_EQ(config.tiers[1].name, "gold");
  EXPECT_EQ(config.node.tiers, (std::vector<std::string>{"gold", "default"}));
}

TEST_F(ConfigTest, LoadTiersReadsTheNamedTiersOfAFolder) {
  Write("tiers/gold.json", R"({"workers": 40})");
  Write("tiers/default.json", "{}");
  auto result = LoadTiers(dir_ / "tiers", {"gold"});
  ASSERT_TRUE(std::holds_alternative<std::vector<TierOptions>>(result))
      << std::get<ConfigError>(result).Message();
  const auto& tiers = std::get<std::vector<TierOptions>>(result);
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].name, "gold");
  EXPECT_EQ(tiers[0].workers, 40);
  ExpectRefused(LoadTiers(dir_ / "tiers", {"silver"}), tier_file("silver"), "",
                "cannot read: No such file or directory");
}

TEST_F(ConfigTest, AcceptsEveryValueAtTheEdgesOfItsRange) {
  const Config config = Loaded(Load(
      R"({"node": "n", "shutdown_grace_ms": 600000, "poll_interval_ms": 10,
          "completion_batch_size": 1, "completion_flush_ms": 1,
          "metrics_listen": "metrics.internal:65535",
          "allowed_networks": ["0.0.0.0/0", "::/0", "10.1.2.3/32", "::1/128"]})",
      R"({"workers": 1, "channel_share": 0.001, "failure_threshold": 1, "slow_call_ms": 1,
          "cooldown_ms": 86400000, "cooldown_max_ms": 86400000,
          "connect_timeout_ms": 1, "request_timeout_ms": 3600000, "retry_jitter": 1})"));
  EXPECT_EQ(config.node.node, "n");
  ASSERT_EQ(config.tiers.size(), 1u);
  EXPECT_EQ(config.tiers[0].request_timeout_ms, 3600000);
}

TEST_F(ConfigTest, CountsTheNodeNameInCharactersNotBytes) {
  std::string two_hundred;
  for (int i = 0; i < 200; ++i) two_hundred += "\xC3\xA9";  // é: 2 bytes, 1 character
  EXPECT_EQ(Loaded(Load("{\"node\": " + Quoted(two_hundred) + "}")).node.node, two_hundred);
  ExpectRefused(Load("{\"node\": " + Quoted(two_hundred + "e") + "}"), config_file(), "node",
                "must be a string of 1 to 200 characters, not one of 201");
}

// ---- Refusals: unknown keys, files, JSON ------------------------------------------------

TEST_F(ConfigTest, RefusesAnUnknownKeyInTheNodeConfig) {
  ExpectRefused(Load(R"({"node": "a", "metrics_listn": "0.0.0.0:9464"})"), config_file(),
                "metrics_listn", "unknown key");
}

TEST_F(ConfigTest, RefusesATierKeyInTheNodeConfigAndSaysWhereItBelongs) {
  ExpectRefused(Load(R"({"workers": 50})"), config_file(), "workers",
                "unknown key here (it belongs in a tier file in tiers_dir)");
}

TEST_F(ConfigTest, RefusesAnUnknownKeyInATierFile) {
  ExpectRefused(Load("{}", R"({"workers": 20, "max_attempts": 8})"), tier_file(), "max_attempts",
                "unknown key");
}

// Regression (tier_fuzz, input {"wo_aay36\na3yy_jier": 0}): an unknown key with a newline in
// its name made the refusal two lines. It is shown escaped and quoted instead.
TEST_F(ConfigTest, ShowsAnUnknownKeyWithAControlCharacterEscapedOnOneLine) {
  ExpectRefused(Load("{}", R"({"wo\nrkers": 0})"), tier_file(), R"("wo\nrkers")", "unknown key");
  ExpectRefused(Load(R"({"no\u0007de": "a"})"), config_file(), R"("no\u0007de")", "unknown key");
}

TEST_F(ConfigTest, RefusesANodeKeyInATierFileAndSaysWhereItBelongs) {
  ExpectRefused(Load("{}", R"({"tiers_dir": "x"})"), tier_file(), "tiers_dir",
                "unknown key here (it belongs in the node's config file)");
}

TEST_F(ConfigTest, RefusesARepeatedKey) {
  ExpectRefused(Load(R"({"node": "a", "node": "b"})"), config_file(), "node", "repeated key");
  ExpectRefused(Load("{}", R"({"workers": 1, "workers": 2})"), tier_file(), "workers",
                "repeated key");
}

// Regression (tier_fuzz in CI, a repeated key
// "retryr5t{eworkersay3/128y36\nwo_aawrkostalled_after_ms"): the repeated-key refusal showed the
// key raw, so a newline in it made the refusal two lines. It is shown as an unknown key is: escaped
// and quoted.
TEST_F(ConfigTest, ShowsARepeatedKeyWithAControlCharacterEscapedOnOneLine) {
  ExpectRefused(Load("{}", R"({"wo\nrkers": 1, "wo\nrkers": 2})"), tier_file(), R"("wo\nrkers")",
                "repeated key");
  ExpectRefused(Load(R"({"no\u0007de": "a", "no\u0007de": "b"})"), config_file(), R"("no\u0007de")",
                "repeated key");
}

TEST_F(ConfigTest, RefusesAMissingConfigFile) {
  ExpectRefused(LoadConfig(dir_ / "absent.json"), dir_ / "absent.json", "",
                "cannot read: No such file or directory");
}

TEST_F(ConfigTest, RefusesAFolderAsTheConfigFile) {
  ExpectRefused(LoadConfig(dir_ / "tiers"), dir_ / "tiers", "", "cannot read: Is a directory");
}

TEST_F(ConfigTest, RefusesInvalidJsonWithItsPosition) {
  ConfigError node = Refused(Load("{\n  \"node\": \"a\",\n}\n"));
  EXPECT_EQ(node.file, config_file().string());
  EXPECT_EQ(node.key, "");
  EXPECT_EQ(node.reason.rfind("invalid JSON: parse error at line 3, column 1: ", 0), 0u)
      << node.reason;

  ConfigError tier = Refused(Load("{}", "{\"workers\": 20\n\"channel_share\": 0.5}"));
  EXPECT_EQ(tier.file, tier_file().string());
  EXPECT_EQ(tier.reason.rfind("invalid JSON: parse error at line 2, column 15: ", 0), 0u)
      << tier.reason;

  ConfigError empty = Refused(Load(""));
  EXPECT_EQ(empty.reason.rfind("invalid JSON: parse error at line 1, column 1: ", 0), 0u)
      << empty.reason;
}

// Found by tests/fuzz/config_fuzz: a number past double's range threw out of the parser and
// ended `bulkhead run` in std::terminate instead of a refusal.
TEST_F(ConfigTest, RefusesANumberPastDoublesRangeAsInvalidJson) {
  ConfigError node = Refused(Load("{\"lease_ms\": 1e400}"));
  EXPECT_EQ(node.file, config_file().string());
  EXPECT_EQ(node.reason, "invalid JSON: number overflow parsing '1e400'");

  ConfigError tier = Refused(Load("{}", "{\"retry_delays_ms\": [5000, -1e999]}"));
  EXPECT_EQ(tier.file, tier_file().string());
  EXPECT_EQ(tier.reason, "invalid JSON: number overflow parsing '-1e999'");
}

TEST_F(ConfigTest, RefusesATopLevelThatIsNotAnObject) {
  const std::vector<std::pair<std::string, std::string>> cases = {{"[]", "an array"},
                                                                  {"5", "a number"},
                                                                  {"\"a\"", "a string"},
                                                                  {"true", "a boolean"},
                                                                  {"null", "null"}};
  for (const auto& [text, kind] : cases) {
    ExpectRefused(Load(text), config_file(), "", "must hold one JSON object, not " + kind);
  }
  ExpectRefused(Load("{}", "[{}]"), tier_file(), "", "must hold one JSON object, not an array");
}

// ---- Refusals: tiers ------------------------------------------------------------------------

TEST_F(ConfigTest, RefusesATierFileNotNamedLikeATier) {
  for (const char* name : {"Gold", "2fast", "my-tier", "_x"}) {
    SCOPED_TRACE(name);
    fs::path bad = Write(std::string("tiers/") + name + ".json", "{}");
    ExpectRefused(Load("{}"), bad, "",
                  "is not a tier file: a tier's name is its file name without .json and must "
                  "match ^[a-z][a-z0-9_]{0,62}$");
    fs::remove(bad);
  }
  fs::path long_name = Write("tiers/" + std::string(64, 'a') + ".json", "{}");
  EXPECT_EQ(Refused(Load("{}")).file, long_name.string());
}

TEST_F(ConfigTest, RefusesANamedTierWithoutAFile) {
  ExpectRefused(
      Load(R"({"tiers": ["default", "gold"]})"), config_file(), "tiers",
      "names tier \"gold\", but " + Quoted((dir_ / "tiers").string()) + " has no gold.json");
}

TEST_F(ConfigTest, RefusesABadOrRepeatedTierName) {
  ExpectRefused(Load(R"({"tiers": ["default", "Gold"]})"), config_file(), "tiers[1]",
                "must be a tier name matching ^[a-z][a-z0-9_]{0,62}$, not \"Gold\"");
  ExpectRefused(Load(R"({"tiers": ["default", "default"]})"), config_file(), "tiers[1]",
                "names tier \"default\" again");
}

TEST_F(ConfigTest, RefusesATiersDirWithoutTierFiles) {
  Write("empty/notes.txt", "no tiers here");
  ExpectRefused(LoadConfig(Write("node.json", R"({"tiers_dir": "empty"})")), dir_ / "empty", "",
                "holds no tier files (<tier>.json): a node needs one");
}

TEST_F(ConfigTest, RefusesATiersDirThatIsNotAFolder) {
  ExpectRefused(LoadConfig(Write("node.json", R"({"tiers_dir": "absent"})")), config_file(),
                "tiers_dir",
                Quoted((dir_ / "absent").string()) + " is not a folder: No such file or directory");
  Write("a_file", "");
  ExpectRefused(LoadConfig(Write("node.json", R"({"tiers_dir": "a_file"})")), config_file(),
                "tiers_dir", Quoted((dir_ / "a_file").string()) + " is not a folder");
  ExpectRefused(LoadConfig(Write("node.json", R"({"tiers_dir": ""})")), config_file(), "tiers_dir",
                "must be a non-empty string (a folder), not \"\"");
}

// ---- Refusals: types and ranges -------------------------------------------------------------

struct BadValue {
  std::string json;    // the file's text
  std::string key;     // the key named in the refusal
  std::string reason;  // the exact reason
};

void PrintTo(const BadValue& bad, std::ostream* out) { *out << bad.json; }

class BadNodeValue : public ConfigTest, public ::testing::WithParamInterface<BadValue> {};
class BadTierValue : public ConfigTest, public ::testing::WithParamInterface<BadValue> {};

TEST_P(BadNodeValue, IsRefusedWithTheKeyAndTheReason) {
  ExpectRefused(Load(GetParam().json), config_file(), GetParam().key, GetParam().reason);
}

TEST_P(BadTierValue, IsRefusedWithTheKeyAndTheReason) {
  ExpectRefused(Load("{}", GetParam().json), tier_file(), GetParam().key, GetParam().reason);
}

INSTANTIATE_TEST_SUITE_P(
    WrongTypes, BadNodeValue,
    ::testing::Values(
        BadValue{R"({"database": 5})", "database",
                 "must be a string (a libpq connection string or URL), not 5"},
        BadValue{R"({"node": 5})", "node", "must be a string of 1 to 200 characters, not 5"},
        BadValue{R"({"tiers_dir": ["tiers"]})", "tiers_dir",
                 R"(must be a non-empty string (a folder), not ["tiers"])"},
        BadValue{R"({"metrics_listen": 9464})", "metrics_listen",
                 R"(must be "host:port" with a port from 1 to 65535, not 9464)"},
        BadValue{R"({"allowed_networks": "127.0.0.0/8"})", "allowed_networks",
                 R"(must be an array of CIDR strings such as "127.0.0.0/8", not "127.0.0.0/8")"},
        BadValue{R"({"allowed_networks": ["127.0.0.0/8", 7]})", "allowed_networks[1]",
                 "must be a string, not 7"},
        BadValue{R"({"tls_insecure_skip_verify": "true"})", "tls_insecure_skip_verify",
                 R"(must be true or false, not "true")"},
        BadValue{R"({"tls_insecure_skip_verify": 1})", "tls_insecure_skip_verify",
                 "must be true or false, not 1"},
        BadValue{R"({"tiers": "default"})", "tiers",
                 R"(must be an array of tier names, not "default")"},
        BadValue{R"({"tiers": [null]})", "tiers[0]", "must be a string, not null"},
        BadValue{R"({"shutdown_grace_ms": "10s"})", "shutdown_grace_ms",
                 R"(must be an integer from 0 to 600000, not "10s")"},
        BadValue{R"({"poll_interval_ms": 1.5})", "poll_interval_ms",
                 "must be an integer from 10 to 60000, not 1.5"},
        BadValue{R"({"completion_batch_size": true})", "completion_batch_size",
                 "must be an integer from 1 to 10000, not true"},
        BadValue{R"({"completion_flush_ms": {"ms": 5}})", "completion_flush_ms",
                 R"(must be an integer from 1 to 1000, not {"ms":5})"}));

INSTANTIATE_TEST_SUITE_P(
    Ranges, BadNodeValue,
    ::testing::Values(
        BadValue{R"({"node": ""})", "node", R"(must be a string of 1 to 200 characters, not "")"},
        BadValue{R"({"shutdown_grace_ms": -1})", "shutdown_grace_ms",
                 "must be an integer from 0 to 600000, not -1"},
        BadValue{R"({"shutdown_grace_ms": 600001})", "shutdown_grace_ms",
                 "must be an integer from 0 to 600000, not 600001"},
        BadValue{R"({"poll_interval_ms": 9})", "poll_interval_ms",
                 "must be an integer from 10 to 60000, not 9"},
        BadValue{R"({"poll_interval_ms": 60001})", "poll_interval_ms",
                 "must be an integer from 10 to 60000, not 60001"},
        BadValue{R"({"completion_batch_size": 0})", "completion_batch_size",
                 "must be an integer from 1 to 10000, not 0"},
        BadValue{R"({"completion_batch_size": 10001})", "completion_batch_size",
                 "must be an integer from 1 to 10000, not 10001"},
        // Too large for the field's int: refused, not wrapped round into range.
        BadValue{R"({"completion_batch_size": 4294967796})", "completion_batch_size",
                 "must be an integer from 1 to 10000, not 4294967796"},
        BadValue{R"({"lease_ms": 2999})", "lease_ms",
                 "must be an integer from 3000 to 600000, not 2999"},
        BadValue{R"({"retention_ms": 59999})", "retention_ms",
                 "must be an integer from 60000 to 31536000000, not 59999"},
        BadValue{R"({"completion_flush_ms": 0})", "completion_flush_ms",
                 "must be an integer from 1 to 1000, not 0"},
        BadValue{R"({"completion_flush_ms": 1001})", "completion_flush_ms",
                 "must be an integer from 1 to 1000, not 1001"},
        BadValue{R"({"completion_flush_ms": 18446744073709551615})", "completion_flush_ms",
                 "must be an integer from 1 to 1000, not 18446744073709551615"}));

INSTANTIATE_TEST_SUITE_P(MetricsListen, BadNodeValue, ::testing::ValuesIn([] {
                           std::vector<BadValue> cases;
                           for (const char* listen :
                                {"localhost", ":9464", "localhost:0", "localhost:65536",
                                 "localhost:http", "localhost:", "::1:9464", "[::1]",
                                 "[::1]:", "[nope]:9464", "my host:9464", "", "127.0.0.1:+80"}) {
                             cases.push_back(
                                 {"{\"metrics_listen\": " + Quoted(listen) + "}", "metrics_listen",
                                  "must be \"host:port\" with a port from 1 to 65535, not " +
                                      Quoted(listen)});
                           }
                           return cases;
                         }()));

INSTANTIATE_TEST_SUITE_P(
    AllowedNetworks, BadNodeValue, ::testing::ValuesIn([] {
      const std::string v4 = "an IPv4 or IPv6 network such as \"10.0.0.0/8\" or \"fd00::/8\"";
      std::vector<std::tuple<std::string, std::string>> cidrs = {
          {"10.0.0.0", "must be " + v4 + ", not \"10.0.0.0\" (no /prefix length)"},
          {"10.0.0/8", "must be " + v4 + ", not \"10.0.0/8\""},
          {"300.0.0.0/8", "must be " + v4 + ", not \"300.0.0.0/8\""},
          {"localhost/8", "must be " + v4 + ", not \"localhost/8\""},
          {"fd00:::1/8", "must be " + v4 + ", not \"fd00:::1/8\""},
          {"/8", "must be " + v4 + ", not \"/8\""},
          {"10.0.0.0/33", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/33\""},
          {"10.0.0.0/", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/\""},
          {"10.0.0.0/-1", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/-1\""},
          {"10.0.0.0/8/8", "must have a prefix length from 0 to 32 for IPv4, not \"10.0.0.0/8/8\""},
          {"::/129", "must have a prefix length from 0 to 128 for IPv6, not \"::/129\""},
          {"127.0.0.1/8",
           "has bits set past its /8 prefix: the network is \"127.0.0.0/8\", not \"127.0.0.1/8\""},
          {"192.168.1.77/20",
           "has bits set past its /20 prefix: the network is "
           "\"192.168.0.0/20\", not \"192.168.1.77/20\""},
          {"fd00::1/8",
           "has bits set past its /8 prefix: the network is \"fd00::/8\", not \"fd00::1/8\""},
      };
      std::vector<BadValue> cases;
      for (const auto& [cidr, reason] : cidrs) {
        cases.push_back({"{\"allowed_networks\": [\"::1/128\", " + Quoted(cidr) + "]}",
                         "allowed_networks[1]", reason});
      }
      return cases;
    }()));

INSTANTIATE_TEST_SUITE_P(
    WrongTypes, BadTierValue,
    ::testing::Values(
        BadValue{R"({"workers": "20"})", "workers",
                 R"(must be an integer from 1 to 10000, not "20")"},
        BadValue{R"({"workers": 20.0})", "workers", "must be an integer from 1 to 10000, not 20.0"},
        BadValue{R"({"channel_share": "half"})", "channel_share",
                 R"(must be a number above 0 and at most 1, not "half")"},
        BadValue{R"({"failure_threshold": null})", "failure_threshold",
                 "must be an integer from 1 to 1000, not null"},
        BadValue{R"({"cooldown_ms": "30s"})", "cooldown_ms",
                 R"(must be an integer from 1000 to 86400000, not "30s")"},
        BadValue{R"({"connect_timeout_ms": false})", "connect_timeout_ms",
                 "must be an integer from 1 to 600000, not false"},
        BadValue{R"({"request_timeout_ms": [10000]})", "request_timeout_ms",
                 "must be an integer from 1 to 3600000, not [10000]"},
        BadValue{R"({"retry_delays_ms": 5000})", "retry_delays_ms",
                 "must be a non-empty array of at most 100 delays in milliseconds, not 5000"},
        BadValue{R"({"retry_delays_ms": [5000, "5m"]})", "retry_delays_ms[1]",
                 R"(must be an integer from 1 to 604800000, not "5m")"},
        BadValue{R"({"retry_jitter": "10%"})", "retry_jitter",
                 R"(must be a number from 0 to 1, not "10%")"},
        BadValue{R"({"retry_after_max_ms": "1h"})", "retry_after_max_ms",
                 R"(must be an integer from 0 to 604800000, not "1h")"}));

INSTANTIATE_TEST_SUITE_P(
    Ranges, BadTierValue,
    ::testing::Values(
        BadValue{R"({"workers": 0})", "workers", "must be an integer from 1 to 10000, not 0"},
        BadValue{R"({"workers": 10001})", "workers",
                 "must be an integer from 1 to 10000, not 10001"},
        BadValue{R"({"workers": 10000000000})", "workers",
                 "must be an integer from 1 to 10000, not 10000000000"},
        BadValue{R"({"channel_share": 0})", "channel_share",
                 "must be a number above 0 and at most 1, not 0.0"},
        BadValue{R"({"channel_share": 1.01})", "channel_share",
                 "must be a number above 0 and at most 1, not 1.01"},
        BadValue{R"({"tenant_share": 0})", "tenant_share",
                 "must be a number above 0 and at most 1, not 0.0"},
        BadValue{R"({"reserve_share": 0})", "reserve_share",
                 "must be a number above 0 and at most 1, not 0.0"},
        BadValue{R"({"reserve_share": 2})", "reserve_share",
                 "must be a number above 0 and at most 1, not 2.0"},
        BadValue{R"({"failure_threshold": 0})", "failure_threshold",
                 "must be an integer from 1 to 1000, not 0"},
        BadValue{R"({"failure_threshold": 1001})", "failure_threshold",
                 "must be an integer from 1 to 1000, not 1001"},
        BadValue{R"({"cooldown_ms": 999})", "cooldown_ms",
                 "must be an integer from 1000 to 86400000, not 999"},
        BadValue{R"({"cooldown_ms": 86400001})", "cooldown_ms",
                 "must be an integer from 1000 to 86400000, not 86400001"},
        BadValue{R"({"stalled_after_ms": 0})", "stalled_after_ms",
                 "must be an integer from 1 to 3600000, not 0"},
        BadValue{R"({"slow_call_ms": 0})", "slow_call_ms",
                 "must be an integer from 1 to 3600000, not 0"},
        BadValue{R"({"cooldown_max_ms": 999})", "cooldown_max_ms",
                 "must be an integer from 1000 to 86400000, not 999"},
        BadValue{R"({"cooldown_ms": 60000, "cooldown_max_ms": 30000})", "cooldown_max_ms",
                 "must be at least cooldown_ms (60000), not 30000"},
        BadValue{R"({"connect_timeout_ms": 0})", "connect_timeout_ms",
                 "must be an integer from 1 to 600000, not 0"},
        BadValue{R"({"connect_timeout_ms": 600001, "request_timeout_ms": 700000})",
                 "connect_timeout_ms", "must be an integer from 1 to 600000, not 600001"},
        BadValue{R"({"request_timeout_ms": 0})", "request_timeout_ms",
                 "must be an integer from 1 to 3600000, not 0"},
        BadValue{R"({"request_timeout_ms": 3600001})", "request_timeout_ms",
                 "must be an integer from 1 to 3600000, not 3600001"},
        BadValue{R"({"connect_timeout_ms": 3000, "request_timeout_ms": 2999})",
                 "request_timeout_ms", "must be at least connect_timeout_ms (3000), not 2999"},
        BadValue{R"({"retry_delays_ms": []})", "retry_delays_ms",
                 "must be a non-empty array of at most 100 delays in milliseconds, not []"},
        BadValue{"{\"retry_delays_ms\": [" +
                     [] {
                       std::string entries = "1";
                       for (int i = 1; i < 101; ++i) entries += ", 1";
                       return entries;
                     }() +
                     "]}",
                 "retry_delays_ms",
                 "must be a non-empty array of at most 100 delays in milliseconds, not an array "
                 "of 101"},
        BadValue{R"({"retry_delays_ms": [5000, 0]})", "retry_delays_ms[1]",
                 "must be an integer from 1 to 604800000, not 0"},
        BadValue{R"({"retry_delays_ms": [604800001]})", "retry_delays_ms[0]",
                 "must be an integer from 1 to 604800000, not 604800001"},
        BadValue{R"({"retry_jitter": -0.1})", "retry_jitter",
                 "must be a number from 0 to 1, not -0.1"},
        BadValue{R"({"retry_jitter": 1.5})", "retry_jitter",
                 "must be a number from 0 to 1, not 1.5"},
        BadValue{R"({"retry_after_max_ms": -1})", "retry_after_max_ms",
                 "must be an integer from 0 to 604800000, not -1"},
        BadValue{R"({"retry_after_max_ms": 604800001})", "retry_after_max_ms",
                 "must be an integer from 0 to 604800000, not 604800001"}));

// ---- The structs on their own ---------------------------------------------------------------

TEST(ConfigOptions, DefaultsPassTheirOwnValidation) {
  TierOptions tier;
  tier.name = "default";
  EXPECT_EQ(tier.Validate(), std::nullopt);
  EXPECT_EQ(NodeOptions().Validate(), std::nullopt);
}

TEST(ConfigOptions, ValidateRefusesATierWithoutAProperName) {
  TierOptions tier;
  auto error = tier.Validate();
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->key, "");
  EXPECT_EQ(error->reason,
            "the tier's name (its file name without .json) must match ^[a-z][a-z0-9_]{0,62}$, "
            "not \"\"");
}

TEST(ConfigOptions, ValidateNamesTheFirstBadFieldOfAStructBuiltInCode) {
  TierOptions tier;
  tier.name = "default";
  tier.workers = 0;
  tier.retry_jitter = 2;
  ASSERT_TRUE(tier.Validate().has_value());
  EXPECT_EQ(tier.Validate()->key, "workers");

  NodeOptions node;
  node.allowed_networks = {"10.0.0.0/8", "10.0.0.0/99"};
  ASSERT_TRUE(node.Validate().has_value());
  EXPECT_EQ(node.Validate()->key, "allowed_networks[1]");
}

TEST(ConfigError, MessageNamesTheFileTheKeyAndTheReason) {
  EXPECT_EQ((ConfigError{"/etc/bulkhead.json", "workers", "must be 1"}).Message(),
            "/etc/bulkhead.json: workers: must be 1");
  EXPECT_EQ((ConfigError{"/etc/bulkhead.json", "", "cannot read: Permission denied"}).Message(),
            "/etc/bulkhead.json: cannot read: Permission denied");
}

}  // namespace
}  // namespace bulkhead
