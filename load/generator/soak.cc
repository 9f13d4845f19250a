// The soak scenario (fleet_scenarios.h).
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <set>
#include <stdexcept>
#include <thread>

#include "app_sender.h"
#include "burst.h"
#include "fleet_scenarios.h"
#include "mock_client.h"
#include "node_fleet.h"
#include "phase_stats.h"
#include "report.h"
#include "scenario_stack.h"

namespace bulkhead::load {

namespace {

constexpr const char* kHealthyRoute = "/hook/healthy";
constexpr const char* kDeadRoute = "/hook/hang-dead";
// Half its answers are 429 with Retry-After: 5 s, the others 200 after 20–30 ms: its jobs get
// through, some only after retries, and those still waiting at the end must be in the table.
constexpr const char* kThrottledRoute = "/hook/throttled";
constexpr const char* kThrottledQuery = "?delay_ms=20-30&fail=0.5&fail_status=429&retry_after=5";
// The application's pool: 200/s of ~1 ms transactions keep two busy; ten ride out stalls.
constexpr int kSenderConnections = 10;
constexpr auto kSampleEvery = std::chrono::seconds(1);

// Runs `fn` on `conn`, opening it first when there is none or a statement broke it (the
// database restarted). False when it failed: a sample lost, not the run.
template <typename F>
bool Try(std::unique_ptr<pqxx::connection>& conn, const std::string& database, F fn) {
  try {
    if (!conn || !conn->is_open()) conn = std::make_unique<pqxx::connection>(database);
    fn(*conn);
    return true;
  } catch (const std::exception&) {
    conn.reset();
    return false;
  }
}

// bulkhead.jobs on disk and in rows, and bulkhead.nodes: how the tables fare over the soak.
struct TableSizes {
  double at_s = 0;  // seconds after the start
  int64_t total_bytes = 0, heap_bytes = 0, index_bytes = 0;
  std::map<std::string, int64_t> each_index;  // bytes
  std::map<std::string, int64_t> by_state;    // rows
  int64_t nodes = 0;                          // rows of bulkhead.nodes

