// Process exit codes shared by every bulkhead binary and verb.
#pragma once

namespace bulkhead {

inline constexpr int kExitOk = 0;
// The work failed: the database refused, a migration failed, a delivery node stopped on error.
inline constexpr int kExitFailure = 1;
// The command line or the configuration is wrong; the message says which part and why.
inline constexpr int kExitUsage = 2;

}  // namespace bulkhead
