#include "arrivals.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <thread>

#include "poll.h"

namespace bulkhead::bench {

std::string FormatMs(double ms) {
  if (std::isinf(ms)) return "not received";
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms < 1000 ? "%.2f ms" : "%.0f ms", ms);
  return buf;
}

void Arrivals::Record(const std::string& id, Clock::time_point at) {
  std::lock_guard lock(mu_);
  at_.emplace(id, at);
}

size_t Arrivals::Count(const Committed& committed) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, at] : committed) n += at_.count(id);
  return n;
}

void Arrivals::WaitFor(const Committed& committed, std::chrono::milliseconds timeout) const {
  testing::PollUntil([&] { return Count(committed) == committed.size(); }, timeout,
                     std::chrono::milliseconds(50));
}

Arrivals::Split Arrivals::BySecond(const Committed& committed) const {
  Split split;
  if (committed.empty()) return split;
  Clock::time_point first = committed.begin()->second;
  for (const auto& [id, at] : committed) first = std::min(first, at);
  std::lock_guard lock(mu_);
  for (const auto& [id, at] : committed) {
    auto second = static_cast<size_t>(std::chrono::duration<double>(at - first).count());
    if (split.seconds.size() <= second) split.seconds.resize(second + 1);
    auto it = at_.find(id);
    double ms = it == at_.end()
                    ? std::numeric_limits<double>::infinity()
                    : std::chrono::duration<double, std::milli>(it->second - at).count();
    for (Latencies* l : {&split.all, &split.seconds[second]}) {
      l->ms.push_back(ms);
      if (it != at_.end()) ++l->received;
    }
  }
  std::sort(split.all.ms.begin(), split.all.ms.end());
  for (auto& l : split.seconds) std::sort(l.ms.begin(), l.ms.end());
  return split;
}

Committed SteadyTraffic(pqxx::connection& conn, int64_t channel, int rate, int seconds) {
  Committed committed;
  const int total = rate * seconds;
  const auto interval = std::chrono::nanoseconds(1'000'000'000 / rate);
  auto next = Clock::now();
  for (int i = 0; i < total; ++i) {
    std::this_thread::sleep_until(next);
    next += interval;
    pqxx::work tx(conn);
    std::string id = tx.exec1("SELECT bulkhead.enqueue(" + std::to_string(channel) +
                              ", '{\"n\": " + std::to_string(i) + "}')")[0]
                         .as<std::string>();
    tx.commit();
    committed.emplace(id, Clock::now());
  }
  return committed;
}

}  // namespace bulkhead::bench
