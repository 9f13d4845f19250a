#include "logger.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <vector>

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

namespace {

// The live RepeatedEvents. Guarded by repeated_mu, which is taken before mu (Log's), never
// after.
std::mutex repeated_mu;
std::vector<RepeatedEvent*>& Repeated() {
  static std::vector<RepeatedEvent*> events;
  return events;
}

}  // namespace

RepeatedEvent::RepeatedEvent(LogLevel level, std::string event, nlohmann::json fields)
    : level_(level),
      event_(std::move(event)),
      fields_(std::move(fields)),
      last_line_(std::chrono::steady_clock::now()) {
  std::lock_guard lock(repeated_mu);
  Repeated().push_back(this);
}

RepeatedEvent::~RepeatedEvent() {
  std::lock_guard lock(repeated_mu);
  std::erase(Repeated(), this);
  Summarize(std::chrono::steady_clock::now(), true);
}

void RepeatedEvent::Summarize(std::chrono::steady_clock::time_point now, bool force) {
  uint64_t count = count_.load(std::memory_order_relaxed);
  if (count == logged_) return;
  if (!force && now - last_line_ < kSummaryEvery) return;
  nlohmann::json line = fields_.is_object() ? fields_ : nlohmann::json::object();
  line["count"] = count - logged_;
  line["window_s"] = std::round(std::chrono::duration<double>(now - last_line_).count() * 10) / 10;
  Log(level_, event_, line);
  logged_ = count;
  last_line_ = now;
}

void FlushRepeatedEvents(std::chrono::steady_clock::time_point now, bool force) {
  std::lock_guard lock(repeated_mu);
  for (RepeatedEvent* event : Repeated()) event->Summarize(now, force);
}

std::string FirstLine(std::string_view text) {
  std::string_view first = text.substr(0, text.find('\n'));
  return std::string(first);
}

}  // namespace bulkhead
