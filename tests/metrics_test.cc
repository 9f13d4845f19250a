// Metrics, the status server and the repeated-event summaries, without a database: the
// registry against docs/metrics.md, the dashboard and the alert rules (so that none of them
// names a metric the code does not register), the outcome words, the HTTP endpoints over
// loopback, and the once-a-minute summary lines.
#include "metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "http_get.h"
#include "logger.h"
#include "source_file.h"
#include "status_server.h"

namespace bulkhead {
namespace {

using testing::HttpGet;
using testing::ReadSourceFile;

// A registry with a child in every family (an empty family is not exposed).
std::set<std::string> RegisteredFamilies() {
  static Metrics metrics("test");
  metrics.ForTier("default");
  FleetCounts sample;
  sample.jobs = {{"default", "available", 1}};
  sample.breakers = {{"default", "open", 0}};
  sample.lag_s = {{"default", 0.5}};
  sample.ordering_held = {{"default", 0}};
  metrics.SetFleetSample(sample);
  auto names = metrics.FamilyNames();
  return {names.begin(), names.end()};
}

// Every metric name a PromQL text uses, with a histogram's _bucket, _sum and _count mapped to
// its family.
std::set<std::string> NamesUsedIn(const std::string& text, const std::set<std::string>& known) {
  std::set<std::string> used;
  std::regex name(R"(\b(bulkhead_[a-z_]+|process_[a-z_]+)\b)");
  for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) {
    std::string n = (*it)[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      std::string s(suffix);
      if (!known.count(n) && n.size() > s.size() && n.ends_with(s)) {
        std::string base = n.substr(0, n.size() - s.size());
        if (known.count(base)) n = base;
      }
    }
    used.insert(n);
  }
  return used;
}

TEST(Metrics, EveryRegisteredFamilyIsInTheDocsTableAndNoOther) {
  std::set<std::string> registered = RegisteredFamilies();
  // name → type, from the registry and from the table of docs/metrics.md's "Every metric".
  std::map<std::string, std::string> registered_types, documented;
  static Metrics metrics("test");
  metrics.ForTier("default");
  FleetCounts sample;
  sample.jobs = {{"default", "available", 1}};
  sample.breakers = {{"default", "open", 0}};
  sample.lag_s = {{"default", 0.5}};
  sample.ordering_held = {{"default", 0}};
  metrics.SetFleetSample(sample);
  for (const auto& family : metrics.registry().Collect()) {
    const char* type = family.type == prometheus::MetricType::Counter     ? "counter"
                       : family.type == prometheus::MetricType::Gauge     ? "gauge"
                       : family.type == prometheus::MetricType::Histogram ? "histogram"
                                                                          : "other";
    registered_types[family.name] = type;
  }
  std::istringstream doc(ReadSourceFile("docs/metrics.md"));
  std::regex row(R"(^\| `([a-z_]+)` \| ([a-z]+) \|)");
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("## ", 0) == 0) in_table = line == "## Every metric";
    std::smatch m;
    if (in_table && std::regex_search(line, m, row)) documented[m[1]] = m[2];
  }
  EXPECT_EQ(documented, registered_types);
  EXPECT_EQ(registered_types.size(), registered.size());
  // The issue's fixed names are all there.
  for (const char* name :
       {"bulkhead_deliveries_total", "bulkhead_delivery_duration_seconds",
        "bulkhead_queue_wait_seconds", "bulkhead_inflight", "bulkhead_workers", "bulkhead_breakers",
        "bulkhead_breaker_transitions_total", "bulkhead_jobs", "bulkhead_queue_lag_seconds",
        "bulkhead_claim_floor_age_seconds", "bulkhead_capped_total", "bulkhead_parked_total",
        "bulkhead_claim_duration_seconds", "bulkhead_completion_batch_size",
        "bulkhead_rescued_total", "bulkhead_reconnects_total", "process_cpu_seconds_total",
        "process_resident_memory_bytes", "process_open_fds"}) {
    EXPECT_TRUE(registered.count(name)) << name;
  }
}

TEST(Metrics, TheDashboardAndTheAlertsUseOnlyRegisteredMetrics) {
  std::set<std::string> registered = RegisteredFamilies();
  std::string dashboard_text = ReadSourceFile("docs/grafana/bulkhead.json");
  nlohmann::json dashboard = nlohmann::json::parse(dashboard_text);  // importable: valid JSON
  // The datasource is a variable, not a fixed uid.
  bool datasource_variable = false;
  for (const auto& v : dashboard["templating"]["list"]) {
    if (v["type"] == "datasource" && v["query"] == "prometheus") datasource_variable = true;
  }
  EXPECT_TRUE(datasource_variable);
  std::string alerts = ReadSourceFile("docs/prometheus/alerts.yml");
  for (const auto& [what, text] : {std::pair{"dashboard", dashboard_text}, {"alerts", alerts}}) {
    std::set<std::string> used = NamesUsedIn(text, registered);
    EXPECT_FALSE(used.empty()) << what;
    for (const auto& name : used) EXPECT_TRUE(registered.count(name)) << what << " uses " << name;
  }
  // The checker itself catches a name the code does not register.
  std::set<std::string> bogus = NamesUsedIn("rate(bulkhead_bogus_total[5m])", registered);
  EXPECT_FALSE(registered.count(*bogus.begin()));
}

