// The throughput scenario (scenarios.h).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <pqxx/pqxx>
#include <set>

#include "app_sender.h"
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
  std::string run = RunName("throughput");
  std::vector<int64_t> channels;
  std::vector<std::string> secrets;
  for (int i = 0; i < knobs.channels; ++i) {
    Channel c = CreateTenantAndChannel(conn, run + "-" + std::to_string(i), "default",
                                       context.mock_url + route, /*paused=*/true);
    channels.push_back(c.id);
    secrets.push_back(c.secret);
  }
  mock.Reset();
  mock.SetSecrets(secrets);
  std::cout << "throughput: " << knobs.profile << " profile; " << knobs.jobs << " deliveries over "
            << knobs.channels << " channels to " << route << std::endl;

  // The burst, inserted parked behind the paused channels: item i to channel i mod N.
  std::string channel_array = "{";
  for (size_t i = 0; i < channels.size(); ++i) {
    if (i > 0) channel_array.push_back(',');
    channel_array.append(std::to_string(channels[i]));
  }
  channel_array += "}";
  conn.prepare("burst",
               "SELECT unnest(bulkhead.enqueue_many("
               "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
               "          FROM generate_series(0, $2 - 1) i),"
               "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a "
               "hundred bytes, like a chat notification') FROM generate_series(0, $2 - 1) i)))");
  std::set<std::string> ids;
  int64_t enqueue_start = NowUs();
  for (int done = 0; done < knobs.jobs;) {
    int n = std::min(1000, knobs.jobs - done);
    pqxx::work tx(conn);
    for (const auto& row : tx.exec_prepared("burst", channel_array, n)) {
      ids.insert(row[0].as<std::string>());
    }
    tx.commit();
    done += n;
  }
  double enqueue_s = static_cast<double>(NowUs() - enqueue_start) / 1e6;
  {
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM ANALYZE bulkhead.jobs");
  }

  // Resume every channel at once; the node's parked reconciler returns the backlog.
  ProcessUsage before = ReadProcessUsage(node.pid);
  int64_t resumed_at = NowUs();
  {
    pqxx::work tx(conn);
    tx.exec_params("UPDATE bulkhead.channels SET paused = false WHERE id = ANY($1::bigint[])",
                   channel_array);
    tx.commit();
  }
  bool all = WaitForArrivals(mock, route, knobs.jobs, std::chrono::seconds(600));
  ProcessUsage after = ReadProcessUsage(node.pid);

  std::vector<MockRecord> records = mock.Records(route);
  int64_t first = INT64_MAX, last = 0;
  int duplicates = 0, bad_signatures = 0;
  std::set<std::string> seen;
  for (const MockRecord& r : records) {
    first = std::min(first, r.received_at_us);
    last = std::max(last, r.received_at_us);
    if (!seen.insert(r.webhook_id).second) ++duplicates;
    if (r.signature == "missing" || r.signature == "invalid") ++bad_signatures;
  }
  int delivered = 0;
  for (const auto& id : ids) delivered += seen.count(id);
  int lost = static_cast<int>(ids.size()) - delivered;
  double drain_s = records.empty() ? 0 : static_cast<double>(last - first) / 1e6;
  double rate = drain_s > 0 ? delivered / drain_s : 0;
  double cpu_s = after.cpu_s - before.cpu_s;
  bool pass = all && lost == 0 && duplicates == 0 && bad_signatures == 0;
  auto round = [](double v, double unit) { return std::round(v / unit) * unit; };

  nlohmann::json result = {
      {"scenario", "throughput"},
      {"profile", knobs.profile},
      {"started_at", started_at},
      {"knobs",
       {{"LOAD_THROUGHPUT_JOBS", knobs.jobs}, {"LOAD_THROUGHPUT_CHANNELS", knobs.channels}}},
      {"enqueued_s", round(enqueue_s, 0.01)},
      {"sent", ids.size()},
      {"delivered", delivered},
      {"duplicates", duplicates},
      {"lost", lost},
      {"bad_signatures", bad_signatures},
      {"first_arrival_after_resume_s",
       records.empty() ? 0.0 : round(static_cast<double>(first - resumed_at) / 1e6, 0.01)},
      {"drain_s", round(drain_s, 0.01)},
      {"deliveries_per_s", round(rate, 1)},
      {"node",
       {{"cpu_s", round(cpu_s, 0.01)},
        {"cpu_share_of_one_core", drain_s > 0 ? round(cpu_s / drain_s, 0.01) : 0.0},
        {"rss_mib", round(after.rss_mib, 0.1)},
        {"peak_rss_mib", round(after.peak_rss_mib, 0.1)}}},
      {"pass", pass}};
  if (!context.commit.empty()) result["commit"] = context.commit;

  Table table = {
      {"throughput", "value"},
      {"Deliveries delivered / enqueued",
       Thousands(delivered) + " / " + Thousands(static_cast<int64_t>(ids.size()))},
      {"Duplicates / lost", std::to_string(duplicates) + " / " + std::to_string(lost)},
      {"Channels", std::to_string(knobs.channels)},
      {"Enqueued in (enqueue_many, 1,000 per call, inserted parked)",
       FormatFixed(enqueue_s, 2) + " s"},
      {"Drained in (first arrival → last)", FormatFixed(drain_s, 2) + " s"},
      {"Deliveries/s", Thousands(std::llround(rate))},
      {"Node CPU over the drain", FormatFixed(cpu_s, 2) + " s (" +
                                      FormatFixed(drain_s > 0 ? 100 * cpu_s / drain_s : 0, 0) +
                                      " % of one core)"},
      {"Node resident memory now / peak",
       FormatFixed(after.rss_mib, 1) + " / " + FormatFixed(after.peak_rss_mib, 1) + " MiB"}};
  std::string title = "throughput — " + knobs.profile + " profile, " + started_at +
                      (context.commit.empty() ? "" : " at " + context.commit);
  std::string verdict = pass ? "every delivery arrived exactly once"
                             : "FAIL: lost, duplicated or unsigned deliveries";
  auto json_path = ResultsPath(context.results_dir, UtcNow("%Y-%m-%d") + "-throughput");
  auto html_path = std::filesystem::path(json_path).replace_extension(".html");
  result["report"] = html_path.filename().string();
  std::ofstream(json_path) << result.dump(2) << "\n";
  std::ofstream(html_path) << HtmlPage(title, verdict, pass, {table}, result["knobs"]);
  std::cout << title << "\n\n"
            << MarkdownTable(table) << "\n"
            << verdict << "\n\nresults: " << json_path.string()
            << "\nreport:  " << html_path.string() << std::endl;
  return pass ? 0 : 1;
}

}  // namespace bulkhead::load
