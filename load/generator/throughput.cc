// The throughput scenario (scenarios.h).
#include <cmath>
#include <iostream>
#include <pqxx/pqxx>

#include "burst.h"
#include "mock_client.h"
#include "report.h"
#include "scenario_stack.h"
#include "scenarios.h"

namespace bulkhead::load {

int RunThroughput(const ScenarioContext& context, const ThroughputKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  pqxx::connection conn(context.database);
  NodeInfo node;
  if (!context.node.empty()) node = WaitForNode(conn, context.node, {"default"});
  MockClient mock(context.mock_url);
  const std::string route = "/hook/fast";
  std::cout << "throughput: " << knobs.profile << " profile; " << knobs.jobs << " deliveries over "
            << knobs.channels << " channels to " << route << std::endl;
  Burst burst = EnqueueBurst(conn, RunName("throughput"), context.mock_url + route, "default",
                             knobs.jobs, knobs.channels);
  mock.Reset();
  mock.SetSecrets(burst.secrets);

  ProcessUsage before = ReadProcessUsage(node.pid);
  int64_t resumed_at = ReleaseBurst(conn, burst);
  bool all = WaitForArrivals(mock, route, knobs.jobs, std::chrono::seconds(600));
  ProcessUsage after = ReadProcessUsage(node.pid);

  std::vector<MockRecord> records = mock.Records(route);
  Arrivals a = TallyArrivals(records, burst.ids);
  double drain_s = a.drain_s();
  double cpu_s = after.cpu_s - before.cpu_s;
  bool pass = all && a.lost == 0 && a.duplicates == 0 && a.bad_signatures == 0;

  nlohmann::json result = {
      {"scenario", "throughput"},
      {"profile", knobs.profile},
      {"started_at", started_at},
      {"knobs",
       {{"LOAD_THROUGHPUT_JOBS", knobs.jobs}, {"LOAD_THROUGHPUT_CHANNELS", knobs.channels}}},
      {"enqueued_s", RoundTo(burst.enqueue_s, 0.01)},
      {"first_arrival_after_resume_s",
       a.first_us == 0 ? 0.0 : RoundTo(static_cast<double>(a.first_us - resumed_at) / 1e6, 0.01)},
      {"node",
       {{"cpu_s", RoundTo(cpu_s, 0.01)},
        {"cpu_share_of_one_core", drain_s > 0 ? RoundTo(cpu_s / drain_s, 0.01) : 0.0},
        {"rss_mib", RoundTo(after.rss_mib, 0.1)},
        {"peak_rss_mib", RoundTo(after.peak_rss_mib, 0.1)}}},
      {"pass", pass}};
  result.update(a.ToJson(burst.ids.size()));
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table table = {
      {"throughput", "value"},
      {"Deliveries delivered / enqueued",
       Thousands(a.delivered) + " / " + Thousands(static_cast<int64_t>(burst.ids.size()))},
      {"Duplicates / lost", std::to_string(a.duplicates) + " / " + std::to_string(a.lost)},
      {"Channels", std::to_string(knobs.channels)},
      {"Enqueued in (enqueue_many, 1,000 per call, inserted parked)",
       FormatFixed(burst.enqueue_s, 2) + " s"},
      {"Drained in (first arrival → last)", FormatFixed(drain_s, 2) + " s"},
      {"Deliveries/s", Thousands(std::llround(a.rate()))},
      {"Node CPU over the drain", FormatFixed(cpu_s, 2) + " s (" +
                                      FormatFixed(drain_s > 0 ? 100 * cpu_s / drain_s : 0, 0) +
                                      " % of one core)"},
      {"Node resident memory now / peak",
       FormatFixed(after.rss_mib, 1) + " / " + FormatFixed(after.peak_rss_mib, 1) + " MiB"}};
  std::string title = "throughput — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict = pass ? "every delivery arrived exactly once"
                             : "FAIL: lost, duplicated or unsigned deliveries";
  Chart chart{"Deliveries per second at the provider",
              "seconds after the first arrival",
              "deliveries/s (log scale)",
              {{"deliveries/s", "#1f77b4", RatePerInterval(records, a.first_us, 1.0)}},
              {}};
  PublishResult(context.results_dir, "throughput", result, title, verdict, pass, {table}, {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
