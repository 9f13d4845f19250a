#include "database_url.h"

#include <cstdlib>

namespace bulkhead {

std::string ResolveDatabase(const std::optional<std::string>& from_flag,
                            const std::optional<std::string>& from_config) {
  if (from_flag) return *from_flag;
  if (from_config) return *from_config;
  if (const char* env = std::getenv("DATABASE_URL"); env != nullptr && *env != '\0') return env;
  return "";
}

}  // namespace bulkhead
