#include "cli_common.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <pqxx/pqxx>
#include <regex>

#include "config.h"
#include "database_url.h"
#include "exit_codes.h"
#include "logger.h"

namespace bulkhead::cli {

int UsageError(std::string_view command, const std::string& message) {
  std::cerr << command << ": " << message << " (try: " << command << " --help)\n";
  return kExitUsage;
}

std::string OneLine(std::string_view text) {
  std::string line(text);
  for (char& c : line) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return line;
}

std::string Deliveries(int64_t n, std::string_view adjective) {
  return std::to_string(n) + " " + std::string(adjective) + (n == 1 ? " delivery" : " deliveries");
}

std::optional<int64_t> ParseId(std::string_view word) {
  int64_t id = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
  if (word.empty() || ec != std::errc() || end != word.data() + word.size() || id < 1) {
    return std::nullopt;
  }
  return id;
}

std::optional<int64_t> TakeId(std::string_view command, std::string_view name,
                              std::string_view what, std::string_view word, bool quote_word) {
  std::optional<int64_t> id = ParseId(word);
  if (!id) {
    std::string message =
        std::string(name) + " must be a positive integer (" + std::string(what) + ")";
    if (quote_word) message += ", not '" + OneLine(word) + "'";
    UsageError(command, message);
  }
  return id;
}

std::optional<int64_t> ParseDuration(std::string_view word) {
  if (word.size() < 2) return std::nullopt;
  int64_t unit = 0;
  switch (word.back()) {
    case 's':
      unit = 1;
      break;
    case 'm':
      unit = 60;
      break;
    case 'h':
      unit = 3600;
      break;
    case 'd':
      unit = 86400;
      break;
    default:
      return std::nullopt;
  }
  std::optional<int64_t> n = ParseId(word.substr(0, word.size() - 1));
  // Up to 100 years: far beyond any retention, far below an overflow.
  if (!n || *n > 100LL * 365 * 86400 / unit) return std::nullopt;
  return *n * unit;
}

std::optional<std::string> ParseTimestamp(std::string_view word) {
  static const std::regex kShape(
      R"(^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?))?(Z|[+-]\d{2}(?::?\d{2})?)?$)");
  std::cmatch m;
  if (!std::regex_match(word.data(), word.data() + word.size(), m, kShape)) return std::nullopt;
  std::string text = m[1].str() + "T" + (m[2].matched ? m[2].str() : "00:00");
  return text + (m[3].matched ? m[3].str() : "Z");
}

std::optional<int> ParseLimit(std::string_view command, const Words& words, std::string_view option,
                              int fallback, int max) {
  std::optional<std::string> value = words.Value(option);
  if (!value) return fallback;
  std::optional<int64_t> n = ParseId(*value);
  if (!n || *n > max) {
    UsageError(command, std::string(option) + " must be a number from 1 to " + std::to_string(max) +
                            ", not '" + OneLine(*value) + "'");
    return std::nullopt;
  }
  return static_cast<int>(*n);
}

std::optional<int64_t> TakeChannel(std::string_view command, const Words& words, bool quote_word) {
  if (words.positional.empty()) {
    UsageError(command, "missing CHANNEL");
    return std::nullopt;
  }
  return TakeId(command, "CHANNEL", "a channel id", words.positional[0], quote_word);
}

std::optional<std::string> Words::Value(std::string_view option) const {
  auto it = values.find(option);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

std::variant<Words, int> Parse(std::string_view command, std::span<const std::string_view> args,
                               const Grammar& grammar, const std::function<void()>& print_help) {
  for (std::string_view arg : args) {
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") {
      print_help();
      return kExitOk;
    }
  }
  std::vector<Option> options = grammar.options;
  options.push_back({"--database", "a URL"});
  options.push_back({"--config", "a FILE"});
  Words words;
  bool options_ended = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    // "-3" is a (bad) id, not an option.
    const bool negative_number =
        arg.size() > 1 && arg[0] == '-' && std::isdigit(static_cast<unsigned char>(arg[1]));
    if (!options_ended && arg == "--") {
      options_ended = true;
      continue;
    }
    if (!options_ended && arg.starts_with("-") && !negative_number) {
      std::string_view name = arg.substr(0, arg.find('='));
      auto option = std::find_if(options.begin(), options.end(),
                                 [&](const Option& o) { return name == o.name; });
      if (option == options.end()) {
        return UsageError(command, "unknown option '" + OneLine(name) + "'");
      }
      if (option->value == nullptr) {
        if (name.size() != arg.size()) {
          return UsageError(command, std::string(name) + " takes no value");
        }
        words.flags.emplace(name);
        continue;
      }
      std::string value;
      if (name.size() != arg.size()) {
        value = arg.substr(name.size() + 1);
      } else if (i + 1 == args.size()) {
        return UsageError(command, std::string(name) + " needs " + option->value);
      } else {
        value = args[++i];
      }
      if (name == "--database") {
        words.database = std::move(value);
      } else if (name == "--config") {
        words.config = std::move(value);
      } else {
        words.values[std::string(name)] = std::move(value);
      }
    } else if (words.positional.size() < grammar.max_positional) {
      words.positional.push_back(arg);
    } else {
      return UsageError(command, "unexpected argument '" + OneLine(arg) + "'");
    }
  }
  return words;
}

