// The words of `bulkhead channel` subcommands that are checked before anything reaches the
// database: a new secret and --keep-old (rotate-secret), --event-types and --rate-limit (set).
// Each refusal is one usage-error line on stderr (cli::UsageError). Pure functions, except
// ReadSecretFile, which reads a file or stdin; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bulkhead::cli {

// How long old secrets are still signed with after a rotation, unless --keep-old says.
constexpr int64_t kDefaultKeepOldS = 24 * 3600;
// The most a channel's rate limit may be: channels_rate_limit_positive (migration 0013).
constexpr double kMaxRatePerS = 1'000'000;
// The longest event type name: bulkhead.event_types_valid (migration 0013).
constexpr size_t kMaxEventTypeLength = 255;

// Whether `secret` has the shape channels_secret_format accepts and a key of 24 to 64 bytes.
bool IsGoodNewSecret(std::string_view secret);
// The secret of --secret-file FILE ("-": stdin), or the exit code of a usage error; the
// secret itself is never quoted.
std::variant<std::string, int> ReadSecretFile(const std::string& command, const std::string& file);
// --keep-old: seconds, or nullopt when the word is neither 0 nor a duration.
std::optional<int64_t> ParseKeepOld(std::string_view word);
// --event-types TYPE,TYPE…: the names, trimmed and each once; nullopt after the usage error.
std::optional<std::vector<std::string>> ParseEventTypes(std::string_view command,
                                                        const std::string& list);
// --rate-limit N: above 0 and at most kMaxRatePerS; nullopt after the usage error.
std::optional<double> ParseRate(std::string_view command, const std::string& word);

}  // namespace bulkhead::cli
