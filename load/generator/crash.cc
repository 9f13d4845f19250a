// The crash scenario (fleet_scenarios.h).
#include <signal.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <pqxx/pqxx>
#include <thread>
#include <variant>

#include "app_sender.h"
#include "burst.h"
#include "config.h"
#include "fleet_scenarios.h"
#include "mock_client.h"
#include "node_fleet.h"
#include "report.h"
#include "scenario_stack.h"

namespace bulkhead::load {

int RunCrash(const ScenarioContext& context, const FleetKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  pqxx::connection conn(context.database);
  if (!context.node.empty()) WaitForNode(conn, context.node, {"default"});
  int64_t lease_ms = NodeOptions{}.lease_ms;
  auto config = LoadConfig(context.fleet.node_config);
  if (auto* c = std::get_if<Config>(&config)) lease_ms = c->node.lease_ms;

  std::string run = RunName("crash");
  NodeFleet fleet(context.fleet);
  std::vector<std::string> own = StartNodes(fleet, conn, run, knobs.nodes - 1, "default");
  std::string victim;  // chosen at the kill: the scenario's node that holds the most then
  MockClient mock(context.mock_url);
  const std::string route = "/hook/healthy";
  std::cout << "crash: " << knobs.profile << " profile; " << knobs.jobs << " deliveries over "
            << knobs.channels << " channels to " << route << ", " << knobs.nodes
            << " nodes; SIGKILL to one of them at " << std::lround(100 * knobs.at) << " % delivered"
            << std::endl;
  Burst burst =
      EnqueueBurst(conn, run, context.mock_url + route, "default", knobs.jobs, knobs.channels);
  mock.Reset();
  mock.SetSecrets(burst.secrets);
  ReleaseBurst(conn, burst);

  // The kill: once `at` of the burst has arrived, of the scenario's node that holds the most
  // work — once one holds a cap's worth (10), or whichever holds most after 3 s, as long as it
  // holds something (looked at for up to 10 s more) — so that the kill strands requests in
  // flight rather than an idle node. (On a loaded machine the nodes do not share a burst
  // evenly: a full run at 00b9d7d killed a node holding one job, and a smoke run at 83c7656 in
  // a fresh clone, on a slow machine, one holding none, which fails the scenario.)
  int64_t threshold = std::llround(knobs.at * knobs.jobs);
  bool reached = WaitForArrivals(mock, route, threshold, std::chrono::seconds(300));
  std::set<std::string> held;
  // Each look takes the node that holds the most now: what one held at an earlier look may
  // have been written since.
  for (int i = 0; reached && i < 650; ++i) {
    size_t most = 0;
    for (const std::string& name : own) {
      size_t n = ExecutingOn(conn, name).size();
      if (victim.empty() || n > most) {
        victim = name;
        most = n;
      }
    }
    if (most >= 10 || (i >= 150 && most >= 1)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (victim.empty()) victim = own.front();
  fleet.Signal(victim, SIGKILL);
  int64_t killed_at = NowUs();
  int64_t delivered_at_kill = MockClient::RouteCounter(mock.Stats(), route, "unique_ids");
  // What it held at the kill: every job whose request may have reached the provider without
  // its result being written. Only these may arrive twice.
  held = ExecutingOn(conn, victim);

  // The rescue: the leader returns them once the victim's lease has run out.
  int64_t rescued_at = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(lease_ms) +
                  std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ExecutingOn(conn, victim).empty()) {
      rescued_at = NowUs();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  bool all = WaitForArrivals(mock, route, knobs.jobs, std::chrono::seconds(600));
  std::vector<MockRecord> records = mock.Records(route);
  Arrivals a = TallyArrivals(records, burst.ids);
  CancelWaiting(conn, burst.channels);

  int stray = 0;  // duplicates of jobs the victim did not hold: those would be a bug
  for (const std::string& id : a.duplicated_ids) stray += held.count(id) ? 0 : 1;
  double rescue_s = rescued_at ? (rescued_at - killed_at) / 1e6 : -1;
  bool pass = all && reached && a.lost == 0 && stray == 0 && a.bad_signatures == 0 &&
              rescued_at != 0 && !held.empty();

  nlohmann::json result = {{"scenario", "crash"},
                           {"profile", knobs.profile},
                           {"started_at", started_at},
                           {"knobs",
                            {{"LOAD_CRASH_JOBS", knobs.jobs},
                             {"LOAD_CRASH_CHANNELS", knobs.channels},
                             {"LOAD_CRASH_NODES", knobs.nodes},
                             {"LOAD_CRASH_KILL_AT", knobs.at}}},
                           {"nodes", knobs.nodes},
                           {"lease_ms", lease_ms},
                           {"killed_node", victim},
                           {"delivered_at_kill", delivered_at_kill},
                           {"held_at_kill", held.size()},
                           {"rescue_s", RoundTo(rescue_s, 0.01)},
                           {"duplicates_not_held_at_kill", stray},
                           {"pass", pass}};
  result.update(a.ToJson(burst.ids.size()));
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table table = {
      {"crash", "value"},
      {"Nodes (one killed with SIGKILL)", std::to_string(knobs.nodes)},
      {"Delivered / enqueued",
       Thousands(a.delivered) + " / " + Thousands(static_cast<int64_t>(burst.ids.size()))},
      {"Delivered when the kill came", Thousands(delivered_at_kill)},
      {"Jobs the killed node held (executing)", Thousands(static_cast<int64_t>(held.size()))},
      {"Rescued after the kill (lease " + Thousands(lease_ms) + " ms)",
       rescued_at ? FormatFixed(rescue_s, 2) + " s" : "not within the lease + 60 s"},
      {"Duplicates (all of jobs it held) / of other jobs",
       std::to_string(a.duplicates) + " / " + std::to_string(stray)},
      {"Lost", std::to_string(a.lost)},
      {"Drained in (first arrival → last)", FormatFixed(a.drain_s(), 2) + " s"},
      {"Deliveries/s", Thousands(std::llround(a.rate()))}};
  std::string title = "crash — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict =
      pass ? "every delivery arrived; the only repeats were of jobs the killed node held"
           : "FAIL: lost deliveries, repeats of jobs the killed node did not hold, no rescue, or "
             "nothing held at the kill";
  Chart chart{"Deliveries per second at the provider (0.5 s buckets)",
              "seconds after the first arrival",
              "deliveries/s (log scale)",
              {{"deliveries/s", "#1f77b4", RatePerInterval(records, a.first_us, 0.5)}},
              {{(killed_at - a.first_us) / 1e6, "SIGKILL"}}};
  if (rescued_at) chart.marks.emplace_back((rescued_at - a.first_us) / 1e6, "rescued");
  PublishResult(context.results_dir, "crash", result, title, verdict, pass, {table}, {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
