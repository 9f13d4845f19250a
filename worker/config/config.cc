#include "config.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <system_error>

#include "config_keys.h"

namespace bulkhead {
namespace {

using nlohmann::json;

using config_rules::IsTierName;
using config_rules::kTierNameRule;
using config_rules::Shown;
using config_rules::ShownKey;

// A path in quotes, never cut short.
std::string Quoted(const std::filesystem::path& path) { return json(path.string()).dump(); }

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
    return ConfigError{path.string(), ShownKey(duplicate.key), "repeated key"};
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

std::variant<TierOptions, ConfigError> ReadTier(const std::filesystem::path& path,
                                                const std::string& name) {
  auto parsed = ParseObject(path);
  if (auto* error = std::get_if<ConfigError>(&parsed)) return *error;
  const json& object = std::get<json>(parsed);
  TierOptions tier;
  tier.name = name;
  if (auto error = ReadKeys(object, tier)) return InFile(*error, path);
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
        return ConfigError{dir.string(), "tiers",
                           "must name tiers matching " + std::string(kTierNameRule) + ", not " +
                               Shown(json(name))};
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
  if (auto error = ReadKeys(object, node)) return InFile(*error, file);
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
          "names tier " + Shown(json(name)) + ", but " + Quoted(dir) + " has no " + name + ".json"};
    }
  }
  auto tiers = LoadTiers(dir, node.tiers);
  if (auto* error = std::get_if<ConfigError>(&tiers)) return *error;
  config.tiers = std::move(std::get<std::vector<TierOptions>>(tiers));
  return config;
}

}  // namespace bulkhead
