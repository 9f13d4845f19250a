// ReadSourceFile: a file of the source tree as it is checked out, for the tests that hold the
// docs to the code (docs/metrics.md, docs/configuration.md, docs/cli.md, the dashboard, the
// alert rules, the shipped tier files).
//
// `path` is relative to the repository's root (BULKHEAD_SOURCE_DIR, set by CMake). Runs on the
// calling thread. A missing or unreadable file is a failed expectation naming the path, and
// reads as "".
#pragma once

#include <string>

namespace bulkhead::testing {

std::string ReadSourceFile(const std::string& path);

}  // namespace bulkhead::testing