TEST(Metrics, TheAlertsCarryTheirRunbookAnchors) {
  std::string alerts = ReadSourceFile("docs/prometheus/alerts.yml");
  for (std::string name :
       {"BulkheadQueueLagHigh", "BulkheadBreakerOpenLong", "BulkheadDiscardRateRising",
        "BulkheadNodeDown", "BulkheadDatabaseErrors", "BulkheadOrderingHeldGrowing"}) {
    EXPECT_NE(alerts.find("alert: " + name + "\n"), std::string::npos) << name;
    std::string anchor = name;
    for (char& c : anchor) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_NE(alerts.find("runbook: docs/operations.md#" + anchor + "\n"), std::string::npos)
        << name;
  }
}

TEST(Metrics, AnAttemptCountsAsOneOutcomeWord) {
  HttpOutcome ok;
  ok.status = 204;
  HttpOutcome server_error;
  server_error.status = 503;
  HttpOutcome timeout;
  timeout.error = HttpError::kTimeout;
  HttpOutcome refused;
  refused.error = HttpError::kConnect;
  HttpOutcome tls;
  tls.error = HttpError::kTls;
  EXPECT_EQ(ClassifyDelivery(ok, false), DeliveryOutcome::kDelivered);
  EXPECT_EQ(ClassifyDelivery(ok, true), DeliveryOutcome::kDelivered);
  EXPECT_EQ(ClassifyDelivery(server_error, false), DeliveryOutcome::kFailed);
  EXPECT_EQ(ClassifyDelivery(tls, false), DeliveryOutcome::kFailed);
  EXPECT_EQ(ClassifyDelivery(timeout, false), DeliveryOutcome::kTimeout);
  EXPECT_EQ(ClassifyDelivery(refused, false), DeliveryOutcome::kRefused);
  // The last attempt's failure is a discard, whatever its reason.
  EXPECT_EQ(ClassifyDelivery(timeout, true), DeliveryOutcome::kDiscarded);
  EXPECT_EQ(ClassifyDelivery(server_error, true), DeliveryOutcome::kDiscarded);
  EXPECT_STREQ(DeliveryOutcomeName(DeliveryOutcome::kRefused), "refused");
}

TEST(Metrics, ALeaderThatStepsDownExportsNoFleetSeries) {
  Metrics metrics("test");
  FleetCounts sample;
  sample.jobs = {{"default", "parked", 7}, {"bulk", "parked", 2}};
  sample.lag_s = {{"default", 3.5}};
  sample.ordering_held = {{"default", 12}, {"bulk", 0}};
  sample.claim_floor_age_s = 604800;
  metrics.SetFleetSample(sample);
  std::string text = metrics.Scrape();
  EXPECT_NE(text.find("bulkhead_jobs{state=\"parked\",tier=\"default\"} 7"), std::string::npos)
      << text;
  EXPECT_NE(text.find("bulkhead_ordering_held{tier=\"default\"} 12"), std::string::npos) << text;
  EXPECT_NE(text.find("bulkhead_claim_floor_age_seconds 604800\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bulkhead_leader 1"), std::string::npos);
  sample.jobs = {{"default", "parked", 5}};  // the bulk tier is gone: its series goes too
  sample.ordering_held = {{"default", 12}};
  metrics.SetFleetSample(sample);
  text = metrics.Scrape();
  EXPECT_NE(text.find("bulkhead_jobs{state=\"parked\",tier=\"default\"} 5"), std::string::npos);
  EXPECT_EQ(text.find("tier=\"bulk\""), std::string::npos) << text;
  metrics.ClearFleetSample();
  text = metrics.Scrape();
  EXPECT_EQ(text.find("bulkhead_jobs{"), std::string::npos) << text;
  EXPECT_EQ(text.find("bulkhead_queue_lag_seconds{"), std::string::npos) << text;
  EXPECT_EQ(text.find("bulkhead_ordering_held{"), std::string::npos) << text;
  EXPECT_EQ(text.find("bulkhead_claim_floor_age_seconds "), std::string::npos) << text;
  EXPECT_NE(text.find("bulkhead_leader 0"), std::string::npos);
}

TEST(Metrics, ProcessMetricsComeFromProc) {
  Metrics metrics("test");
  std::string text = metrics.Scrape();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\nprocess_resident_memory_bytes (\S+))")));
  EXPECT_GT(std::stod(m[1]), 1e6);  // this test binary holds over a megabyte
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\nprocess_open_fds (\S+))")));
  EXPECT_GE(std::stod(m[1]), 3);  // stdin, stdout, stderr
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(\nprocess_start_time_seconds (\S+))")));
  EXPECT_NEAR(std::stod(m[1]), static_cast<double>(time(nullptr)), 3600);
}

