#include "shipped_tier.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace bulkhead::testing {

nlohmann::json ShippedTier(const std::string& name) {
  const char* env = std::getenv("BULKHEAD_TIERS_DIR");
  std::filesystem::path dir =
      env != nullptr && *env != '\0' ? std::filesystem::path(env) : BULKHEAD_TIERS_DIR;
  std::filesystem::path file = dir / (name + ".json");
  std::ifstream in(file);
  auto tier = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in || tier.is_discarded() || !tier.is_object()) {
    throw std::runtime_error("cannot read the shipped tier " + file.string());
  }
  return tier;
}

}  // namespace bulkhead::testing
