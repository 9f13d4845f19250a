// The failover scenario (fleet_scenarios.h, docs/load.md): what the fleet does when its
// primary dies and a standby takes over, when the old primary comes back as a standby and the
// roles are switched back, and when the primary turns read-only under open connections.
//
// The stack is load/run.sh's on a replicated pair (load/replicated_postgres.sh): every node and
// the application-like sender connect through one multi-host connection string with
// target_session_attrs=read-write, and nobody tells them about a failover. The scenario runs
// the cluster's steps through context.pg_control ("{}" is the action) while the sender enqueues
// a steady stream over many channels; it samples every node's /readyz and metrics, and judges
// each event once the stream has run `settle_s` past it. Runs on the calling thread plus the
// sender's threads and one sampler thread.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>

#include "app_sender.h"
#include "burst.h"
#include "fleet_scenarios.h"
#include "http_get.h"
#include "mock_client.h"
#include "node_fleet.h"
#include "node_sampler.h"
#include "report.h"
#include "scenario_stack.h"

namespace bulkhead::load {
namespace {

constexpr const char* kHealthyRoute = "/hook/healthy";
constexpr const char* kFailingRoute = "/hook/failing";

// One event as it happened.
struct Event {
  std::string name;
  std::vector<std::string> steps;  // pg_control actions, in order; `back_after` of them
  size_t back_after = 0;           // make the database writable again
  int hold_s = 0;                  // seconds between the fault's steps and the return's
  // Measured
  std::set<std::string> executing;  // jobs executing just before the fault
  int64_t lag_bytes = -1;           // WAL the standby had not flushed then; -1: none streaming
  int64_t snapshot_us = 0, fault_us = 0, back_us = 0, done_us = 0, judged_us = 0;
  std::vector<std::pair<std::string, double>> step_s;  // each step's duration
  bool steps_ok = true;
  std::string breaker_before, breaker_after;
  int trips_before = 0, trips_after = 0;
};

// Runs one control step; true when it exited 0.
bool Control(const std::string& command, const std::string& action, double& seconds) {
  std::string line = command;
  size_t at = line.find("{}");
  if (at == std::string::npos) throw std::runtime_error("--pg-control has no {} for the action");
  line.replace(at, 2, action);
  int64_t start = NowUs();
  int status = std::system(line.c_str());
  seconds = (NowUs() - start) / 1e6;
  if (status != 0) std::cerr << "failover: `" << line << "` failed (status " << status << ")\n";
  return status == 0;
}

// The failing channel's breaker state and trips.
std::pair<std::string, int> BreakerOf(pqxx::connection& conn, int64_t channel) {
  pqxx::work tx(conn);
  auto row = tx.exec_params1(
      "SELECT breaker_state, breaker_trips FROM bulkhead.channels WHERE id = $1", channel);
  return {row[0].as<std::string>(), row[1].as<int>()};
}

// Retries `f` on a fresh connection every 200 ms for up to 30 s: the database may be between
// primaries.
template <typename F>
auto WithDatabase(const std::string& database, F f) {
  for (int i = 0;; ++i) {
    try {
      pqxx::connection conn(database);
      return f(conn);
    } catch (const std::exception& e) {
      if (i >= 150) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

std::string Seconds(double s, int decimals = 2) {
  return s < 0 ? std::string("none") : FormatFixed(s, decimals) + " s";
}

}  // namespace

int RunFailover(const ScenarioContext& context, const FailoverKnobs& knobs) {
  if (context.pg_control.empty()) {
    throw std::runtime_error(
        "failover needs --pg-control COMMAND; load/run.sh passes it when LOAD_SCENARIOS is "
        "failover (it then runs a replicated pair, load/replicated_postgres.sh)");
  }
  const bool sync = knobs.replication == "sync";
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  std::string run = RunName("failover");
  MockClient mock(context.mock_url);
  NodeFleet fleet(context.fleet);

  // The nodes: load/run.sh's and nodes - 1 of the scenario's own, all on the multi-host string.
  std::vector<NodeView> nodes;
  std::vector<int64_t> healthy;
  int64_t failing = 0;
  std::vector<std::string> secrets;
  {
    pqxx::connection conn(context.database);
    if (!context.node.empty()) {
      nodes.push_back({context.node, MetricsUrl(context.fleet.node_config),
                       WaitForNode(conn, context.node, {"default"}).pid});
    }
    for (const std::string& name : StartNodes(fleet, conn, run, knobs.nodes - 1, "default")) {
      nodes.push_back({name, MetricsUrl(context.fleet.node_config.parent_path() / (name + ".json")),
                       WaitForNode(conn, name, {"default"}).pid});
    }
    for (int i = 0; i < knobs.channels; ++i) {
      Channel c = CreateTenantAndChannel(conn, run + "-" + std::to_string(i), "default",
                                         context.mock_url + kHealthyRoute);
      healthy.push_back(c.id);
      secrets.push_back(c.secret);
    }
    Channel f = CreateTenantAndChannel(conn, run + "-failing", "default",
                                       context.mock_url + kFailingRoute + "?status=500");
    failing = f.id;
    secrets.push_back(f.secret);
  }
  mock.Reset();
  mock.SetSecrets(secrets);
  double replication_s = 0;
  if (!Control(context.pg_control, knobs.replication, replication_s)) {
    throw std::runtime_error("could not set the replication to " + knobs.replication);
  }

  std::cout << "failover: " << knobs.profile << " profile, " << knobs.replication
            << " replication; " << knobs.rate << " enqueues/s over " << knobs.channels
            << " channels to " << kHealthyRoute << " and one to " << kFailingRoute << " (500), "
            << nodes.size() << " nodes on " << context.database << std::endl;

  NodeSampler sampler(nodes);
  std::atomic<bool> stop_sending{false};
  SteadyOptions steady;
  steady.database = context.database;
  steady.channels = healthy;
  steady.channels.push_back(failing);
  steady.rate = knobs.rate;
  steady.duration = std::chrono::hours(2);  // ended by stop_sending; bounded all the same
  steady.phase = "failover";
  steady.stop = &stop_sending;
  auto sending = std::async(std::launch::async, [&steady] {
    return RunSteady(steady, std::chrono::system_clock::now());
  });
  // Declared after `sending`, so destroyed before it: a step that throws stops the sender
  // instead of leaving the future's destructor waiting out its two hours.
  struct StopOnExit {
    std::atomic<bool>& flag;
    ~StopOnExit() { flag = true; }
  } stop_on_exit{stop_sending};
  std::this_thread::sleep_for(std::chrono::seconds(knobs.warmup_s));

  auto event = [](std::string name, std::vector<std::string> steps, size_t back_after, int hold_s) {
    Event e;
    e.name = std::move(name);
    e.steps = std::move(steps);
    e.back_after = back_after;
    e.hold_s = hold_s;
    return e;
  };
  std::vector<Event> events = {
      event("failover", {"kill-primary", "promote", "rewind"}, 2, 0),
      event("switchover", {"stop-primary", "promote", "rewind"}, 2, 0),
      event("read_only", {"read-only", "read-write"}, 2, knobs.read_only_s),
  };
  for (Event& e : events) {
    auto [state, trips] = WithDatabase(
        context.database, [failing](pqxx::connection& conn) { return BreakerOf(conn, failing); });
    e.breaker_before = state;
    e.trips_before = trips;
    e.executing = WithDatabase(context.database, [&e](pqxx::connection& conn) {
      pqxx::work tx(conn);
      std::set<std::string> ids;
      for (const auto& row : tx.exec("SELECT id FROM bulkhead.jobs WHERE state = 'executing'")) {
        ids.insert(row[0].as<std::string>());
      }
      // What an asynchronous standby lacks at this moment: the tail a crash now would lose.
      e.lag_bytes = tx.exec1(
                          "SELECT coalesce((SELECT max(pg_current_wal_lsn() - flush_lsn)::bigint "
                          "FROM pg_stat_replication WHERE state = 'streaming'), -1)")[0]
                        .as<int64_t>();
      return ids;
    });
    e.snapshot_us = NowUs();
    std::cout << "failover: event " << e.name << " (" << e.executing.size()
              << " jobs executing, breaker " << state << ")" << std::endl;
    e.fault_us = NowUs();
    for (size_t i = 0; i < e.steps.size(); ++i) {
      if (i > 0 && i == e.back_after - 1 && e.hold_s > 0) {
        std::this_thread::sleep_for(std::chrono::seconds(e.hold_s));
      }
      double seconds = 0;
      e.steps_ok = Control(context.pg_control, e.steps[i], seconds) && e.steps_ok;
      e.step_s.emplace_back(e.steps[i], seconds);
      if (i + 1 == e.back_after) e.back_us = NowUs();
    }
    e.done_us = NowUs();
    std::this_thread::sleep_until(
        std::chrono::system_clock::time_point(std::chrono::microseconds(e.back_us)) +
        std::chrono::seconds(knobs.settle_s));
    e.judged_us = NowUs();
    std::tie(e.breaker_after, e.trips_after) = WithDatabase(
        context.database, [failing](pqxx::connection& conn) { return BreakerOf(conn, failing); });
  }
  stop_sending = true;
  SendReport sent = sending.get();
  std::cout << "failover: " << sent.sent.size() << " enqueues committed, " << sent.errors
            << " refused (the application saw the error; first: " << sent.first_error << ")"
            << std::endl;

  // The healthy deliveries: every one whose enqueue committed should arrive. An id committed
  // twice can only be a sequence value handed out again after a lost tail (asynchronous
  // replication): the earlier job is gone, and counts as lost.
  std::map<std::string, const SentMessage*> committed;
  std::set<std::string> healthy_ids;
  std::set<int64_t> healthy_set(healthy.begin(), healthy.end());
  int reissued = 0;
  for (const SentMessage& m : sent.sent) {
    if (!healthy_set.count(m.channel)) continue;
    std::string id = std::to_string(m.job_id);
    auto [it, fresh] = committed.emplace(id, &m);
    if (!fresh) {
      ++reissued;
      if (m.committed_at_us > it->second->committed_at_us) it->second = &m;
    }
    healthy_ids.insert(id);
  }

  // In the database: committed enqueues whose row is not on the final primary, or is another
  // job under the same id (a sequence value handed out again after a lost tail).
  std::set<std::string> missing_in_db = WithDatabase(context.database, [&](pqxx::connection& conn) {
    std::vector<int64_t> ids;
    for (const auto& [id, m] : committed) ids.push_back(m->job_id);
    pqxx::work tx(conn);
    std::map<std::string, int64_t> stamp;
    for (const auto& row :
         tx.exec_params("SELECT id, (payload->>'sent_at_us')::bigint FROM bulkhead.jobs "
                        "WHERE id = ANY($1::bigint[])",
                        BigintArray(ids))) {
      stamp[row[0].as<std::string>()] = row[1].is_null() ? -1 : row[1].as<int64_t>();
    }
    std::set<std::string> missing;
    for (const auto& [id, m] : committed) {
      auto it = stamp.find(id);
      if (it == stamp.end() || it->second != m->sent_at_us) missing.insert(id);
    }
    return missing;
  });
  int64_t expected = static_cast<int64_t>(healthy_ids.size() - missing_in_db.size());
  bool drained =
      WaitForArrivals(mock, kHealthyRoute, expected, std::chrono::seconds(knobs.drain_s));
  sampler.Stop();
  std::vector<NodeSample> samples = sampler.Samples();
  std::vector<MockRecord> records = mock.Records(kHealthyRoute);
  std::vector<MockRecord> failing_records = mock.Records(kFailingRoute);
  Arrivals a = TallyArrivals(records, healthy_ids);

  // First arrival of each id, and which ids arrived more than once.
  std::map<std::string, int64_t> first_arrival;
  for (const MockRecord& r : records) {
    auto [it, fresh] = first_arrival.emplace(r.webhook_id, r.received_at_us);
    if (!fresh) it->second = std::min(it->second, r.received_at_us);
  }
  std::set<std::string> lost_ids;
  for (const std::string& id : healthy_ids) {
    if (!first_arrival.count(id) || missing_in_db.count(id)) lost_ids.insert(id);
  }

  // Per event: its window of commits runs from the previous event's judgement (the start for
  // the first) to its own.
  nlohmann::json event_json = nlohmann::json::array();
  Table table = {{"event", "committed", "delivered", "lost", "repeats / in flight",
                  "database back after", "first new delivery after back", "longest gap",
                  "not ready (nodes)", "leader after", "breaker before → after"}};
  Table readiness = {{"event", "node", "/readyz not 200 from", "to", "reasons seen",
                      "database errors +", "reconnects +"}};
  bool pass = drained;
  int64_t window_start = sent.started_us;
  std::set<std::string> explained_repeats;
  for (Event& e : events) {
    // The last window also takes the commits that landed while the sender was being stopped.
    const int64_t window_end = &e == &events.back() ? INT64_MAX : e.judged_us;
    int in_window = 0, delivered = 0, lost = 0;
    for (const auto& [id, m] : committed) {
      if (m->committed_at_us < window_start || m->committed_at_us >= window_end) continue;
      ++in_window;
      if (lost_ids.count(id)) {
        ++lost;
      } else {
        ++delivered;
      }
    }
    // Repeats: a repeat is this event's when the job was executing just before the fault or
    // first arrived between that snapshot and the database's return — in flight across it.
    std::set<std::string> in_flight = e.executing;
    for (const auto& [id, t] : first_arrival) {
      if (t >= e.snapshot_us && t <= e.back_us) in_flight.insert(id);
    }
    int repeats = 0;
    for (const std::string& id : a.duplicated_ids) {
      if (in_flight.count(id)) {
        ++repeats;
        explained_repeats.insert(id);
      }
    }
    // Resumption: the first delivery of an enqueue committed after the database's return.
    int64_t resumed_at = 0;
    for (const auto& [id, t] : first_arrival) {
      auto it = committed.find(id);
      if (it == committed.end() || it->second->committed_at_us < e.back_us) continue;
      if (resumed_at == 0 || t < resumed_at) resumed_at = t;
    }
    double resume_s = resumed_at ? (resumed_at - e.back_us) / 1e6 : -1;
    std::vector<int64_t> times;
    for (const MockRecord& r : records) {
      if (r.received_at_us >= e.fault_us - 1'000'000 && r.received_at_us <= e.judged_us) {
        times.push_back(r.received_at_us);
      }
    }
    std::sort(times.begin(), times.end());
    int64_t gap = 0;
    for (size_t i = 1; i < times.size(); ++i) gap = std::max(gap, times[i] - times[i - 1]);

    // What the nodes showed: /readyz from the fault to the judgement, the leader at the end,
    // the metrics' growth over the event.
    int not_ready_nodes = 0;
    bool all_ready_at_end = true;
    std::vector<std::string> leaders_after;
    nlohmann::json node_json = nlohmann::json::array();
    for (size_t n = 0; n < nodes.size(); ++n) {
      int64_t from = 0, to = 0;
      std::set<std::string> reasons;
      const NodeSample* before = nullptr;
      const NodeSample* last = nullptr;
      for (const NodeSample& s : samples) {
        if (s.node != n) continue;
        if (s.at_us < e.fault_us) {
          before = &s;
          continue;
        }
        if (s.at_us > e.judged_us) break;
        last = &s;
        if (s.readyz != 200) {
          if (from == 0) from = s.at_us;
          to = s.at_us;
          auto reason = nlohmann::json::parse(s.reasons, nullptr, false);
          if (!reason.is_discarded() && reason.contains("reasons")) {
            // Counts and times in a reason ("2 results waiting, none written for 7 s") become
            // N, so that each reason is listed once.
            for (const auto& r : reason["reasons"]) {
              reasons.insert(std::regex_replace(r.get<std::string>(), std::regex("[0-9]+"), "N"));
            }
          } else {
            reasons.insert(s.readyz == 0 ? "no answer" : "HTTP " + std::to_string(s.readyz));
          }
        }
      }
      if (from) ++not_ready_nodes;
      if (last == nullptr || last->readyz != 200) all_ready_at_end = false;
      if (last != nullptr && last->leader == 1) leaders_after.push_back(nodes[n].name);
      double errors = before && last ? last->db_errors - before->db_errors : 0;
      double reconnects = before && last ? last->reconnects - before->reconnects : 0;
      std::string reason_text;
      for (const std::string& r : reasons) reason_text += (reason_text.empty() ? "" : "; ") + r;
      readiness.push_back(
          {e.name, nodes[n].name,
           from ? Seconds((from - e.fault_us) / 1e6, 1) + " after the fault" : "always ready",
           from ? Seconds((to - e.back_us) / 1e6, 1) + " after back" : "", reason_text,
           FormatFixed(errors, 0), FormatFixed(reconnects, 0)});
      node_json.push_back(
          {{"node", nodes[n].name},
           {"not_ready_from_fault_s",
            from ? nlohmann::json(RoundTo((from - e.fault_us) / 1e6, 0.01)) : nlohmann::json()},
           {"not_ready_until_back_s",
            from ? nlohmann::json(RoundTo((to - e.back_us) / 1e6, 0.01)) : nlohmann::json()},
           {"readyz_reasons", reasons},
           {"ready_at_judgement", last != nullptr && last->readyz == 200},
           {"leader_at_judgement", last != nullptr && last->leader == 1},
           {"database_errors_delta", errors},
           {"reconnects_delta", reconnects}});
    }
    int survived = 0;
    for (const NodeView& n : nodes) survived += kill(n.pid, 0) == 0 ? 1 : 0;
    int leases_valid = WithDatabase(context.database, [&](pqxx::connection& conn) {
      pqxx::work tx(conn);
      int valid = 0;
      for (const NodeView& n : nodes) {
        valid += tx.exec_params1(
                       "SELECT count(*) FROM bulkhead.nodes WHERE name = $1 AND pid = $2 "
                       "AND lease_until > now()",
                       n.name, n.pid)[0]
                     .as<int>();
      }
      return valid;
    });
    bool breaker_kept = e.breaker_before != "closed" && e.breaker_after != "closed" &&
                        e.trips_after >= e.trips_before;
    int failing_requests = 0;
    for (const MockRecord& r : failing_records) {
      failing_requests += r.received_at_us >= e.fault_us && r.received_at_us <= e.judged_us;
    }
    bool event_pass = e.steps_ok && resume_s >= 0 && resume_s <= knobs.resume_s &&
                      leaders_after.size() == 1 && survived == static_cast<int>(nodes.size()) &&
                      leases_valid == static_cast<int>(nodes.size()) && breaker_kept &&
                      all_ready_at_end && (!sync || lost == 0);
    pass = pass && event_pass;
    std::string leader_text = leaders_after.empty() ? "none" : leaders_after.front();
    if (leaders_after.size() > 1) leader_text += " and " + std::to_string(leaders_after.size() - 1);
    table.push_back({e.name, Thousands(in_window), Thousands(delivered), std::to_string(lost),
                     std::to_string(repeats) + " / " + std::to_string(in_flight.size()),
                     Seconds((e.back_us - e.fault_us) / 1e6), Seconds(resume_s), Seconds(gap / 1e6),
                     std::to_string(not_ready_nodes) + " of " + std::to_string(nodes.size()),
                     leader_text,
                     e.breaker_before + " (" + std::to_string(e.trips_before) + ") → " +
                         e.breaker_after + " (" + std::to_string(e.trips_after) + ")"});
    nlohmann::json steps = nlohmann::json::object();
    for (const auto& [step, s] : e.step_s) steps[step] = RoundTo(s, 0.01);
    event_json.push_back({{"event", e.name},
                          {"steps_s", steps},
                          {"steps_ok", e.steps_ok},
                          {"committed", in_window},
                          {"delivered", delivered},
                          {"lost", lost},
                          {"repeats", repeats},
                          {"in_flight", in_flight.size()},
                          {"executing_at_fault", e.executing.size()},
                          {"standby_unflushed_bytes_before", e.lag_bytes},
                          {"database_back_after_s", RoundTo((e.back_us - e.fault_us) / 1e6, 0.01)},
                          {"steps_done_after_s", RoundTo((e.done_us - e.fault_us) / 1e6, 0.01)},
                          {"resume_s", RoundTo(resume_s, 0.01)},
                          {"longest_gap_s", RoundTo(gap / 1e6, 0.01)},
                          {"leaders_at_judgement", leaders_after},
                          {"nodes_survived", survived},
                          {"leases_valid", leases_valid},
                          {"breaker_before", e.breaker_before},
                          {"breaker_after", e.breaker_after},
                          {"breaker_trips_before", e.trips_before},
                          {"breaker_trips_after", e.trips_after},
                          {"failing_channel_requests", failing_requests},
                          {"nodes", node_json},
                          {"pass", event_pass}});
    window_start = e.judged_us;
  }
  int unexplained = static_cast<int>(a.duplicated_ids.size() - explained_repeats.size());
  if (sync) pass = pass && unexplained == 0 && missing_in_db.empty() && reissued == 0;
  pass = pass && a.bad_signatures == 0;

  nlohmann::json result = {{"scenario", "failover"},
                           {"profile", knobs.profile},
                           {"replication", knobs.replication},
                           {"started_at", started_at},
                           {"knobs",
                            {{"LOAD_FAILOVER_REPLICATION", knobs.replication},
                             {"LOAD_FAILOVER_RATE", knobs.rate},
                             {"LOAD_FAILOVER_CHANNELS", knobs.channels},
                             {"LOAD_FAILOVER_NODES", knobs.nodes},
                             {"LOAD_FAILOVER_WARMUP_S", knobs.warmup_s},
                             {"LOAD_FAILOVER_SETTLE_S", knobs.settle_s},
                             {"LOAD_FAILOVER_READ_ONLY_S", knobs.read_only_s},
                             {"LOAD_FAILOVER_RESUME_S", knobs.resume_s},
                             {"LOAD_FAILOVER_DRAIN_S", knobs.drain_s}}},
                           {"database", context.database},
                           {"nodes", nodes.size()},
                           {"enqueues_committed", healthy_ids.size()},
                           {"enqueues_refused", sent.errors},
                           {"first_refusal", sent.first_error},
                           {"missing_in_database", missing_in_db.size()},
                           {"ids_reissued", reissued},
                           {"lost_total", lost_ids.size() + reissued},
                           {"repeats_unexplained", unexplained},
                           {"drained", drained},
                           {"events", event_json},
                           {"pass", pass}};
  result.update(a.ToJson(healthy_ids.size()));
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table totals = {
      {"failover", "value"},
      {"Replication", knobs.replication},
      {"Healthy enqueues committed / enqueues refused (all channels)",
       Thousands(static_cast<int64_t>(healthy_ids.size())) + " / " + Thousands(sent.errors)},
      {"Delivered / committed",
       Thousands(a.delivered) + " / " + Thousands(static_cast<int64_t>(healthy_ids.size()))},
      {"Lost (never delivered, or missing on the final primary)",
       std::to_string(lost_ids.size() + reissued) + " (" + std::to_string(missing_in_db.size()) +
           " missing in the database, " + std::to_string(reissued) + " ids handed out again)"},
      {"Repeats (unexplained)",
       std::to_string(a.duplicates) + " (" + std::to_string(unexplained) + ")"},
      {"Bad signatures", std::to_string(a.bad_signatures)}};
  std::string title = "failover — " + knobs.profile + " profile, " + knobs.replication +
                      " replication, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict =
      pass ? (sync ? "every committed enqueue delivered, deliveries resumed within the limit "
                     "after each event, and leader, leases and the open breaker carried over"
                   : "deliveries resumed within the limit after each event, and leader, leases "
                     "and the open breaker carried over; the lost tail is measured above")
           : "FAIL: see the events table (lost deliveries, a late resumption, no leader, a "
             "lapsed lease, a breaker that closed, a node not ready at the end, or a failed "
             "step)";
  std::vector<std::pair<double, std::string>> marks;
  for (const Event& e : events) {
    marks.push_back({(e.fault_us - a.first_us) / 1e6, e.name});
    marks.push_back({(e.back_us - a.first_us) / 1e6, "back"});
  }
  Chart chart{"Deliveries per second at the provider (0.25 s buckets)",
              "seconds after the first arrival",
              "deliveries/s (log scale)",
              {{"deliveries/s", "#1f77b4", RatePerInterval(records, a.first_us, 0.25)}},
              marks};
  PublishResult(context.results_dir, sync ? "failover" : "failover-async", result, title, verdict,
                pass, {totals, table, readiness}, {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
