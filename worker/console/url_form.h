// application/x-www-form-urlencoded text — a query string, or the login form's body — as
// name → value, decoded ('+' is a space, %XX a byte). Pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bulkhead::console {

using Form = std::map<std::string, std::string, std::less<>>;

// The pairs of `text` ("a=1&b=x%20y"); a name given twice keeps its last value, and an empty
// pair ("a=1&&b=2") is skipped. nullopt when a '%' is not followed by two hex digits.
std::optional<Form> ParseForm(std::string_view text);

// One component decoded; nullopt as above.
std::optional<std::string> UrlDecode(std::string_view text);

}  // namespace bulkhead::console
