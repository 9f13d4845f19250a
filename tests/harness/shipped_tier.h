// ShippedTier: a tier file exactly as the repository ships it (tiers/<name>.json), for the
// benches, so that what they measure is the shipped configuration and cannot drift from it.
// A bench reads it, then overrides only the keys it varies, naming each override where it does.
//
// The folder is the source tree's tiers/ (BULKHEAD_TIERS_DIR, set by CMake), or the
// BULKHEAD_TIERS_DIR environment variable when set. Runs on the calling thread. Throws
// std::runtime_error when the file is missing or is not a JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace bulkhead::testing {

nlohmann::json ShippedTier(const std::string& name);

}  // namespace bulkhead::testing