// ---- The status server over loopback -----------------------------------------------------

class StatusServerTest : public ::testing::Test {
 protected:
  std::string Url(const StatusServer& server, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(server.port()) + path;
  }
  Metrics metrics_{"test"};
  std::vector<std::string> reasons_;  // read by the server thread only while a request runs
};

TEST_F(StatusServerTest, ServesMetricsHealthAndReadiness) {
  const Metrics::Tier& tier = metrics_.ForTier("default");
  tier.Delivered(DeliveryOutcome::kDelivered);
  tier.Delivered(DeliveryOutcome::kDelivered);
  StatusServer server(
      "127.0.0.1:0", [&] { return metrics_.Scrape(); }, [&] { return reasons_; });
  ASSERT_TRUE(server.ok()) << server.error();
  auto scrape = HttpGet(Url(server, "/metrics"));
  EXPECT_EQ(scrape.status, 200);
  EXPECT_NE(scrape.body.find("bulkhead_deliveries_total{outcome=\"delivered\",tier=\"default\"} 2"),
            std::string::npos)
      << scrape.body;
  EXPECT_EQ(HttpGet(Url(server, "/healthz")).status, 200);
  auto ready = HttpGet(Url(server, "/readyz"));
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body, "ready\n");
  reasons_ = {"listen: the LISTEN connection is down"};
  auto not_ready = HttpGet(Url(server, "/readyz"));
  EXPECT_EQ(not_ready.status, 503);
  auto reasons = nlohmann::json::parse(not_ready.body);
  EXPECT_EQ(reasons["ready"], false);
  EXPECT_EQ(reasons["reasons"][0], "listen: the LISTEN connection is down");
  EXPECT_EQ(HttpGet(Url(server, "/healthz")).status, 200);  // alive though not ready
  EXPECT_EQ(HttpGet(Url(server, "/nothing")).status, 404);
  EXPECT_EQ(HttpGet(Url(server, "/metrics"), std::chrono::seconds(5), "POST").status, 405);
}

TEST_F(StatusServerTest, AClientThatSendsNothingDoesNotHoldTheServer) {
  StatusServer server(
      "127.0.0.1:0", [&] { return metrics_.Scrape(); }, [&] { return reasons_; });
  ASSERT_TRUE(server.ok()) << server.error();
  // A connection that never sends a request: the next client is still served at once.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(server.port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  EXPECT_EQ(HttpGet(Url(server, "/healthz"), std::chrono::seconds(2)).status, 200);
  close(fd);
}

TEST_F(StatusServerTest, APortInUseIsReportedNotThrown) {
  StatusServer first(
      "127.0.0.1:0", [&] { return metrics_.Scrape(); }, [&] { return reasons_; });
  ASSERT_TRUE(first.ok());
  std::string taken = "127.0.0.1:" + std::to_string(first.port());
  StatusServer second(
      taken, [&] { return metrics_.Scrape(); }, [&] { return reasons_; });
  EXPECT_FALSE(second.ok());
  EXPECT_NE(second.error().find("cannot listen on " + taken), std::string::npos) << second.error();
}

// ---- Repeated events: one summary a minute per kind ---------------------------------------

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(RepeatedEvent, IsLoggedAsOneSummaryAtMostOnceAMinute) {
  const auto start = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStderr();
  {
    RepeatedEvent retries(LogLevel::kInfo, "delivery_retries",
                          {{"tier", "default"}, {"outcome", "timeout"}});
    for (int i = 0; i < 1000; ++i) retries.Add();
    FlushRepeatedEvents(start + std::chrono::seconds(30));  // too soon: nothing
    FlushRepeatedEvents(start + std::chrono::seconds(61));  // the first summary: 1000
    retries.Add(5);
    FlushRepeatedEvents(start + std::chrono::seconds(90));   // within the minute: nothing
    FlushRepeatedEvents(start + std::chrono::seconds(125));  // the second: 5
    FlushRepeatedEvents(start + std::chrono::seconds(300));  // nothing new: no line
    retries.Add(2);
  }  // destroyed: the remaining 2 are written
  auto lines = Lines(::testing::internal::GetCapturedStderr());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["event"], "delivery_retries");
  EXPECT_EQ(lines[0]["tier"], "default");
  EXPECT_EQ(lines[0]["outcome"], "timeout");
  EXPECT_EQ(lines[0]["count"], 1000);
  EXPECT_EQ(lines[1]["count"], 5);
  EXPECT_NEAR(lines[1]["window_s"].get<double>(), 64.0, 0.2);
  EXPECT_EQ(lines[2]["count"], 2);
}

}  // namespace
}  // namespace bulkhead
