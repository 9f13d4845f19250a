// The webhook_burst scenario (scenarios.h).
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

int RunWebhookBurst(const ScenarioContext& context, const BurstKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  pqxx::connection conn(context.database);
  if (!context.node.empty()) WaitForNode(conn, context.node, {"default"});
  MockClient mock(context.mock_url);
  // The healthy provider's timing under two routes, so the mock counts them apart.
  const std::string busy_route = "/hook/busy", others_route = "/hook/others";
  const std::string timing = "?delay_ms=20-30";
  std::string run = RunName("webhook_burst");
  Channel busy = CreateTenantAndChannel(conn, run + "-busy", "default",
                                        context.mock_url + busy_route + timing);
  std::vector<Channel> others;
  std::vector<std::string> secrets = {busy.secret};
  for (int i = 0; i < knobs.tenants; ++i) {
    others.push_back(CreateTenantAndChannel(conn, run + "-other-" + std::to_string(i), "default",
                                            context.mock_url + others_route + timing));
    secrets.push_back(others.back().secret);
  }
  mock.Reset();
  mock.SetSecrets(secrets);
  std::cout << "webhook_burst: " << knobs.profile << " profile; a burst of " << knobs.burst
            << " on one channel by " << knobs.concurrency << " connections, while " << knobs.tenants
            << " other tenants send " << knobs.rate << "/s each for " << knobs.duration_s << " s"
            << std::endl;

  auto start = std::chrono::system_clock::now() + std::chrono::milliseconds(500);
  int64_t start_us =
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count();
  SendReport burst;
  std::thread burst_thread([&] {
    std::this_thread::sleep_until(start);
    burst = RunBacklog(context.database, busy.id, knobs.burst, knobs.concurrency);
  });
  std::vector<SendReport> other_sent(others.size());
  std::vector<std::thread> other_threads;
  for (size_t i = 0; i < others.size(); ++i) {
    other_threads.emplace_back([&, i] {
      other_sent[i] = RunConversations({context.database, others[i].id, 1, knobs.rate,
                                        std::chrono::seconds(knobs.duration_s), 1, "others"},
                                       start);
    });
  }
  burst_thread.join();
  for (auto& t : other_threads) t.join();
  std::vector<SentMessage> others_all;
  for (const SendReport& r : other_sent) {
    if (r.errors > 0) throw std::runtime_error("an enqueue failed: " + r.first_error);
    others_all.insert(others_all.end(), r.sent.begin(), r.sent.end());
  }
  if (burst.errors > 0) throw std::runtime_error("an enqueue failed: " + burst.first_error);
  WaitForArrivals(mock, busy_route, static_cast<int64_t>(burst.sent.size()),
                  std::chrono::seconds(600));
  WaitForArrivals(mock, others_route, static_cast<int64_t>(others_all.size()),
                  std::chrono::seconds(60));

  std::vector<MockRecord> records = mock.Records();
  std::map<std::string, std::vector<const MockRecord*>> arrivals;
  for (const MockRecord& r : records) arrivals[r.webhook_id].push_back(&r);
  PhaseStats b = Summarize(burst.sent, arrivals, start_us);
  PhaseStats o = Summarize(others_all, arrivals, start_us);
  int64_t last_busy = start_us;
  for (const MockRecord& r : records) {
    if (r.route == busy_route) last_busy = std::max(last_busy, r.received_at_us);
  }
  double enqueue_s = static_cast<double>(burst.finished_us - start_us) / 1e6;
  double drain_s = static_cast<double>(last_busy - start_us) / 1e6;
  bool pass = b.lost == 0 && b.duplicates == 0 && o.lost == 0 && o.duplicates == 0 &&
              b.bad_signatures == 0 && o.bad_signatures == 0;
  auto round = [](double v) { return std::round(v * 100) / 100; };
  nlohmann::json result = {
      {"scenario", "webhook_burst"},
      {"profile", knobs.profile},
      {"started_at", started_at},
      {"knobs",
       {{"LOAD_BURST_SIZE", knobs.burst},
        {"LOAD_BURST_CONCURRENCY", knobs.concurrency},
        {"LOAD_BURST_TENANTS", knobs.tenants},
        {"LOAD_BURST_RATE", knobs.rate},
        {"LOAD_BURST_DURATION_S", knobs.duration_s}}},
      {"burst",
       {{"sent", b.sent},
        {"delivered", b.delivered},
        {"duplicates", b.duplicates},
        {"lost", b.lost},
        {"enqueued_s", round(enqueue_s)},
        {"drained_s", round(drain_s)},
        {"deliveries_per_s", round(drain_s > 0 ? b.delivered / drain_s : 0)},
        {"max_in_flight", MockClient::RouteCounter(mock.Stats(), busy_route, "max_in_flight")}}},
      {"others", o.ToJson()},
      {"pass", pass}};
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table burst_table = {
      {"Busy channel's burst", "value"},
      {"Delivered / sent", Thousands(b.delivered) + " / " + Thousands(b.sent)},
      {"Duplicates / lost", std::to_string(b.duplicates) + " / " + std::to_string(b.lost)},
      {"Created in (" + std::to_string(knobs.concurrency) + " connections)",
       FormatFixed(enqueue_s, 2) + " s"},
      {"Drained in (burst start → last arrival)", FormatFixed(drain_s, 2) + " s"},
      {"Deliveries/s", FormatFixed(drain_s > 0 ? b.delivered / drain_s : 0, 0)},
      {"Requests in flight at the provider, max",
       std::to_string(result["burst"]["max_in_flight"].get<int64_t>())}};
  Table others_table = {
      {"Other tenants (" + std::to_string(knobs.tenants) + "), send → provider", "value"},
      {"Delivered / sent", Thousands(o.delivered) + " / " + Thousands(o.sent)},
      {"Duplicates / lost", std::to_string(o.duplicates) + " / " + std::to_string(o.lost)},
      {"p50 / p95 / p99 / max", FormatMs(o.p50_ms) + " / " + FormatMs(o.p95_ms) + " / " +
                                    FormatMs(o.p99_ms) + " / " + FormatMs(o.max_ms)}};
  std::string title = "webhook_burst — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict = pass ? "every delivery arrived exactly once"
                             : "FAIL: lost, duplicated or unsigned deliveries";
  PublishResult(context.results_dir, "webhook_burst", result, title, verdict, pass,
                {burst_table, others_table});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
