// The latency scenario (scenarios.h).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <pqxx/pqxx>
#include <thread>

#include "app_sender.h"
#include "mock_client.h"
#include "phase_stats.h"
#include "report.h"
#include "scenario_stack.h"
#include "scenarios.h"

namespace bulkhead::load {

int RunLatency(const ScenarioContext& context, const LatencyKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  pqxx::connection conn(context.database);
  if (!context.node.empty()) WaitForNode(conn, context.node, {"default"});
  MockClient mock(context.mock_url);
  const std::string route = "/hook/fast";
  Channel channel =
      CreateTenantAndChannel(conn, RunName("latency"), "default", context.mock_url + route);
  mock.Reset();
  mock.SetSecrets({channel.secret});
  std::cout << "latency: " << knobs.profile << " profile; " << knobs.rate << " deliveries/s for "
            << knobs.duration_s << " s, each in its own transaction, to " << route << std::endl;
  // A node that has just started or just drained is idle: let it settle into waiting.
  std::this_thread::sleep_for(std::chrono::seconds(1));

  SendReport sent = RunConversations({context.database, channel.id, 1, knobs.rate,
                                      std::chrono::seconds(knobs.duration_s), 1, "latency"},
                                     std::chrono::system_clock::now());
  if (sent.errors > 0) throw std::runtime_error("an enqueue failed: " + sent.first_error);
  WaitForArrivals(mock, route, static_cast<int64_t>(sent.sent.size()), std::chrono::seconds(30));

  std::map<std::string, std::vector<MockRecord>> arrivals;
  for (MockRecord& r : mock.Records(route)) arrivals[r.webhook_id].push_back(std::move(r));
  std::vector<double> pickup, send;
  int lost = 0, duplicates = 0, bad_signatures = 0;
  for (const SentMessage& m : sent.sent) {
    auto it = arrivals.find(std::to_string(m.job_id));
    if (it == arrivals.end()) {
      ++lost;
      continue;
    }
    duplicates += static_cast<int>(it->second.size()) - 1;
    for (const auto& r : it->second) {
      if (r.signature == "missing" || r.signature == "invalid") ++bad_signatures;
    }
    int64_t received = it->second.front().received_at_us;
    pickup.push_back(static_cast<double>(received - m.committed_at_us) / 1000.0);
    send.push_back(static_cast<double>(received - m.sent_at_us) / 1000.0);
  }
  std::sort(pickup.begin(), pickup.end());
  std::sort(send.begin(), send.end());
  bool pass = lost == 0 && duplicates == 0 && bad_signatures == 0;
  auto round = [](double v) { return std::round(v * 100) / 100; };
  auto summary = [&](const std::vector<double>& v) {
    return nlohmann::json{{"p50_ms", round(Percentile(v, 0.5))},
                          {"p95_ms", round(Percentile(v, 0.95))},
                          {"p99_ms", round(Percentile(v, 0.99))},
                          {"max_ms", round(v.empty() ? 0 : v.back())}};
  };
  nlohmann::json result = {
      {"scenario", "latency"},
      {"profile", knobs.profile},
      {"started_at", started_at},
      {"knobs", {{"LOAD_LATENCY_RATE", knobs.rate}, {"LOAD_LATENCY_DURATION_S", knobs.duration_s}}},
      {"sent", sent.sent.size()},
      {"delivered", pickup.size()},
      {"duplicates", duplicates},
      {"lost", lost},
      {"bad_signatures", bad_signatures},
      {"pickup", summary(pickup)},
      {"send", summary(send)},
      {"pass", pass}};
  if (!context.commit.empty()) result["commit"] = context.commit;

  auto row = [](const std::string& name, const std::vector<double>& v) {
    return std::vector<std::string>{name, FormatMs(Percentile(v, 0.5)),
                                    FormatMs(Percentile(v, 0.95)), FormatMs(Percentile(v, 0.99)),
                                    FormatMs(v.empty() ? 0 : v.back())};
  };
  Table table = {{"Latency (" + Thousands(static_cast<int64_t>(pickup.size())) + " of " +
                      Thousands(static_cast<int64_t>(sent.sent.size())) + " delivered)",
                  "p50", "p95", "p99", "max"},
                 row("COMMIT returned → request at the provider (pick-up)", pickup),
                 row("before BEGIN → request at the provider (send)", send)};
  std::string title = "latency — " + knobs.profile + " profile, " + FormatFixed(knobs.rate, 0) +
                      "/s, " + started_at + (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict = pass ? "every delivery arrived exactly once"
                             : "FAIL: " + std::to_string(lost) + " lost, " +
                                   std::to_string(duplicates) + " duplicated, " +
                                   std::to_string(bad_signatures) + " unsigned";
  PublishResult(context.results_dir, "latency", result, title, verdict, pass, {table});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
