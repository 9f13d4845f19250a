// The config keys: one table per level, node keys (NodeOptions, the node config file) and tier
// keys (TierOptions, a tier file), one row per key. A row names the key, its JSON type as
// docs/configuration.md's tables write it, whether a SIGHUP reload applies it, its range, and
// the functions that read it into its field, check it there, and show its value. LoadConfig
// and LoadTiers (config.cc) read files through ReadKeys, which refuses unknown keys by the
// tables; Validate() walks the table; tests/config_keys_test.cc holds docs/configuration.md and
// the shipped tier files to both tables. Only config.cc's checks on the file system (tiers_dir
// is a folder, each of tiers has a file) name a key outside its row, in their errors. A key's
// default is its field's default member initialiser in config.h, the only place it is written; a
// row shows it (`value` on a default-constructed struct), never repeats it.
//
// Adding a key: a field with its default in config.h, a row in config_keys.cc, a section in
// docs/configuration.md (the test fails until there is one), and the shipped tier files if it
// is a tier key.
//
// The tables are constant; everything here is safe to call from any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config.h"

namespace bulkhead {

// One key of `Options` (NodeOptions or TierOptions).
template <typename Options>
struct ConfigKey {
  std::string_view name;  // as in the file: "workers"
  std::string_view type;  // as docs/configuration.md's tables: "integer", "array of strings"
  bool reloadable;        // a SIGHUP reload applies it; otherwise it is read once, at start

  // Integers: the range ("must be an integer from <min> to <max>"); arrays of integers: the
  // range of each entry.
  int64_t min = 0;
  int64_t max = 0;
  // What the value must be, in the words of a refusal ("must be <expectation>, not 7"), for a
  // key that is not a plain integer.
  std::string_view expectation = {};

  // Reads the key's JSON value into its field: the JSON type, and whether an integer fits the
  // field. The range is check's.
  std::optional<ConfigError> (*read)(const ConfigKey& key, const nlohmann::json& value,
                                     Options& options) = nullptr;
  // Checks the field in `options`: the range and the key's own rules. May be null.
  std::optional<ConfigError> (*check)(const ConfigKey& key, const Options& options) = nullptr;
  // A rule between this key and an earlier one ("at least cooldown_ms"), checked after `check`.
  std::optional<ConfigError> (*also)(const ConfigKey& key, const Options& options) = nullptr;
  // The field's value in `options` as JSON (a default-constructed struct gives the default).
  nlohmann::json (*value)(const Options& options) = nullptr;
};

// Node keys in the order they are read and checked: the order of the first error reported.
std::span<const ConfigKey<NodeOptions>> NodeKeys();
// Tier keys, likewise.
std::span<const ConfigKey<TierOptions>> TierKeys();

// Reads `object` (a node config) into `options`: the first unknown key (a tier key is told it
// belongs in a tier file), then each key of NodeKeys() in order, stopping at the first error.
// The error's file is empty. Ranges are Validate()'s.
std::optional<ConfigError> ReadKeys(const nlohmann::json& object, NodeOptions& options);
// Reads `object` (a tier file) into `options`, likewise with TierKeys().
std::optional<ConfigError> ReadKeys(const nlohmann::json& object, TierOptions& options);

// ---- Words the file handling in config.cc shares with the rows ----------------------------

namespace config_rules {

// The database's rule for a tier's name (bulkhead.tiers.name).
inline constexpr std::string_view kTierNameRule = "^[a-z][a-z0-9_]{0,62}$";
bool IsTierName(std::string_view name);

// A value as the operator wrote it, cut short (on a UTF-8 character boundary) if long.
std::string Shown(const nlohmann::json& value);

// A key's name for a refusal: as written, unless it holds a control character (a JSON "\n" in
// the name); then escaped and quoted, so the refusal stays one line.
std::string ShownKey(const std::string& name);

}  // namespace config_rules
}  // namespace bulkhead
