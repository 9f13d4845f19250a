#include "options.h"

#include <charconv>
#include <type_traits>

namespace bulkhead::load {
namespace {

// Whole-word numbers only: from_chars stops at the first character it cannot read.
template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  if (text.empty()) return false;
  T value{};
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  out = value;
  return true;
}

}  // namespace

std::string ReadOptions(const std::vector<std::string_view>& words,
                        const std::vector<Option>& options, std::vector<std::string>& positional) {
  for (size_t i = 0; i < words.size(); ++i) {
    std::string_view word = words[i];
    if (!word.starts_with("--")) {
      positional.emplace_back(word);
      continue;
    }
    const Option* option = nullptr;
    for (const auto& o : options) {
      if (o.name == word) option = &o;
    }
    if (option == nullptr) return "unknown option " + std::string(word);
    if (i + 1 >= words.size()) return std::string(word) + " needs a value";
    std::string_view value = words[++i];
    bool ok = std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, std::string>) {
            *target = std::string(value);
            return true;
          } else {
            return ParseNumber(value, *target);
          }
        },
        option->target);
    if (!ok) return std::string(word) + ": '" + std::string(value) + "' is not a number";
    if (option->given != nullptr) *option->given = true;
  }
  return "";
}

}  // namespace bulkhead::load
