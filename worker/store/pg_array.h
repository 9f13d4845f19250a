// PgArray: a vector of integers as a PostgreSQL array literal, `{1,2,3}`, for a statement
// parameter cast to bigint[] or int[] (libpqxx 6.4 has no array parameters of its own).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bulkhead {

std::string PgArray(const std::vector<int64_t>& items);
std::string PgArray(const std::vector<int>& items);

}  // namespace bulkhead
