// Options: the one reader of `--name value` command-line options for bulkhead-load's scenarios
// and benches, so that every mode parses its flags the same way and fails with the same kind
// of message. Pure; any thread.
//
// Each Option names a flag and the variable it fills; ReadOptions walks the words in order: a
// word that starts with "--" must be a known option followed by its value (a number where the
// target is a number, read whole: "12x" is refused), any other word is positional. Range
// checks stay with the caller, who knows what a value means.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bulkhead::load {

struct Option {
  using Target = std::variant<std::string*, int*, int64_t*, double*>;
  Option(std::string_view name, Target target, bool* given = nullptr)
      : name(name), target(target), given(given) {}

  std::string_view name;  // "--jobs"
  Target target;
  bool* given;  // set true when the option appears (may be null)
};

// Fills the options' targets from `words`, appending the other words to `positional`. Returns
// "" or the usage error: "unknown option --x", "--x needs a value", "--x: 'y' is not a number".
std::string ReadOptions(const std::vector<std::string_view>& words,
                        const std::vector<Option>& options, std::vector<std::string>& positional);

}  // namespace bulkhead::load
