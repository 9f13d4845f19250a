// The console's pages: the files of worker/console/assets/, built into the binary at configure
// time (worker/console/CMakeLists.txt), so `bulkhead console` needs nothing beside it.
#pragma once

#include <optional>
#include <string_view>

namespace bulkhead::console {

struct Asset {
  std::string_view content_type;
  std::string_view body;
};

// The asset of that file name ("index.html", "app.js"); nullopt when there is none.
std::optional<Asset> FindAsset(std::string_view name);

}  // namespace bulkhead::console
