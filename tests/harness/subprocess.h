// Subprocess: RunCommand runs a program to completion and captures what it printed, for the tests
// of the command-line binaries. Blocks the calling thread.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bulkhead::testing {

struct CommandResult {
  int exit_code = -1;  // 128 + signal number if it was killed
  std::string out;     // stdout
  std::string err;     // stderr
};

// `argv[0]` is a path. `env` entries are set (an empty value unsets the variable) on top of
// this process's environment. The program reads `input` on stdin (/dev/null when there is
// none). Throws std::runtime_error if the program cannot be started.
CommandResult RunCommand(const std::vector<std::string>& argv,
                         const std::map<std::string, std::string>& env = {},
                         const std::optional<std::string>& input = std::nullopt);

}  // namespace bulkhead::testing
