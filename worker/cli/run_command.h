// `bulkhead run --config FILE [--database URL]`: runs one worker node until stopped.
//
// Loads and validates the configuration (a bad one exits 2 naming file, key and reason),
// blocks the stop signals in every thread before any starts, and hands over to Node.
// Runs on the main thread.
#pragma once

#include <span>
#include <string_view>

namespace bulkhead {

// `args` are the words after "run". Returns the process exit code.
int RunRunCommand(std::span<const std::string_view> args);

}  // namespace bulkhead
