// Holds a test binary to the ONE_THREAD mark (tests/CMakeLists.txt): its tests and the code they
// call run on the main thread only. The ThreadSanitizer build neither builds nor runs such a
// binary, since TSan reports races between threads and could show it nothing; a test that
// started a thread all the same would lose that build's eye without anyone noticing. So every
// ONE_THREAD binary links this file: after each test it counts the process's threads
// (/proc/self/task), and the binary fails at its end, naming each test after which more than
// one ran. Only a thread still alive when a test ends is seen; one that started and ended
// within the test is not.
//
// Threads: all of it runs on the main thread, in GoogleTest's event callbacks.

#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

namespace {

int ThreadsNow() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<int>(std::distance(begin(tasks), end(tasks)));
}

std::vector<std::string>& Offenders() {
  static std::vector<std::string> offenders;
  return offenders;
}

class CountThreadsAfterEachTest : public ::testing::EmptyTestEventListener {
  void OnTestEnd(const ::testing::TestInfo& test) override {
    const int threads = ThreadsNow();
    if (threads > 1) {
      Offenders().push_back(std::string(test.test_suite_name()) + "." + test.name() + " (" +
                            std::to_string(threads) + " threads)");
    }
  }
};

// Failures reported in a global environment's TearDown fail the binary.
class FailIfAnyTestLeftThreads : public ::testing::Environment {
  void TearDown() override {
    for (const auto& offender : Offenders()) {
      ADD_FAILURE() << "marked ONE_THREAD in tests/CMakeLists.txt, but more than one thread ran "
                       "after "
                    << offender << ": drop the mark, so that the TSan build runs it";
    }
  }
};

// Registered before main() runs: the listener list and the environments are GoogleTest's
// singletons, which exist on first use.
[[maybe_unused]] const bool kRegistered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new CountThreadsAfterEachTest);
  ::testing::AddGlobalTestEnvironment(new FailIfAnyTestLeftThreads);
  return true;
}();

}  // namespace
