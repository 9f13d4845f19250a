// The schema migrations this binary was built with (schema/NNNN_name.{up,down}.sql).
//
// Built into the binary by worker/store/CMakeLists.txt, so the newest version a binary knows is
// part of it: a binary refuses a database migrated past that version. Immutable; safe to read from
// any thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

struct Migration {
  int version;                // 1, 2, … without gaps
  std::string_view name;      // "init"
  std::string_view up_sql;    // applies the migration; runs in one transaction
  std::string_view down_sql;  // reverses it exactly; runs in one transaction
};

// In ascending version order, starting at 1.
std::span<const Migration> EmbeddedMigrations();

}  // namespace bulkhead
