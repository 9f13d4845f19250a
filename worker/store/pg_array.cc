#include "pg_array.h"

namespace bulkhead {
namespace {

template <typename Int>
std::string Literal(const std::vector<Int>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(items[i]);
  }
  out += '}';
  return out;
}

}  // namespace

std::string PgArray(const std::vector<int64_t>& items) { return Literal(items); }
std::string PgArray(const std::vector<int>& items) { return Literal(items); }

}  // namespace bulkhead
