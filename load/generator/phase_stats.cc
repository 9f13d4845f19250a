#include "phase_stats.h"

#include <algorithm>
#include <cmath>

namespace bulkhead::load {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

PhaseStats Summarize(const std::vector<SentMessage>& sent,
                     const std::map<std::string, std::vector<const MockRecord*>>& arrivals,
                     int64_t phase_start_us) {
  PhaseStats s;
  s.sent = static_cast<int>(sent.size());
  std::vector<double> latencies, enqueues, pickups;
  int64_t last_arrival = phase_start_us;
  for (const SentMessage& m : sent) {
    auto it = arrivals.find(std::to_string(m.job_id));
    if (it == arrivals.end() || it->second.empty()) {
      ++s.lost;
      continue;
    }
    const MockRecord& first = *it->second.front();
    ++s.delivered;
    s.duplicates += static_cast<int>(it->second.size()) - 1;
    for (const MockRecord* r : it->second) {
      if (r->signature == "missing" || r->signature == "invalid") ++s.bad_signatures;
    }
    double ms = static_cast<double>(first.received_at_us - m.sent_at_us) / 1000.0;
    latencies.push_back(ms);
    enqueues.push_back(static_cast<double>(m.committed_at_us - m.sent_at_us) / 1000.0);
    pickups.push_back(static_cast<double>(first.received_at_us - m.committed_at_us) / 1000.0);
    s.points.emplace_back(static_cast<double>(m.sent_at_us - phase_start_us) / 1e6, ms);
    last_arrival = std::max(last_arrival, first.received_at_us);
  }
  std::sort(latencies.begin(), latencies.end());
  s.p50_ms = Percentile(latencies, 0.50);
  s.p95_ms = Percentile(latencies, 0.95);
  s.p99_ms = Percentile(latencies, 0.99);
  s.max_ms = latencies.empty() ? 0 : latencies.back();
  std::sort(enqueues.begin(), enqueues.end());
  std::sort(pickups.begin(), pickups.end());
  s.enqueue_p95_ms = Percentile(enqueues, 0.95);
  s.pickup_p95_ms = Percentile(pickups, 0.95);
  s.pickup_p99_ms = Percentile(pickups, 0.99);
  double span_s = static_cast<double>(last_arrival - phase_start_us) / 1e6;
  s.deliveries_per_s = span_s > 0 ? s.delivered / span_s : 0;
  std::sort(s.points.begin(), s.points.end());
  return s;
}

nlohmann::json PhaseStats::ToJson() const {
  auto round1 = [](double v) { return std::round(v * 10) / 10; };
  return {{"sent", sent},
          {"delivered", delivered},
          {"duplicates", duplicates},
          {"lost", lost},
          {"bad_signatures", bad_signatures},
          {"p50_ms", round1(p50_ms)},
          {"p95_ms", round1(p95_ms)},
          {"p99_ms", round1(p99_ms)},
          {"max_ms", round1(max_ms)},
          {"enqueue_p95_ms", round1(enqueue_p95_ms)},
          {"pickup_p95_ms", round1(pickup_p95_ms)},
          {"pickup_p99_ms", round1(pickup_p99_ms)},
          {"deliveries_per_s", round1(deliveries_per_s)}};
}

}  // namespace bulkhead::load
