#include "channel_words.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>

#include "cli_common.h"
#include "exit_codes.h"
#include "webhook_signature.h"

namespace bulkhead::cli {

// A secret an operator gives with --secret-file, checked before anything reaches the database:
// the shape channels_secret_format accepts (whole, padded base64 groups) and the key length the
// Standard Webhooks specification asks for, 24 to 64 bytes.
bool IsGoodNewSecret(std::string_view secret) {
  std::optional<std::string> key = DecodeWebhookSecret(secret);
  constexpr size_t kPrefix = 6;  // "whsec_"
  return key && (secret.size() - kPrefix) % 4 == 0 && key->size() >= 24 && key->size() <= 64;
}

// The secret of --secret-file FILE ("-": stdin), or the exit code of a usage error. Read from a
// file or a pipe rather than taken as a word, because every word of argv is in `ps` for all
// users to see and in the shell's history. One newline at the end (what `echo`, a here-string
// or an editor leave) is dropped; anything else around the secret makes it malformed. At most
// 4 KiB is read: a whsec_ secret is under 100 bytes, so more is the wrong file.
std::variant<std::string, int> ReadSecretFile(const std::string& command, const std::string& file) {
  constexpr size_t kMaxBytes = 4096;
  std::string text(kMaxBytes + 1, '\0');  // one byte more tells "too long" from "just fits"
  auto read_from = [&](std::istream& in) {
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
  };
  if (file == "-") {
    read_from(std::cin);
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      return UsageError(command,
                        "cannot read --secret-file " + OneLine(file) + ": " + std::strerror(errno));
    }
    read_from(in);
  }
  if (text.size() > kMaxBytes) {
    return UsageError(command, "the secret of --secret-file is over 4 KiB: not a secret");
  }
  if (text.ends_with('\n')) text.pop_back();
  if (text.ends_with('\r')) text.pop_back();
  if (text.empty()) return UsageError(command, "the secret of --secret-file is empty");
  if (!IsGoodNewSecret(text)) {
    return UsageError(command,
                      "the secret of --secret-file must be whsec_ followed by padded "
                      "standard base64 of a 24- to 64-byte key (it is not repeated here)");
  }
  return text;
}

// --keep-old: "0" (or "0s", "0m", …: retire the old secrets at once) or a duration
// (cli::ParseDuration). Seconds, or nullopt.
std::optional<int64_t> ParseKeepOld(std::string_view word) {
  std::string_view digits = word;
  if (!digits.empty() && std::string_view("smhd").find(digits.back()) != std::string_view::npos) {
    digits.remove_suffix(1);
  }
  if (!digits.empty() && digits.find_first_not_of('0') == std::string_view::npos) return 0;
  return ParseDuration(word);
}

// --event-types TYPE,TYPE…: the names in order, each trimmed of the spaces around it and given
// once; or nullopt after the usage error (an empty name, or one over 255 characters). An empty
// name is refused rather than dropped: "a,,b" or a trailing comma is a typo, and publish would
// never match the type the operator meant.
std::optional<std::vector<std::string>> ParseEventTypes(std::string_view command,
                                                        const std::string& list) {
  std::vector<std::string> types;
  for (size_t start = 0;;) {
    size_t comma = list.find(',', start);
    std::string_view name = std::string_view(list).substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name.empty()) {
      UsageError(command, "--event-types has an empty type name in '" + OneLine(list) +
                              "' (--no-event-types subscribes to none)");
      return std::nullopt;
    }
    if (name.size() > kMaxEventTypeLength) {
      UsageError(command, "--event-types: a type name is 1 to 255 characters, not " +
                              std::to_string(name.size()));
      return std::nullopt;
    }
    if (std::find(types.begin(), types.end(), name) == types.end()) types.emplace_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return types;
}

// --rate-limit N: requests a second, above 0 and at most 1,000,000 (a fraction is fine: 0.5 is
// one request every two seconds). nullopt after the usage error.
std::optional<double> ParseRate(std::string_view command, const std::string& word) {
  double rate = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), rate);
  if (word.empty() || ec != std::errc() || end != word.data() + word.size() ||
      !std::isfinite(rate) || rate <= 0 || rate > kMaxRatePerS) {
    UsageError(command,
               "--rate-limit must be a number of requests a second above 0 and at most "
               "1000000, not '" +
                   OneLine(word) + "'");
    return std::nullopt;
  }
  return rate;
}

}  // namespace bulkhead::cli