  nlohmann::json ToJson() const {
    return {{"at_s", RoundTo(at_s, 0.1)},
            {"jobs_total_bytes", total_bytes},
            {"jobs_heap_bytes", heap_bytes},
            {"jobs_index_bytes", index_bytes},
            {"jobs_each_index", each_index},
            {"jobs_by_state", by_state},
            {"nodes_rows", nodes}};
  }
};

TableSizes ReadTableSizes(pqxx::connection& conn, double at_s) {
  TableSizes t;
  t.at_s = at_s;
  pqxx::work tx(conn);
  // Every range's together (migration 0021: a partitioned table has no storage of its own).
  auto sizes = tx.exec1(
      "SELECT sum(pg_total_relation_size(r.relid)), sum(pg_relation_size(r.relid)), "
      "sum(pg_indexes_size(r.relid)), (SELECT count(*) FROM bulkhead.nodes) "
      "FROM pg_partition_tree('bulkhead.job_rows') r WHERE r.isleaf");
  t.total_bytes = sizes[0].as<int64_t>();
  t.heap_bytes = sizes[1].as<int64_t>();
  t.index_bytes = sizes[2].as<int64_t>();
  t.nodes = sizes[3].as<int64_t>();
  for (const auto& row :
       tx.exec("SELECT c.relname, (SELECT sum(pg_relation_size(t.relid)) "
               "FROM pg_partition_tree(c.oid) t WHERE t.isleaf)::bigint FROM pg_index i "
               "JOIN pg_class c ON c.oid = i.indexrelid "
               "WHERE i.indrelid = 'bulkhead.job_rows'::regclass")) {
    t.each_index[row[0].as<std::string>()] = row[1].as<int64_t>();
  }
  for (const auto& row : tx.exec("SELECT state, count(*) FROM bulkhead.jobs GROUP BY 1")) {
    t.by_state[row[0].as<std::string>()] = row[1].as<int64_t>();
  }
  tx.commit();
  return t;
}

// A channel's jobs by state.
std::map<std::string, int64_t> JobsByState(pqxx::connection& conn, int64_t channel) {
  pqxx::work tx(conn);
  std::map<std::string, int64_t> counts;
  for (const auto& row : tx.exec_params(
           "SELECT state, count(*) FROM bulkhead.jobs WHERE channel_id = $1 GROUP BY 1", channel)) {
    counts[row[0].as<std::string>()] = row[1].as<int64_t>();
  }
  tx.commit();
  return counts;
}

std::string Mib(int64_t bytes) { return FormatFixed(static_cast<double>(bytes) / 1048576, 1); }

std::string Counts(const std::map<std::string, int64_t>& counts) {
  std::string text;
  for (const auto& [name, n] : counts)
    text += (text.empty() ? "" : ", ") + name + " " + Thousands(n);
  return text.empty() ? "none" : text;
}

struct Kill {
  std::string node;
  double at_s = 0;
  int64_t at_us = 0;
  std::set<std::string> held;  // executing on it at the kill: the only jobs it may repeat
  double rescued_s = -1;       // kill → none of `held` still executing from before the kill
  double replaced_s = -1;      // kill → its replacement registered
};

struct Restart {
  double at_s = 0;
  double took_s = 0;
  int status = 0;
};

struct Window {
  int64_t sent = 0, arrived = 0;
  std::vector<double> latencies_ms;  // first arrival − send, healthy channels
};

}  // namespace

int RunSoak(const ScenarioContext& context, const SoakKnobs& knobs) {
  if (context.pg_restart.empty()) {
    throw std::runtime_error(
        "soak needs --pg-restart COMMAND; load/run.sh passes it when it runs the embedded "
        "PostgreSQL (not with DATABASE_URL)");
  }
  std::string started_at = UtcNow("%Y-%m-%dT%H:%M:%SZ");
  const int cap = ChannelCap(context.fleet.node_config, "default");
  const double duration_s = knobs.minutes * 60;
  std::string run = RunName("soak");
  MockClient mock(context.mock_url);
  NodeFleet fleet(context.fleet);
  std::map<std::string, pid_t> pids;  // the node of each name now
  std::vector<std::string> own;       // the scenario's nodes: the ones it kills
  std::vector<int64_t> healthy;
  Channel dead, throttled;
  std::vector<std::string> secrets;
  TableSizes at_start;
  {
    pqxx::connection conn(context.database);
    if (!context.node.empty())
      pids[context.node] = WaitForNode(conn, context.node, {"default"}).pid;
    own = StartNodes(fleet, conn, run, knobs.nodes - 1, "default");
    for (const std::string& name : own) pids[name] = WaitForNode(conn, name, {"default"}).pid;
    for (int i = 0; i < knobs.channels; ++i) {
      Channel c = CreateTenantAndChannel(conn, run + "-" + std::to_string(i), "default",
                                         context.mock_url + kHealthyRoute);
      healthy.push_back(c.id);
      secrets.push_back(c.secret);
    }
    dead = CreateTenantAndChannel(conn, run + "-dead", "default", context.mock_url + kDeadRoute);
    throttled = CreateTenantAndChannel(conn, run + "-throttled", "default",
                                       context.mock_url + kThrottledRoute + kThrottledQuery);
    secrets.push_back(dead.secret);
    secrets.push_back(throttled.secret);
    at_start = ReadTableSizes(conn, 0);
  }  // the restarts end connections: the loop below opens its own again as needed
  mock.Reset();
  mock.SetSecrets(secrets);

  // The faults, in time order: a kill at kill_at and a restart at restart_at of each period.
  std::vector<std::pair<double, bool>> faults;  // seconds after the start, is a kill
  for (double p = 0; p < duration_s; p += knobs.period_s) {
    if (p + knobs.kill_at * knobs.period_s < duration_s)
      faults.emplace_back(p + knobs.kill_at * knobs.period_s, true);
    if (p + knobs.restart_at * knobs.period_s < duration_s)
      faults.emplace_back(p + knobs.restart_at * knobs.period_s, false);
  }
  std::sort(faults.begin(), faults.end());
  std::cout << "soak: " << knobs.profile << " profile; " << FormatFixed(knobs.minutes, 1)
            << " min at " << FormatFixed(knobs.rate, 0) << "/s over " << knobs.channels
            << " channels to " << kHealthyRoute << " + one to " << kDeadRoute << " + one to "
            << kThrottledRoute << kThrottledQuery << ", " << knobs.nodes << " nodes; every "
            << knobs.period_s << " s a SIGKILL at " << std::lround(100 * knobs.kill_at)
            << " % and a PostgreSQL restart at " << std::lround(100 * knobs.restart_at) << " %"
            << std::endl;

  // The application: one share per healthy channel, one for the dead and one for the throttled.
  SteadyOptions steady{context.database,   healthy,
                       knobs.rate,         std::chrono::seconds(std::llround(duration_s)),
                       kSenderConnections, "soak"};
  steady.channels.push_back(dead.id);
  steady.channels.push_back(throttled.id);
  auto start = std::chrono::system_clock::now() + std::chrono::seconds(1);
  const int64_t start_us =
      std::chrono::duration_cast<std::chrono::microseconds>(start.time_since_epoch()).count();
  SendReport sent;
  std::thread sender([&] { sent = RunSteady(steady, start); });

  // The faults and the samples, on this thread, until the application stops.
  std::unique_ptr<pqxx::connection> conn;
  std::vector<Kill> kills;
  std::vector<Restart> restarts;
  std::vector<TableSizes> sizes = {at_start};
  std::map<std::string, int64_t> dead_most;  // the most of the dead channel each node held
  std::map<std::string, double> peak_rss;    // MiB, per node name (VmHWM of each process)
  double dead_opened_s = -1;
  int samples_lost = 0;
  auto elapsed = [&] { return (NowUs() - start_us) / 1e6; };
  size_t next_fault = 0;
  int next_window = 1;
  auto next_sample = std::chrono::steady_clock::now();
  while (elapsed() < duration_s) {
    if (next_fault < faults.size() && elapsed() >= faults[next_fault].first) {
      if (faults[next_fault].second) {
        // SIGKILL to the scenario's node that holds the most, then its supervisor's restart
        // under the same name and config (see docs/load.md for why the same name).
        Kill k;
        size_t most = 0;
        Try(conn, context.database, [&](pqxx::connection& c) {
          for (const std::string& name : own) {
            size_t n = ExecutingOn(c, name).size();
            if (k.node.empty() || n > most) {
              k.node = name;
              most = n;
            }
          }
        });
        if (k.node.empty()) k.node = own.front();
        fleet.Signal(k.node, SIGKILL);
        k.at_us = NowUs();
        k.at_s = (k.at_us - start_us) / 1e6;
        Try(conn, context.database, [&](pqxx::connection& c) { k.held = ExecutingOn(c, k.node); });
        pid_t pid = fleet.Start(k.node);
        Try(conn, context.database, [&](pqxx::connection& c) {
          WaitForNode(c, k.node, {"default"}, pid);
          k.replaced_s = (NowUs() - k.at_us) / 1e6;
        });
        pids[k.node] = pid;
        std::cout << "soak: " << FormatFixed(k.at_s, 1) << " s: SIGKILL to " << k.node
                  << " holding " << k.held.size() << " jobs; replaced after "
                  << FormatFixed(k.replaced_s, 2) << " s" << std::endl;
        kills.push_back(std::move(k));
      } else {
        Restart r;
        r.at_s = elapsed();
        conn.reset();
        r.status = std::system(context.pg_restart.c_str());
        r.took_s = elapsed() - r.at_s;
        std::cout << "soak: " << FormatFixed(r.at_s, 1) << " s: PostgreSQL restarted in "
                  << FormatFixed(r.took_s, 2) << " s (exit status " << r.status << ")" << std::endl;
        restarts.push_back(r);
      }
      ++next_fault;
    }
    if (std::chrono::steady_clock::now() >= next_sample) {
      next_sample += kSampleEvery;
      bool ok = Try(conn, context.database, [&](pqxx::connection& c) {
        pqxx::work tx(c);
        auto breaker =
            tx.exec_params1("SELECT breaker_state FROM bulkhead.channels WHERE id = $1", dead.id);
        if (dead_opened_s < 0 && breaker[0].as<std::string>() != "closed")
          dead_opened_s = elapsed();
        for (const auto& row :
             tx.exec_params("SELECT attempted_by, count(*) FROM bulkhead.jobs "
                            "WHERE channel_id = $1 AND state = 'executing' GROUP BY 1",
                            dead.id)) {
          int64_t& most = dead_most[row[0].as<std::string>()];
          most = std::max(most, row[1].as<int64_t>());
        }
        for (Kill& k : kills) {
          if (k.rescued_s >= 0) continue;
          std::vector<int64_t> ids;
          for (const std::string& id : k.held) ids.push_back(std::stoll(id));
          auto left = tx.exec_params1(
              "SELECT count(*) FROM bulkhead.jobs WHERE id = ANY($1::bigint[]) "
              "AND state = 'executing' AND attempted_at < to_timestamp($2::double precision / 1e6)",
              BigintArray(ids), k.at_us);
          if (left[0].as<int64_t>() == 0) k.rescued_s = (NowUs() - k.at_us) / 1e6;
        }
        tx.commit();
        if (elapsed() >= next_window * static_cast<double>(knobs.period_s)) {
          sizes.push_back(ReadTableSizes(c, elapsed()));
          ++next_window;
        }
      });
      samples_lost += ok ? 0 : 1;
      for (const auto& [name, pid] : pids) {
        double& peak = peak_rss[name];
        peak = std::max(peak, ReadProcessUsage(pid).peak_rss_mib);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  sender.join();
  const double enqueued_until_s = elapsed();

  // The drain: every healthy delivery committed has to arrive, within drain_s.
  std::set<int64_t> healthy_set(healthy.begin(), healthy.end());
  std::set<std::string> healthy_ids, throttled_ids;
  int64_t dead_sent = 0;
  for (const SentMessage& m : sent.sent) {
    if (healthy_set.count(m.channel)) {
      healthy_ids.insert(std::to_string(m.job_id));
    } else if (m.channel == throttled.id) {
      throttled_ids.insert(std::to_string(m.job_id));
    } else {
      ++dead_sent;
    }
  }
  auto drain_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(knobs.drain_s);
  std::vector<MockRecord> records;
  Arrivals a;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::seconds>(drain_deadline -
                                                                 std::chrono::steady_clock::now());
    WaitForArrivals(mock, kHealthyRoute, static_cast<int64_t>(healthy_ids.size()),
                    std::max(left, std::chrono::seconds(1)));
    records = mock.Records(kHealthyRoute);
    a = TallyArrivals(records, healthy_ids);
    if (a.lost == 0 || std::chrono::steady_clock::now() >= drain_deadline) break;
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  const double drained_s = elapsed() - enqueued_until_s;

  // Repeats: only of jobs a killed node held.
  std::set<std::string> held_all;
  for (const Kill& k : kills) held_all.insert(k.held.begin(), k.held.end());
  int stray = 0;
  for (const std::string& id : a.duplicated_ids) stray += held_all.count(id) ? 0 : 1;

  // Latency per window, by send time: the first arrival of each healthy job.
  std::map<std::string, int64_t> first_arrival;
  for (const MockRecord& r : records) {
    auto [it, inserted] = first_arrival.emplace(r.webhook_id, r.received_at_us);
    if (!inserted) it->second = std::min(it->second, r.received_at_us);
  }
  std::map<int, Window> windows;
  const double window_us = knobs.period_s * 1e6;
  for (const SentMessage& m : sent.sent) {
    if (!healthy_set.count(m.channel)) continue;
    Window& w = windows[static_cast<int>((m.sent_at_us - start_us) / window_us)];
    ++w.sent;
    auto it = first_arrival.find(std::to_string(m.job_id));
    if (it == first_arrival.end()) continue;
    ++w.arrived;
    w.latencies_ms.push_back((it->second - m.sent_at_us) / 1e3);
  }

  // The end state: the throttled and dead channels, the tables, the nodes.
  std::map<std::string, int64_t> throttled_states, dead_states;
  int64_t throttled_in_table = 0;
  std::string dead_breaker = "?", throttled_breaker = "?";
  std::vector<nlohmann::json> node_rows;
  TableSizes at_end;
  bool end_read = false;
  for (int i = 0; i < 30 && !end_read; ++i) {
    end_read = Try(conn, context.database, [&](pqxx::connection& c) {
      throttled_states = JobsByState(c, throttled.id);
      dead_states = JobsByState(c, dead.id);
      std::vector<int64_t> ids;
      for (const std::string& id : throttled_ids) ids.push_back(std::stoll(id));
      pqxx::work tx(c);
      throttled_in_table =
          tx.exec_params1("SELECT count(*) FROM bulkhead.jobs WHERE id = ANY($1::bigint[])",
                          BigintArray(ids))[0]
              .as<int64_t>();
      dead_breaker =
          tx.exec_params1("SELECT breaker_state FROM bulkhead.channels WHERE id = $1", dead.id)[0]
              .as<std::string>();
      throttled_breaker =
          tx.exec_params1("SELECT breaker_state FROM bulkhead.channels WHERE id = $1",
                          throttled.id)[0]
              .as<std::string>();
      node_rows.clear();
      for (const auto& row :
           tx.exec("SELECT name, coalesce(pid, 0), lease_until > now() FROM bulkhead.nodes "
                   "ORDER BY name")) {
        node_rows.push_back({{"name", row[0].as<std::string>()},
                             {"pid", row[1].as<int64_t>()},
                             {"lease_running", row[2].as<bool>()}});
      }
      tx.commit();
      at_end = ReadTableSizes(c, elapsed());
    });
    if (!end_read) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (!end_read) throw std::runtime_error("the database did not answer after the soak");
  sizes.push_back(at_end);
  nlohmann::json stats = mock.Stats();
  int64_t throttled_429 = 0;
  if (stats["routes"].contains(kThrottledRoute)) {
    throttled_429 = stats["routes"][kThrottledRoute]["answers"].value("429", int64_t{0});
  }
  int survived = 0;
  for (const auto& [name, pid] : pids) survived += kill(pid, 0) == 0 ? 1 : 0;
  Try(conn, context.database, [&](pqxx::connection& c) {
    std::vector<int64_t> all = healthy;
    all.push_back(dead.id);
    all.push_back(throttled.id);
    CancelWaiting(c, all);
  });

  int64_t throttled_gone = 0;  // given up on or cancelled: a throttled job must not be
  for (const char* s : {"discarded", "cancelled"}) {
    if (throttled_states.count(s)) throttled_gone += throttled_states[s];
  }
  bool throttled_ok =
      throttled_in_table == static_cast<int64_t>(throttled_ids.size()) && throttled_gone == 0;
  int64_t dead_most_any = 0;
  for (const auto& [node, n] : dead_most) dead_most_any = std::max(dead_most_any, n);
  bool rescued = std::all_of(kills.begin(), kills.end(),
                             [](const Kill& k) { return k.rescued_s >= 0 && k.replaced_s >= 0; });
  bool restarted =
      std::all_of(restarts.begin(), restarts.end(), [](const Restart& r) { return r.status == 0; });
  int kills_planned = 0;
  for (const auto& f : faults) kills_planned += f.second ? 1 : 0;
  bool faults_done = kills.size() == static_cast<size_t>(kills_planned) &&
                     restarts.size() == faults.size() - kills_planned;
  bool pass = !healthy_ids.empty() && a.lost == 0 && a.bad_signatures == 0 && stray == 0 &&
              throttled_ok && dead_opened_s >= 0 && dead_most_any <= cap && rescued && restarted &&
              faults_done && survived == static_cast<int>(pids.size());

  // The result.
  nlohmann::json kills_json = nlohmann::json::array(), restarts_json = nlohmann::json::array();
  for (const Kill& k : kills) {
    kills_json.push_back({{"node", k.node},
                          {"at_s", RoundTo(k.at_s, 0.1)},
                          {"held", k.held.size()},
                          {"rescued_s", RoundTo(k.rescued_s, 0.01)},
                          {"replaced_s", RoundTo(k.replaced_s, 0.01)}});
  }
  for (const Restart& r : restarts) {
    restarts_json.push_back({{"at_s", RoundTo(r.at_s, 0.1)},
                             {"took_s", RoundTo(r.took_s, 0.01)},
                             {"exit_status", r.status}});
  }
  nlohmann::json windows_json = nlohmann::json::array();
  for (auto& [i, w] : windows) {
    std::sort(w.latencies_ms.begin(), w.latencies_ms.end());
    windows_json.push_back(
        {{"from_s", i * knobs.period_s},
         {"sent", w.sent},
         {"arrived", w.arrived},
         {"p50_ms", RoundTo(Percentile(w.latencies_ms, 0.5), 0.1)},
         {"p99_ms", RoundTo(Percentile(w.latencies_ms, 0.99), 0.1)},
         {"max_ms", RoundTo(w.latencies_ms.empty() ? 0 : w.latencies_ms.back(), 0.1)}});
  }
  nlohmann::json sizes_json = nlohmann::json::array();
  for (const TableSizes& t : sizes) sizes_json.push_back(t.ToJson());
  nlohmann::json rss_json = nlohmann::json::object();
  for (const auto& [name, mib] : peak_rss) rss_json[name] = RoundTo(mib, 0.1);
  nlohmann::json result = {{"scenario", "soak"},
                           {"profile", knobs.profile},
                           {"started_at", started_at},
                           {"knobs",
                            {{"LOAD_SOAK_MINUTES", knobs.minutes},
                             {"LOAD_SOAK_RATE", knobs.rate},
                             {"LOAD_SOAK_CHANNELS", knobs.channels},
                             {"LOAD_SOAK_NODES", knobs.nodes},
                             {"LOAD_SOAK_PERIOD_S", knobs.period_s},
                             {"LOAD_SOAK_KILL_AT", knobs.kill_at},
                             {"LOAD_SOAK_RESTART_AT", knobs.restart_at},
                             {"LOAD_SOAK_DRAIN_S", knobs.drain_s}}},
                           {"nodes", knobs.nodes},
                           {"enqueued", sent.sent.size()},
                           {"enqueue_errors", sent.errors},
                           {"first_enqueue_error", sent.first_error},
                           {"drained_after_last_enqueue_s", RoundTo(drained_s, 0.1)},
                           {"kills", kills_json},
                           {"restarts", restarts_json},
                           {"held_at_kills", held_all.size()},
                           {"duplicates_not_held_at_kills", stray},
                           {"healthy", a.ToJson(healthy_ids.size())},
                           {"latency_windows", windows_json},
                           {"throttled_channel",
                            {{"sent", throttled_ids.size()},
                             {"in_table", throttled_in_table},
                             {"by_state", throttled_states},
                             {"answers_429", throttled_429},
                             {"breaker", throttled_breaker}}},
                           {"dead_channel",
                            {{"sent", dead_sent},
                             {"by_state", dead_states},
                             {"breaker", dead_breaker},
                             {"opened_at_s", RoundTo(dead_opened_s, 0.1)},
                             {"channel_cap_per_node", cap},
                             {"max_held_per_node", dead_most}}},
                           {"table_sizes", sizes_json},
                           {"nodes_rows", node_rows},
                           {"nodes_survived", survived},
                           {"peak_rss_mib", rss_json},
                           {"samples_lost", samples_lost},
                           {"pass", pass}};
  if (!context.commit.empty()) result["commit"] = context.commit;

  std::string held_text;
  for (const auto& [node, n] : dead_most)
    held_text += (held_text.empty() ? "" : ", ") + Thousands(n);
  std::string rss_text;
  for (const auto& [name, mib] : peak_rss)
    rss_text += (rss_text.empty() ? "" : ", ") + FormatFixed(mib, 0);
  std::string kill_text, restart_text;
  for (const Kill& k : kills) {
    kill_text += (kill_text.empty() ? "" : "; ") + FormatFixed(k.at_s, 0) +
                 " s: " + std::to_string(k.held.size()) + " held, rescued " +
                 (k.rescued_s >= 0 ? FormatFixed(k.rescued_s, 1) + " s" : "never");
  }
  for (const Restart& r : restarts) {
    restart_text += (restart_text.empty() ? "" : "; ") + FormatFixed(r.at_s, 0) + " s, took " +
                    FormatFixed(r.took_s, 1) + " s";
  }
  Table summary = {
      {"soak", "value"},
      {"Enqueued (refused while the database restarted)",
       Thousands(static_cast<int64_t>(sent.sent.size())) + " (" + Thousands(sent.errors) + ")"},
      {"Healthy: delivered / enqueued",
       Thousands(a.delivered) + " / " + Thousands(static_cast<int64_t>(healthy_ids.size()))},
      {"Healthy: lost", std::to_string(a.lost)},
      {"Healthy: repeats / held by killed nodes / repeats of others",
       std::to_string(a.duplicates) + " / " + std::to_string(held_all.size()) + " / " +
           std::to_string(stray)},
      {"Drained after the last enqueue", FormatFixed(drained_s, 1) + " s"},
      {"SIGKILLs (node restarted, same name)", kill_text.empty() ? "none" : kill_text},
      {"PostgreSQL restarts", restart_text.empty() ? "none" : restart_text},
      {"Throttled (429 half the time): in table / enqueued",
       Thousands(throttled_in_table) + " / " +
           Thousands(static_cast<int64_t>(throttled_ids.size()))},
      {"Throttled: by state (429s answered)",
       Counts(throttled_states) + " (" + Thousands(throttled_429) + ")"},
      {"Dead: breaker first open at / now",
       (dead_opened_s >= 0 ? FormatFixed(dead_opened_s, 1) + " s" : "never") + " / " +
           dead_breaker},
      {"Dead: most held per node (cap " + std::to_string(cap) + ")",
       held_text.empty() ? "none" : held_text},
      {"Dead: by state", Counts(dead_states)},
      {"Nodes alive at the end (not killed by the scenario)",
       std::to_string(survived) + " of " + std::to_string(pids.size())},
      {"Peak RSS per node, MiB", rss_text}};
  Table latency = {{"Window (by send time)", "sent", "arrived", "p50", "p99", "max"}};
  for (const auto& w : windows_json) {
    int from = w["from_s"].get<int>();
    latency.push_back({std::to_string(from) + "–" + std::to_string(from + knobs.period_s) + " s",
                       Thousands(w["sent"].get<int64_t>()), Thousands(w["arrived"].get<int64_t>()),
                       FormatMs(w["p50_ms"].get<double>()), FormatMs(w["p99_ms"].get<double>()),
                       FormatMs(w["max_ms"].get<double>())});
  }
  Table tables = {
      {"bulkhead.jobs", "at the start", "at the end"},
      {"Total (heap + indexes + TOAST), MiB", Mib(at_start.total_bytes), Mib(at_end.total_bytes)},
      {"Heap, MiB", Mib(at_start.heap_bytes), Mib(at_end.heap_bytes)},
      {"Indexes, MiB", Mib(at_start.index_bytes), Mib(at_end.index_bytes)}};
  for (const auto& [index, bytes] : at_end.each_index) {
    auto before = at_start.each_index.find(index);
    tables.push_back({"  " + index + ", MiB",
                      before == at_start.each_index.end() ? "-" : Mib(before->second), Mib(bytes)});
  }
  tables.push_back({"Rows by state", Counts(at_start.by_state), Counts(at_end.by_state)});
  tables.push_back(
      {"bulkhead.nodes rows", std::to_string(at_start.nodes), std::to_string(at_end.nodes)});

  std::string title = "soak — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict =
      pass ? "every healthy delivery arrived; the only repeats were of jobs killed nodes held; "
             "every throttled job is delivered or waiting; the dead channel's breaker opened "
             "and no node held more of it than the cap"
           : "FAIL: a lost healthy delivery, a repeat no kill explains, a throttled job lost, a "
             "dead channel without breaker or over its cap, a kill not rescued, a failed "
             "restart, or a node that died";
  Chart chart{"Healthy deliveries per second at the provider",
              "seconds after the start",
              "deliveries/s (log scale)",
              {{"deliveries/s", "#1f77b4",
                RatePerInterval(records, start_us, std::max(1.0, duration_s / 300))}},
              {}};
  for (const Kill& k : kills) chart.marks.emplace_back(k.at_s, "SIGKILL");
  for (const Restart& r : restarts) chart.marks.emplace_back(r.at_s, "restart");
  PublishResult(context.results_dir, "soak", result, title, verdict, pass,
                {summary, latency, tables}, {chart});
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
