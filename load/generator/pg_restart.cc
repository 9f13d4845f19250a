// The pg_restart scenario (fleet_scenarios.h).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>

#include "app_sender.h"
#include "burst.h"
#include "fleet_scenarios.h"
#include "mock_client.h"
#include "node_fleet.h"
#include "report.h"
#include "scenario_stack.h"

namespace bulkhead::load {

int RunPgRestart(const ScenarioContext& context, const FleetKnobs& knobs) {
  if (context.pg_restart.empty()) {
    throw std::runtime_error(
        "pg_restart needs --pg-restart COMMAND; load/run.sh passes it when it runs the embedded "
        "PostgreSQL (not with DATABASE_URL)");
  }
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  std::string run = RunName("pg_restart");
  MockClient mock(context.mock_url);
  const std::string route = "/hook/healthy";
  NodeFleet fleet(context.fleet);
  std::vector<pid_t> pids;  // every node's pid before the restart
  Burst burst;
  {
    pqxx::connection conn(context.database);
    if (!context.node.empty()) pids.push_back(WaitForNode(conn, context.node, {"default"}).pid);
    for (const std::string& name : StartNodes(fleet, conn, run, knobs.nodes - 1, "default")) {
      pids.push_back(WaitForNode(conn, name, {"default"}).pid);
    }
    std::cout << "pg_restart: " << knobs.profile << " profile; " << knobs.jobs
              << " deliveries over " << knobs.channels << " channels to " << route << ", "
              << knobs.nodes << " nodes; PostgreSQL restarted at " << std::lround(100 * knobs.at)
              << " % delivered" << std::endl;
    burst =
        EnqueueBurst(conn, run, context.mock_url + route, "default", knobs.jobs, knobs.channels);
    mock.Reset();
    mock.SetSecrets(burst.secrets);
    ReleaseBurst(conn, burst);
  }  // the restart ends this connection; the scenario opens another after it

  int64_t threshold = std::llround(knobs.at * knobs.jobs);
  bool reached = WaitForArrivals(mock, route, threshold, std::chrono::seconds(300));
  int64_t restart_at = NowUs();
  int status = std::system(context.pg_restart.c_str());
  int64_t back_at = NowUs();
  bool all = WaitForArrivals(mock, route, knobs.jobs, std::chrono::seconds(600));

  std::vector<MockRecord> records = mock.Records(route);
  Arrivals a = TallyArrivals(records, burst.ids);
  std::vector<int64_t> times;
  for (const MockRecord& r : records) times.push_back(r.received_at_us);
  std::sort(times.begin(), times.end());
  int64_t gap = 0, next_after_back = 0;
  for (size_t i = 1; i < times.size(); ++i) gap = std::max(gap, times[i] - times[i - 1]);
  for (int64_t t : times) {
    if (t > back_at) {
      next_after_back = t;
      break;
    }
  }
  int survived = 0;
  for (pid_t pid : pids) survived += kill(pid, 0) == 0 ? 1 : 0;
  {
    pqxx::connection conn(context.database);
    CancelWaiting(conn, burst.channels);
  }

  double outage_s = (back_at - restart_at) / 1e6;
  double resumed_s = next_after_back ? (next_after_back - back_at) / 1e6 : -1;
  bool pass = reached && status == 0 && all && a.lost == 0 && a.bad_signatures == 0 &&
              survived == static_cast<int>(pids.size());

  nlohmann::json result = {{"scenario", "pg_restart"},
                           {"profile", knobs.profile},
                           {"started_at", started_at},
                           {"knobs",
                            {{"LOAD_PG_RESTART_JOBS", knobs.jobs},
                             {"LOAD_PG_RESTART_CHANNELS", knobs.channels},
                             {"LOAD_PG_RESTART_NODES", knobs.nodes},
                             {"LOAD_PG_RESTART_AT", knobs.at}}},
                           {"nodes", knobs.nodes},
                           {"nodes_survived", survived},
                           {"restart_exit_status", status},
                           {"restart_s", RoundTo(outage_s, 0.01)},
                           {"first_delivery_after_restart_s", RoundTo(resumed_s, 0.01)},
                           {"longest_gap_s", RoundTo(gap / 1e6, 0.01)},
                           {"pass", pass}};
  result.update(a.ToJson(burst.ids.size()));
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table table = {
      {"pg_restart", "value"},
      {"Nodes still the same process after the restart",
       std::to_string(survived) + " of " + std::to_string(pids.size())},
      {"Delivered / enqueued",
       Thousands(a.delivered) + " / " + Thousands(static_cast<int64_t>(burst.ids.size()))},
      {"Restart (fast shutdown + start) took", FormatFixed(outage_s, 2) + " s"},
      {"First delivery after the database was back",
       resumed_s >= 0 ? FormatFixed(resumed_s, 2) + " s" : "none"},
      {"Longest gap between deliveries", FormatFixed(gap / 1e6, 2) + " s"},
      {"Duplicates / lost", std::to_string(a.duplicates) + " / " + std::to_string(a.lost)},
      {"Drained in (first arrival → last)", FormatFixed(a.drain_s(), 2) + " s"},
      {"Deliveries/s", Thousands(std::llround(a.rate()))}};
  std::string title = "pg_restart — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict = pass ? "every delivery arrived and every node carried on"
                             : "FAIL: lost deliveries, a node that did not survive, or a restart "
                               "that failed";
  Chart chart{
      "Deliveries per second at the provider (0.25 s buckets)",
      "seconds after the first arrival",
      "deliveries/s (log scale)",
      {{"deliveries/s", "#1f77b4", RatePerInterval(records, a.first_us, 0.25)}},
      {{(restart_at - a.first_us) / 1e6, "restart"}, {(back_at - a.first_us) / 1e6, "back"}}};
  PublishResult(context.results_dir, "pg_restart", result, title, verdict, pass, {table}, {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