std::variant<std::string, int> DatabaseOf(std::string_view command, const Words& words) {
  std::optional<std::string> from_config;
  if (words.config && !words.database) {
    auto loaded = LoadConfig(*words.config);
    if (auto* error = std::get_if<ConfigError>(&loaded)) {
      std::cerr << command << ": " << OneLine(error->Message()) << "\n";
      return kExitUsage;
    }
    const std::string& database = std::get<Config>(loaded).node.database;
    if (!database.empty()) from_config = database;
  }
  return ResolveDatabase(words.database, from_config);
}

int WithConnection(std::string_view command, const Words& words,
                   const std::function<int(pqxx::connection_base&)>& act) {
  auto database = DatabaseOf(command, words);
  if (const int* exit_code = std::get_if<int>(&database)) return *exit_code;
  try {
    pqxx::connection conn(std::get<std::string>(database));
    return act(conn);
  } catch (const std::exception& e) {
    // libpq's messages span lines; the first has the reason.
    std::cerr << command << ": database error: " << FirstLine(e.what()) << "\n";
    return kExitFailure;
  }
}

std::string SubcommandVerb::CommandName(const Subcommand& sub) const {
  return std::string(verb) + " " + sub.name;
}

void SubcommandVerb::PrintHelp(const Subcommand& sub) const {
  std::cout << "usage: " << verb << " " << sub.synopsis << "\n\n"
            << sub.details << "\n"
            << note << kDatabaseNote;
}

int SubcommandVerb::Dispatch(std::span<const std::string_view> args) const {
  std::string names;
  for (const Subcommand& sub : table) names += (names.empty() ? "" : ", ") + std::string(sub.name);
  if (args.empty()) return UsageError(verb, "missing subcommand (" + names + ")");
  std::string_view name = args.front();
  if (name == "-h" || name == "--help") {
    std::cout << "usage: " << verb
              << " <subcommand> [arguments] [--database URL]\n\nsubcommands:\n";
    for (const Subcommand& sub : table) {
      // Every subcommand takes --database; the overview says so once.
      std::string synopsis = sub.synopsis;
      synopsis = synopsis.substr(0, synopsis.find(" [--database URL]"));
      std::cout << "  " << synopsis
                << std::string(synopsis.size() < 22 ? 24 - synopsis.size() : 2, ' ') << sub.summary
                << "\n";
    }
    std::cout << "\n"
              << note << "`" << verb << " <subcommand> --help` says more.\n"
              << kDatabaseNote;
    return kExitOk;
  }
  for (const Subcommand& sub : table) {
    if (name == sub.name) return sub.run(sub, args.subspan(1));
  }
  if (name.starts_with("-")) {
    return UsageError(verb, "expected a subcommand (" + names + ") before '" + OneLine(name) + "'");
  }
  return UsageError(verb, "unknown subcommand '" + OneLine(name) + "' (" + names + ")");
}

std::string Duration(int64_t seconds) {
  char text[64];
  if (seconds < 60) {
    std::snprintf(text, sizeof(text), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else if (seconds < 86400) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds % 3600 / 60));
  } else {
    std::snprintf(text, sizeof(text), "%lldd%02lldh", static_cast<long long>(seconds / 86400),
                  static_cast<long long>(seconds % 86400 / 3600));
  }
  return text;
}

std::string Cell(std::string text) {
  text = OneLine(text);
  return text.empty() ? "-" : text;
}

namespace {

// Width in terminal columns, counting UTF-8 code points (tenant names need not be ASCII).
size_t Width(const std::string& text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

}  // namespace

void PrintTable(const std::vector<std::vector<std::string>>& table) {
  if (table.empty()) return;
  std::vector<size_t> widths(table.front().size(), 0);
  for (const auto& line : table) {
    for (size_t c = 0; c < line.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], Width(line[c]));
    }
  }
  for (const auto& line : table) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      text += line[c];
      if (c + 1 < line.size()) text += std::string(widths[c] - Width(line[c]) + 2, ' ');
    }
    std::cout << text << "\n";
  }
}

double Millis(double seconds) { return std::round(seconds * 1000) / 1000; }

}  // namespace bulkhead::cli
