#include "pg_array.h"

namespace bulkhead {

std::string PgArray(const std::vector<int64_t>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(items[i]);
  }
  out += '}';
  return out;
}

}  // namespace bulkhead
