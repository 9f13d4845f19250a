#include "cli.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>

namespace bulkhead::testing {

namespace {
constexpr const char* kNowhere = "postgresql:///nope?host=/nonexistent";
}  // namespace

CommandResult Bulkhead(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                       const std::optional<std::string>& input) {
  args.insert(args.begin(), BULKHEAD_BIN);
  return RunCommand(args, env, input);
}

int Lines(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

void ExpectUsageError(const std::vector<std::string>& args, const std::string& fragment) {
  SCOPED_TRACE(::testing::PrintToString(args));
  CommandResult r = Bulkhead(args, {{"DATABASE_URL", kNowhere}});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
}

void ExpectUnreachableDatabaseError(const std::vector<std::vector<std::string>>& verbs) {
  for (auto args : verbs) {
    SCOPED_TRACE(::testing::PrintToString(args));
    args.push_back("--database");
    args.push_back(kNowhere);
    CommandResult r = Bulkhead(args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(": database error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
    EXPECT_EQ(Lines(r.err), 1) << r.err;
  }
}

std::vector<std::vector<std::string>> Cells(const std::string& table) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(table);
  static const std::regex kGap("  +");
  for (std::string line; std::getline(lines, line);) {
    rows.emplace_back(std::sregex_token_iterator(line.begin(), line.end(), kGap, -1),
                      std::sregex_token_iterator());
  }
  return rows;
}

CommandResult CliTest::Run(std::vector<std::string> args, const std::optional<std::string>& input) {
  args.push_back("--database");
  args.push_back(url());
  return Bulkhead(args, {}, input);
}

}  // namespace bulkhead::testing
