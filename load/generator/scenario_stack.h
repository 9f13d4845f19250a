// The stack a scenario runs on, as the scenarios see it: the node they wait for, the tenants
// and channels they create, the mock's arrivals they wait for, the node process they measure,
// and where their results go. Functions run on the calling thread; the pqxx connection and
// MockClient passed in are the caller's and are used from that thread only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "mock_client.h"
#include "process_usage.h"
#include "report.h"

namespace bulkhead::load {

// The current UTC time formatted by strftime(format).
std::string UtcNow(const char* format);

// A name no earlier run on the same database used: "<scenario>-<UTC time>-<µs>".
std::string RunName(const std::string& scenario);

struct NodeInfo {
  pid_t pid = 0;  // as the node registered it; the harness runs on the node's machine
  std::vector<std::string> tiers;
};
// Waits up to 60 s for `node` to register in bulkhead.nodes — as process `pid` when it is not 0,
// for a node restarted under its name while its dead predecessor's row is still there — and,
// when `needed` tiers are given, checks that it serves each. Throws std::runtime_error when it
// does not.
NodeInfo WaitForNode(pqxx::connection& conn, const std::string& node,
                     const std::vector<std::string>& needed, pid_t pid = 0);

struct Channel {
  int64_t id = 0;
  std::string secret;
};
// A tenant on `tier` with one channel to `url` (paused: its deliveries wait parked until it is
// resumed), in one transaction.
Channel CreateTenantAndChannel(pqxx::connection& conn, const std::string& name,
                               const std::string& tier, const std::string& url,
                               bool paused = false);

// Waits until the mock has seen `expected` distinct webhook-ids on `route`; false if `timeout`
// passed first.
bool WaitForArrivals(MockClient& mock, const std::string& route, int64_t expected,
                     std::chrono::seconds timeout);

// A node's CPU seconds and memory: the harness's one reader (tests/harness/process_usage.h).
using testing::ProcessUsage;
using testing::ReadProcessUsage;

// <dir>/<stem>.json, or <stem>-2.json, -3, … when taken (runs of one day keep each other).
// Creates `dir`.
std::filesystem::path ResultsPath(const std::string& dir, const std::string& stem);

// Writes `result` to ResultsPath(dir, "<UTC date>-<stem>") and an HTML page of `tables` beside
// it (recording its file name in result["report"]), then prints the title, the tables, the
// verdict and both paths. For the scenarios other than dead_channel, whose report is richer.
void PublishResult(const std::string& dir, const std::string& stem, nlohmann::json& result,
                   const std::string& title, const std::string& verdict, bool pass,
                   const std::vector<Table>& tables, const std::vector<Chart>& charts = {});

}  // namespace bulkhead::load
