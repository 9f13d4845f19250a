#include "scenario_stack.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "app_sender.h"
#include "poll.h"

namespace bulkhead::load {

namespace fs = std::filesystem;

std::string UtcNow(const char* format) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof buffer, format, &tm);
  return buffer;
}

std::string RunName(const std::string& scenario) {
  return scenario + "-" + UtcNow("%Y%m%dT%H%M%SZ") + "-" + std::to_string(NowUs() % 1000000);
}

NodeInfo WaitForNode(pqxx::connection& conn, const std::string& node,
                     const std::vector<std::string>& needed, pid_t pid) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    pqxx::work tx(conn);
    auto rows = tx.exec_params(
        "SELECT coalesce(pid, 0), array_to_string(tiers, ',') FROM bulkhead.nodes "
        "WHERE name = $1 AND ($2 = 0 OR pid = $2)",
        node, pid);
    tx.commit();
    if (!rows.empty()) {
      NodeInfo info;
      info.pid = rows[0][0].as<pid_t>();
      std::string list = rows[0][1].as<std::string>();
      for (size_t at = 0; at <= list.size();) {
        size_t comma = std::min(list.find(',', at), list.size());
        info.tiers.push_back(list.substr(at, comma - at));
        at = comma + 1;
      }
      for (const std::string& tier : needed) {
        if (std::find(info.tiers.begin(), info.tiers.end(), tier) == info.tiers.end()) {
          throw std::runtime_error("node " + node + " does not serve tier '" + tier +
                                   "' (it serves its tiers_dir's *.json)");
        }
      }
      return info;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("node " + node + " did not register within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

Channel CreateTenantAndChannel(pqxx::connection& conn, const std::string& name,
                               const std::string& tier, const std::string& url, bool paused) {
  pqxx::work tx(conn);
  int64_t tenant =
      tx.exec_params1("INSERT INTO bulkhead.tenants (name, tier) VALUES ($1, $2) RETURNING id",
                      name, tier)[0]
          .as<int64_t>();
  auto row = tx.exec_params1(
      "INSERT INTO bulkhead.channels (tenant_id, url, paused) VALUES ($1, $2, $3) "
      "RETURNING id, secret",
      tenant, url, paused);
  tx.commit();
  return {row[0].as<int64_t>(), row[1].as<std::string>()};
}

bool WaitForArrivals(MockClient& mock, const std::string& route, int64_t expected,
                     std::chrono::seconds timeout) {
  return testing::PollUntil(
      [&] { return MockClient::RouteCounter(mock.Stats(), route, "unique_ids") >= expected; },
      timeout, std::chrono::milliseconds(100));
}

fs::path ResultsPath(const std::string& dir, const std::string& stem) {
  fs::create_directories(dir);
  fs::path path = fs::path(dir) / (stem + ".json");
  for (int n = 2; fs::exists(path); ++n) {
    path = fs::path(dir) / (stem + "-" + std::to_string(n) + ".json");
  }
  return path;
}

void PublishResult(const std::string& dir, const std::string& stem, nlohmann::json& result,
                   const std::string& title, const std::string& verdict, bool pass,
                   const std::vector<Table>& tables, const std::vector<Chart>& charts) {
  fs::path json_path = ResultsPath(dir, UtcNow("%Y-%m-%d") + "-" + stem);
  fs::path html_path = fs::path(json_path).replace_extension(".html");
  result["report"] = html_path.filename().string();
  std::ofstream(json_path) << result.dump(2) << "\n";
  std::ofstream(html_path) << HtmlPage(title, verdict, pass, tables,
                                       result.value("knobs", nlohmann::json::object()), charts);
  std::cout << title << "\n\n";
  for (const Table& table : tables) std::cout << MarkdownTable(table) << "\n";
  std::cout << verdict << "\n\nresults: " << json_path.string()
            << "\nreport:  " << html_path.string() << std::endl;
}

}  // namespace bulkhead::load
