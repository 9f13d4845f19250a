#include "dead_channel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <pqxx/pqxx>
#include <stdexcept>
#include <thread>

#include "app_sender.h"
#include "burst.h"
#include "mock_client.h"
#include "phase_stats.h"
#include "report.h"
#include "sampler.h"
#include "scenario_stack.h"

namespace bulkhead::load {
namespace {

namespace fs = std::filesystem;
using std::chrono::system_clock;

constexpr const char* kHealthyRoute = "/hook/healthy";
constexpr const char* kDeadRoute = "/hook/hang-dead";
// The healthy tenant's connections, as an application's pool would have.
constexpr int kSenderConnections = 10;

double Round(double v, double unit = 0.1) { return std::round(v / unit) * unit; }

// Per-second p50/p95/max of a phase's latencies, by send time: the charts' series.
nlohmann::json LatencyBySecond(const PhaseStats& stats) {
  std::map<int, std::vector<double>> buckets;
  for (const auto& [t, ms] : stats.points) buckets[static_cast<int>(t)].push_back(ms);
  nlohmann::json out = nlohmann::json::array();
  for (auto& [second, values] : buckets) {
    std::sort(values.begin(), values.end());
    out.push_back({{"t_s", second},
                   {"n", values.size()},
                   {"p50_ms", Round(Percentile(values, 0.5))},
                   {"p95_ms", Round(Percentile(values, 0.95))},
                   {"max_ms", Round(values.back())}});
  }
  return out;
}

nlohmann::json Timeline(const std::vector<TimelineRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) out.push_back(r.ToJson());
  return out;
}

struct Phase {
  SendReport sent;
  std::vector<TimelineRow> timeline;
  std::optional<int64_t> opened_at_us, parked_at_us;
  int64_t start_us = 0;
  SendReport backlog;
};

// One phase: the healthy conversations (and, when backlog > 0, the dead channel's backlog)
// from a common start, then the wait for the healthy messages to arrive.
Phase RunPhase(const ScenarioContext& context, const DeadChannelKnobs& knobs,
               const std::string& name, const Channel& healthy, const Channel& dead, int backlog,
               MockClient& mock, int64_t healthy_before) {
  Phase phase;
  // Half a second ahead, so that every sender thread is connected and waiting at the start.
  auto start = system_clock::now() + std::chrono::milliseconds(500);
  phase.start_us =
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count();
  Sampler sampler({context.database, context.mock_url, dead.id, healthy.id, phase.start_us});
  std::thread backlog_thread;
  if (backlog > 0) {
    backlog_thread = std::thread([&] {
      std::this_thread::sleep_until(start);
      phase.backlog = RunBacklog(context.database, dead.id, backlog, knobs.backlog_concurrency);
      sampler.BacklogDone();
    });
  } else {
    sampler.BacklogDone();
  }
  phase.sent = RunConversations({context.database, healthy.id, knobs.conversations, knobs.rate,
                                 std::chrono::seconds(knobs.duration_s), kSenderConnections, name},
                                start);
  if (backlog_thread.joinable()) backlog_thread.join();
  WaitForArrivals(mock, kHealthyRoute,
                  healthy_before + static_cast<int64_t>(phase.sent.sent.size()),
                  std::chrono::seconds(knobs.drain_timeout_s));
  sampler.Stop();
  if (!sampler.error().empty()) throw std::runtime_error("sampler: " + sampler.error());
  phase.timeline = sampler.timeline();
  phase.opened_at_us = sampler.opened_at_us();
  phase.parked_at_us = sampler.parked_at_us();
  for (const SendReport* r : {&phase.sent, &phase.backlog}) {
    if (r->errors > 0) {
      throw std::runtime_error(name + " phase: " + std::to_string(r->errors) +
                               " enqueues failed; the first: " + r->first_error);
    }
  }
  return phase;
}

}  // namespace

