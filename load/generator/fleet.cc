// The fleet scenario (fleet_scenarios.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
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

namespace {

// One drain of a burst to /hook/fast by whatever nodes run now.
struct Drain {
  Arrivals arrivals;
  size_t sent = 0;
  std::map<std::string, int64_t> per_node;      // jobs completed by each node
  std::vector<std::pair<double, double>> rate;  // deliveries/s after the first arrival
  bool all = false;
};

Drain DrainBurst(pqxx::connection& conn, MockClient& mock, const ScenarioContext& context,
                 const std::string& run, const FleetKnobs& knobs) {
  const std::string route = "/hook/fast";
  Burst burst =
      EnqueueBurst(conn, run, context.mock_url + route, "default", knobs.jobs, knobs.channels);
  mock.Reset();
  mock.SetSecrets(burst.secrets);
  ReleaseBurst(conn, burst);
  Drain d;
  d.all = WaitForArrivals(mock, route, knobs.jobs, std::chrono::seconds(600));
  std::vector<MockRecord> records = mock.Records(route);
  d.arrivals = TallyArrivals(records, burst.ids);
  d.rate = RatePerInterval(records, d.arrivals.first_us, 1.0);
  d.sent = burst.ids.size();
  // The results are written in batches a few ms after the request: wait for the last ones.
  for (int i = 0; i < 50; ++i) {
    pqxx::work tx(conn);
    d.per_node.clear();
    int64_t total = 0;
    for (const auto& row :
         tx.exec_params("SELECT attempted_by, count(*) FROM bulkhead.jobs "
                        "WHERE channel_id = ANY($1::bigint[]) AND state = 'completed' GROUP BY 1",
                        burst.ChannelArray())) {
      d.per_node[row[0].as<std::string>()] = row[1].as<int64_t>();
      total += row[1].as<int64_t>();
    }
    tx.commit();
    if (total >= static_cast<int64_t>(d.sent)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CancelWaiting(conn, burst.channels);
  return d;
}

std::string PerNode(const std::map<std::string, int64_t>& counts) {
  std::string text;
  for (const auto& [node, n] : counts) {
    text += (text.empty() ? "" : ", ") + Thousands(n);
  }
  return text.empty() ? "none" : text;
}

}  // namespace

int RunFleet(const ScenarioContext& context, const FleetKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  const int cap = ChannelCap(context.fleet.node_config, "default");

  pqxx::connection conn(context.database);
  if (!context.node.empty()) WaitForNode(conn, context.node, {"default"});
  MockClient mock(context.mock_url);
  std::string run = RunName("fleet");
  std::cout << "fleet: " << knobs.profile << " profile; " << knobs.jobs << " deliveries over "
            << knobs.channels << " channels to /hook/fast by 1 node, then by " << knobs.nodes
            << "; then " << knobs.hang_jobs << " to /hook/hang-dead (cap " << cap << " per node)"
            << std::endl;

  // 1. One node, then `nodes` nodes, on the same burst.
  Drain one = DrainBurst(conn, mock, context, run + "-one", knobs);
  NodeFleet fleet(context.fleet);
  StartNodes(fleet, conn, run, knobs.nodes - 1, "default");
  Drain many = DrainBurst(conn, mock, context, run + "-many", knobs);

  // 2. A hanging channel: the cap on every node, and the breaker for all of them.
  const std::string hang_route = "/hook/hang-dead";
  Burst hang = EnqueueBurst(conn, run + "-hang", context.mock_url + hang_route, "default",
                            knobs.hang_jobs, 1);
  mock.Reset();
  int64_t released_at = ReleaseBurst(conn, hang);
  std::map<std::string, int64_t> max_held;  // the most each node held at once
  std::string state = "closed";
  int64_t opened_at = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  auto stop_at = deadline;
  while (std::chrono::steady_clock::now() < stop_at) {
    pqxx::work tx(conn);
    auto row = tx.exec_params1(
        "SELECT breaker_state, (extract(epoch FROM breaker_changed_at) * 1000000)::bigint "
        "FROM bulkhead.channels WHERE id = $1",
        hang.channels[0]);
    for (const auto& held :
         tx.exec_params("SELECT attempted_by, count(*) FROM bulkhead.jobs "
                        "WHERE channel_id = $1 AND state = 'executing' GROUP BY 1",
                        hang.channels[0])) {
      int64_t& most = max_held[held[0].as<std::string>()];
      most = std::max(most, held[1].as<int64_t>());
    }
    tx.commit();
    if (opened_at == 0 && row[0].as<std::string>() != "closed") {
      state = row[0].as<std::string>();
      opened_at = row[1].as<int64_t>();
      // Watch five more seconds: no node may send it anything more.
      stop_at = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<MockRecord> hang_records = mock.Records(hang_route);
  CancelWaiting(conn, hang.channels);
  int after_open = 0, after_grace = 0;
  for (const MockRecord& r : hang_records) {
    if (opened_at && r.received_at_us > opened_at) ++after_open;
    // A claim that read the channel just before the open committed sends a moment later.
    if (opened_at && r.received_at_us > opened_at + 500'000) ++after_grace;
  }
  int64_t most = 0;
  for (const auto& [node, n] : max_held) most = std::max(most, n);

  double ratio = one.arrivals.rate() > 0 ? many.arrivals.rate() / one.arrivals.rate() : 0;
  auto clean = [](const Drain& d) {
    return d.all && d.arrivals.lost == 0 && d.arrivals.duplicates == 0 &&
           d.arrivals.bad_signatures == 0;
  };
  bool pass = clean(one) && clean(many) &&
              many.per_node.size() == static_cast<size_t>(knobs.nodes) && opened_at != 0 &&
              most <= cap && after_grace == 0;
  auto drain_json = [&](const Drain& d, int nodes) {
    nlohmann::json j = d.arrivals.ToJson(d.sent);
    j["nodes"] = nodes;
    j["completed_per_node"] = d.per_node;
    return j;
  };
  nlohmann::json result = {
      {"scenario", "fleet"},
      {"profile", knobs.profile},
      {"started_at", started_at},
      {"knobs",
       {{"LOAD_FLEET_JOBS", knobs.jobs},
        {"LOAD_FLEET_CHANNELS", knobs.channels},
        {"LOAD_FLEET_NODES", knobs.nodes},
        {"LOAD_FLEET_HANG_JOBS", knobs.hang_jobs}}},
      {"one_node", drain_json(one, 1)},
      {"fleet", drain_json(many, knobs.nodes)},
      {"throughput_ratio", RoundTo(ratio, 0.01)},
      {"hanging_channel",
       {{"channel_cap_per_node", cap},
        {"max_held_per_node", max_held},
        {"breaker", state},
        {"opened_after_s", opened_at ? RoundTo((opened_at - released_at) / 1e6, 0.01) : -1.0},
        {"requests", hang_records.size()},
        {"requests_after_open", after_open},
        {"requests_after_open_plus_500ms", after_grace}}},
      {"pass", pass}};
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table drains = {
      {"fleet: the same burst to /hook/fast", "1 node", std::to_string(knobs.nodes) + " nodes"},
      {"Delivered / enqueued",
       Thousands(one.arrivals.delivered) + " / " + Thousands(static_cast<int64_t>(one.sent)),
       Thousands(many.arrivals.delivered) + " / " + Thousands(static_cast<int64_t>(many.sent))},
      {"Duplicates / lost",
       std::to_string(one.arrivals.duplicates) + " / " + std::to_string(one.arrivals.lost),
       std::to_string(many.arrivals.duplicates) + " / " + std::to_string(many.arrivals.lost)},
      {"Completed per node", PerNode(one.per_node), PerNode(many.per_node)},
      {"Drained in", FormatFixed(one.arrivals.drain_s(), 2) + " s",
       FormatFixed(many.arrivals.drain_s(), 2) + " s"},
      {"Deliveries/s", Thousands(std::llround(one.arrivals.rate())),
       Thousands(std::llround(many.arrivals.rate())) + " (× " + FormatFixed(ratio, 2) + ")"}};
  std::string held_text;
  for (const auto& [node, n] : max_held)
    held_text += (held_text.empty() ? "" : ", ") + Thousands(n);
  Table hanging = {
      {"fleet: a channel to /hook/hang-dead", "value"},
      {"Most held at once per node (cap " + std::to_string(cap) + ")",
       held_text.empty() ? "none" : held_text},
      {"Breaker", opened_at
                      ? state + " after " + FormatFixed((opened_at - released_at) / 1e6, 2) + " s"
                      : "never opened within 60 s"},
      {"Requests to it, in all", Thousands(static_cast<int64_t>(hang_records.size()))},
      {"… sent after the breaker opened (after + 0.5 s)",
       std::to_string(after_open) + " (" + std::to_string(after_grace) + ")"}};
  std::string title = "fleet — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict =
      pass ? "every delivery arrived once, every node took part, the cap held on every node and "
             "the open breaker stopped the whole fleet"
           : "FAIL: lost or repeated deliveries, an idle node, a cap passed, or requests after "
             "the breaker opened";
  Chart chart{"The same burst: deliveries per second at the provider",
              "seconds after the first arrival",
              "deliveries/s (log scale)",
              {{"1 node", "#1f77b4", one.rate},
               {std::to_string(knobs.nodes) + " nodes", "#ff7f0e", many.rate}},
              {}};
  PublishResult(context.results_dir, "fleet", result, title, verdict, pass, {drains, hanging},
                {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
