#include "source_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace bulkhead::testing {

std::string ReadSourceFile(const std::string& path) {
  std::ifstream in(std::string(BULKHEAD_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace bulkhead::testing