int RunDeadChannel(const ScenarioContext& context, const DeadChannelKnobs& knobs) {
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  pqxx::connection conn(context.database);
  if (!context.node.empty()) WaitForNode(conn, context.node, {"default", knobs.dead_tier});
  MockClient mock(context.mock_url);
  std::string run = RunName("dead_channel");
  Channel healthy =
      CreateTenantAndChannel(conn, run + "-healthy", "default", context.mock_url + kHealthyRoute);
  Channel dead =
      CreateTenantAndChannel(conn, run + "-dead", knobs.dead_tier, context.mock_url + kDeadRoute);
  mock.Reset();
  mock.SetSecrets({healthy.secret, dead.secret});

  std::cout << "dead_channel: " << knobs.profile << " profile, " << knobs.tier_mode()
            << " tier (healthy on default, dead on " << knobs.dead_tier << "); "
            << knobs.conversations << " conversations at " << knobs.rate << "/s for "
            << knobs.duration_s << " s per phase; backlog " << knobs.backlog << " by "
            << knobs.backlog_concurrency << " connections" << std::endl;
  std::cout << "dead_channel: baseline phase…" << std::endl;
  Phase baseline = RunPhase(context, knobs, "baseline", healthy, dead, 0, mock, 0);
  std::cout << "dead_channel: dead phase…" << std::endl;
  Phase dead_phase = RunPhase(context, knobs, "dead", healthy, dead, knobs.backlog, mock,
                              static_cast<int64_t>(baseline.sent.sent.size()));

  // What the provider saw.
  std::vector<MockRecord> records = mock.Records();
  auto stats = mock.Stats();
  std::map<std::string, std::vector<const MockRecord*>> healthy_arrivals;
  int64_t dead_requests = 0;
  for (const MockRecord& r : records) {
    if (r.route == kHealthyRoute) healthy_arrivals[r.webhook_id].push_back(&r);
    if (r.route == kDeadRoute) ++dead_requests;
  }
  PhaseStats b = Summarize(baseline.sent.sent, healthy_arrivals, baseline.start_us);
  PhaseStats d = Summarize(dead_phase.sent.sent, healthy_arrivals, dead_phase.start_us);
  // The next scenario on this stack starts without the dead channel's backlog.
  CancelWaiting(conn, {dead.id});

  // The gate.
  double limit = std::max(b.p95_ms * 1.2, b.p95_ms + 50);
  bool p95_ok = d.p95_ms <= limit;
  bool exactly_once = b.lost == 0 && d.lost == 0 && b.duplicates == 0 && d.duplicates == 0;
  bool opened = dead_phase.opened_at_us.has_value();
  bool signatures_ok = b.bad_signatures == 0 && d.bad_signatures == 0;
  bool pass = p95_ok && exactly_once && opened && signatures_ok;

  // Which dead-phase messages went over the limit, and the p95 before and after the parking.
  nlohmann::json over = {{"messages", 0}};
  std::vector<double> before, after;
  double parked_s = dead_phase.parked_at_us
                        ? static_cast<double>(*dead_phase.parked_at_us - dead_phase.start_us) / 1e6
                        : 1e18;
  for (const auto& [t, ms] : d.points) {
    (t < parked_s ? before : after).push_back(ms);
    if (ms > limit) {
      if (over["messages"] == 0) over["first_sent_s"] = Round(t);
      over["messages"] = over["messages"].get<int>() + 1;
      over["last_sent_s"] = Round(t);
    }
  }
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  auto seconds_after = [&](const std::optional<int64_t>& at) {
    return at ? nlohmann::json(Round(static_cast<double>(*at - dead_phase.start_us) / 1e6, 0.01))
              : nlohmann::json(nullptr);
  };

  nlohmann::json result = {
      {"scenario", "dead_channel"},
      {"profile", knobs.profile},
      {"tier_mode", knobs.tier_mode()},
      {"tiers", {{"healthy", "default"}, {"dead", knobs.dead_tier}}},
      {"started_at", started_at},
      {"knobs",
       {{"LOAD_DEAD_CONVERSATIONS", knobs.conversations},
        {"LOAD_DEAD_RATE", knobs.rate},
        {"LOAD_DEAD_DURATION_S", knobs.duration_s},
        {"LOAD_DEAD_BACKLOG", knobs.backlog},
        {"LOAD_DEAD_BACKLOG_CONCURRENCY", knobs.backlog_concurrency},
        {"LOAD_DEAD_TIER", knobs.dead_tier},
        {"LOAD_DRAIN_TIMEOUT_S", knobs.drain_timeout_s}}},
      {"phases", {{"baseline", b.ToJson()}, {"dead", d.ToJson()}}},
      {"gate",
       {{"limit_ms", Round(limit)},
        {"p95_ms", Round(d.p95_ms)},
        {"p95_within_limit", p95_ok},
        {"exactly_once", exactly_once},
        {"signatures_valid", signatures_ok},
        {"breaker_opened", opened},
        {"pass", pass},
        {"over_limit", over}}},
      {"breaker",
       {{"opened_after_s", seconds_after(dead_phase.opened_at_us)},
        {"parked_after_s", seconds_after(dead_phase.parked_at_us)},
        {"backlog", knobs.backlog},
        {"backlog_created_s",
         Round(static_cast<double>(dead_phase.backlog.finished_us - dead_phase.start_us) / 1e6,
               0.01)},
        {"dead_requests", dead_requests},
        {"max_inflight_dead", MockClient::RouteCounter(stats, kDeadRoute, "max_in_flight")},
        {"p95_sent_before_parked_ms", Round(Percentile(before, 0.95))},
        {"messages_sent_before_parked", before.size()},
        {"p95_sent_after_parked_ms", Round(Percentile(after, 0.95))},
        {"messages_sent_after_parked", after.size()}}},
      {"timeline",
       {{"baseline", Timeline(baseline.timeline)}, {"dead", Timeline(dead_phase.timeline)}}},
      {"latency_by_second", {{"baseline", LatencyBySecond(b)}, {"dead", LatencyBySecond(d)}}},
  };
  if (!context.commit.empty()) result["commit"] = context.commit;

  fs::path json_path =
      ResultsPath(context.results_dir, UtcNow("%Y-%m-%d") + "-dead_channel-" + knobs.tier_mode());
  fs::path html_path = fs::path(json_path).replace_extension(".html");
  result["report"] = html_path.filename().string();
  std::ofstream(json_path) << result.dump(2) << "\n";
  std::ofstream(html_path) << HtmlReport(result);
  std::cout << TextReport(result) << "\nresults: " << json_path.string()
            << "\nreport:  " << html_path.string() << std::endl;
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
