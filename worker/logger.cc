#include "logger.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace bulkhead {
namespace {

std::mutex mu;
std::string node_name;  // written once before threads start, read under mu

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

std::string Now() {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[96];  // room for any int the compiler can imagine in each field
  std::snprintf(buffer, sizeof(buffer), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis));
  return buffer;
}

}  // namespace

void SetLogNode(std::string node) {
  std::lock_guard lock(mu);
  node_name = std::move(node);
}

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  nlohmann::json line = {{"time", Now()}, {"level", LevelName(level)}, {"event", event}};
  std::lock_guard lock(mu);
  if (!node_name.empty()) line["node"] = node_name;
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) line[key] = value;
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
}

std::string FirstLine(std::string_view text) {
  std::string_view first = text.substr(0, text.find('\n'));
  return std::string(first);
}

}  // namespace bulkhead
