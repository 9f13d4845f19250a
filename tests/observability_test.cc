// Observability end to end: `bulkhead run` nodes (the real binary) against real PostgreSQL,
// delivering to a loopback receiver, read through their status server — the metrics they
// count, the leader's fleet samples, /readyz through a database outage, the summary logs — and
// a real Prometheus server (Debian's /usr/bin/prometheus) scraping a node.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "delivery_test.h"
#include "fleet_store.h"
#include "free_port.h"
#include "http_get.h"
#include "http_receiver.h"
#include "node_process.h"
#include "tenancy.h"

extern char** environ;

namespace bulkhead {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::DeliveryTest;
using testing::FreeLoopbackPort;
using testing::HttpGet;
using testing::HttpReceiver;
using testing::LoopbackNetworks;
using testing::NodeProcess;
using testing::QueryValue;
using testing::Reply;

// The value of the sample `name{labels…}` in a text exposition (labels in any order, all of
// those given present), or nullopt.
std::optional<double> Sample(const std::string& text, const std::string& name,
                             const std::map<std::string, std::string>& labels = {}) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    bool all = true;
    for (const auto& [key, value] : labels) {
      if (line.find(key + "=\"" + value + "\"") == std::string::npos) all = false;
    }
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return std::nullopt;
}

class ObservabilityTest : public DeliveryTest {
 protected:
  int64_t Channel(const std::string& url, const std::string& tier = "default") {
    static int tenants = 0;
    int64_t tenant = testing::CreateTenant(db(), "tenant-" + std::to_string(++tenants), tier);
    return testing::CreateChannel(db(), tenant, url);
  }

  // Polls `path` on the node until `accept(answer)`; the last answer either way.
  testing::HttpAnswer Poll(const NodeProcess& node, const std::string& path,
                           const std::function<bool(const testing::HttpAnswer&)>& accept,
                           milliseconds timeout = seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    testing::HttpAnswer answer;
    while (std::chrono::steady_clock::now() < deadline) {
      answer = HttpGet(Url(node, path), seconds(2));
      if (accept(answer)) return answer;
      std::this_thread::sleep_for(milliseconds(100));
    }
    return answer;
  }

  static std::string Url(const NodeProcess& node, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(node.metrics_port()) + path;
  }

  static nlohmann::json Tier(int workers, nlohmann::json extra = nlohmann::json::object()) {
    nlohmann::json tier = {
        {"workers", workers},         {"channel_share", 1},      {"tenant_share", 1},
        {"failure_threshold", 1000},  {"slow_call_ms", 3600000}, {"connect_timeout_ms", 500},
        {"request_timeout_ms", 1000}, {"retry_delays_ms", {50}}, {"retry_jitter", 0}};
    tier.update(extra);
    return tier;
  }

  static nlohmann::json NodeConfig(const std::string& name) {
    return {{"node", name},
            {"poll_interval_ms", 200},
            {"shutdown_grace_ms", 5000},
            {"allowed_networks", LoopbackNetworks()}};
  }
};

TEST_F(ObservabilityTest, ANodeCountsEachAttemptByOutcomeAndSummarizesRetriesInItsLog) {
  HttpReceiver receiver([](const testing::ReceivedRequest& request) {
    Reply reply;
    if (request.path == "/fail") reply.status = 500;
    if (request.path == "/slow") reply.hang = true;
    return reply;
  });
  int64_t ok = Channel(receiver.Url("/ok"));
  int64_t failing = Channel(receiver.Url("/fail"));
  int64_t slow = Channel(receiver.Url("/slow"));
  int64_t refused = Channel("http://127.0.0.1:" + std::to_string(FreeLoopbackPort()) + "/closed");
  int64_t last = Channel(receiver.Url("/fail"));
  EnqueueMany(ok, 20);
  // 3 attempts each: two failures rescheduled, the third discards.
  EnqueueMany(
      failing, 4,
      "UPDATE bulkhead.jobs SET max_attempts = 3 WHERE channel_id = " + std::to_string(failing));
  EnqueueMany(
      slow, 2,
      "UPDATE bulkhead.jobs SET max_attempts = 2 WHERE channel_id = " + std::to_string(slow));
  EnqueueMany(
      refused, 2,
      "UPDATE bulkhead.jobs SET max_attempts = 2 WHERE channel_id = " + std::to_string(refused));
  EnqueueMany(
      last, 1,
      "UPDATE bulkhead.jobs SET max_attempts = 1 WHERE channel_id = " + std::to_string(last));
  NodeProcess node(NodeConfig("node-a"), {{"default", Tier(10)}});
  node.Start(url());
  ASSERT_TRUE(WaitFor("count(*) = 29 FROM bulkhead.jobs WHERE state IN ('completed', 'discarded')",
                      seconds(60)))
      << node.Log();
  std::string text =
      Poll(node, "/metrics", [](const testing::HttpAnswer& a) {
        return a.status == 200 && a.body.find("outcome=\"discarded\"") != std::string::npos;
      }).body;
  auto count = [&](const std::string& outcome) {
    return Sample(text, "bulkhead_deliveries_total", {{"tier", "default"}, {"outcome", outcome}})
        .value_or(-1);
  };
  EXPECT_EQ(count("delivered"), 20) << text;
  EXPECT_EQ(count("failed"), 4 * 2);  // attempts 1 and 2 of the failing channel's 4 jobs
  EXPECT_EQ(count("timeout"), 2);     // attempt 1 of the slow channel's 2
  EXPECT_EQ(count("refused"), 2);
  EXPECT_EQ(count("discarded"), 4 + 2 + 2 + 1);  // every job's last attempt
  // Every attempt has its duration; every claimed job its queue wait.
  EXPECT_EQ(Sample(text, "bulkhead_delivery_duration_seconds_count", {{"tier", "default"}}),
            20 + 12 + 4 + 4 + 1);
  EXPECT_EQ(Sample(text, "bulkhead_queue_wait_seconds_count", {{"tier", "default"}}),
            20 + 12 + 4 + 4 + 1);
  EXPECT_GT(Sample(text, "bulkhead_claim_duration_seconds_count", {{"tier", "default"}}), 0);
  EXPECT_GT(Sample(text, "bulkhead_completion_batch_size_count"), 0);
  EXPECT_EQ(Sample(text, "bulkhead_workers", {{"tier", "default"}}), 10);
  EXPECT_EQ(Sample(text, "bulkhead_inflight", {{"tier", "default"}}), 0);
  EXPECT_GT(Sample(text, "process_resident_memory_bytes").value_or(0), 1e6);
  EXPECT_GT(Sample(text, "process_cpu_seconds_total").value_or(0), 0);
  // No label carries a channel, a tenant or a URL.
  EXPECT_EQ(text.find("channel=\""), std::string::npos);
  EXPECT_EQ(text.find("/fail"), std::string::npos);

  node.Signal(SIGTERM);
  ASSERT_EQ(node.Wait(seconds(20)), 0) << node.Log();
  // The log: retries and discards as summaries (here flushed at stop), whose counts add up to
  // the metrics — never a line per attempt.
  std::map<std::string, int64_t> retried, lines;
  int64_t discarded = 0;
  std::istringstream log(node.Log());
  for (std::string line; std::getline(log, line);) {
    auto json = nlohmann::json::parse(line);
    ++lines[json["event"]];
    if (json["event"] == "delivery_retries") retried[json["outcome"]] += json["count"].get<int>();
    if (json["event"] == "deliveries_discarded") discarded += json["count"].get<int>();
  }
  EXPECT_EQ(retried["failed"], 8);
  EXPECT_EQ(retried["timeout"], 2);
  EXPECT_EQ(retried["refused"], 2);
  EXPECT_EQ(discarded, 9);
  EXPECT_LE(lines["delivery_retries"], 3) << node.Log();
  EXPECT_EQ(lines["deliveries_discarded"], 1) << node.Log();
}

TEST_F(ObservabilityTest, OnlyTheLeaderExportsTheFleetCountsItSampled) {
  // Jobs on the bulk tier, which no node here serves: they wait, and the leader counts them.
  HttpReceiver receiver;
  int64_t waiting = Channel(receiver.Url("/w"), "bulk");
  EnqueueMany(waiting, 3);
  {
    pqxx::work tx(db());
    tx.exec(
        "UPDATE bulkhead.jobs SET scheduled_at = now() - interval '90 s', "
        "created_at = now() - interval '90 s'");
    tx.commit();
  }
  NodeProcess a(NodeConfig("node-a"), {{"default", Tier(2)}});
  a.Start(url());
  auto leader = Poll(a, "/metrics", [](const testing::HttpAnswer& answer) {
    return answer.body.find("bulkhead_leader 1") != std::string::npos &&
           answer.body.find("bulkhead_jobs{") != std::string::npos;
  });
  ASSERT_NE(leader.body.find("bulkhead_leader 1"), std::string::npos) << leader.body << a.Log();
  EXPECT_EQ(Sample(leader.body, "bulkhead_jobs", {{"tier", "bulk"}, {"state", "available"}}), 3);
  EXPECT_EQ(Sample(leader.body, "bulkhead_jobs", {{"tier", "default"}, {"state", "available"}}), 0);
  EXPECT_EQ(Sample(leader.body, "bulkhead_breakers", {{"tier", "bulk"}, {"state", "open"}}), 0);
  EXPECT_GE(Sample(leader.body, "bulkhead_queue_lag_seconds", {{"tier", "bulk"}}).value_or(0), 90);
  EXPECT_EQ(Sample(leader.body, "bulkhead_queue_lag_seconds", {{"tier", "default"}}), 0);
  // The claim floor stands at the first of the waiting jobs (ADR 0027).
  EXPECT_GE(Sample(leader.body, "bulkhead_claim_floor_age_seconds").value_or(0), 90);

  NodeProcess b(NodeConfig("node-b"), {{"default", Tier(2)}});
  b.Start(url());
  auto follower =
      Poll(b, "/metrics", [](const testing::HttpAnswer& answer) { return answer.status == 200; });
  ASSERT_EQ(follower.status, 200) << b.Log();
  ASSERT_TRUE(b.WaitReady()) << b.Log();    // its loops run: the absence below means something
  std::this_thread::sleep_for(seconds(3));  // longer than an election round
  follower = HttpGet(Url(b, "/metrics"));
  EXPECT_NE(follower.body.find("bulkhead_leader 0"), std::string::npos) << follower.body;
  EXPECT_EQ(follower.body.find("bulkhead_jobs{"), std::string::npos) << follower.body;
  EXPECT_EQ(Sample(follower.body, "bulkhead_claim_floor_age_seconds"), std::nullopt);
}

TEST_F(ObservabilityTest, ReadyzGoesUnreadyWhileTheDatabaseIsAwayAndReadyAfter) {
  NodeProcess node(NodeConfig("node-a"), {{"default", Tier(2)}});
  node.Start(url());
  auto ready = [](const testing::HttpAnswer& a) { return a.status == 200; };
  auto unready = [](const testing::HttpAnswer& a) { return a.status == 503; };
  ASSERT_EQ(Poll(node, "/readyz", ready).status, 200) << node.Log();

  // The outage: no new connection to the node's database, and every one it has cut.
  auto admin = std::make_unique<pqxx::connection>(
      testing::PostgresEnvironment::Cluster().ConnectionString("postgres"));
  pqxx::nontransaction(*admin).exec("ALTER DATABASE " + dbname() + " ALLOW_CONNECTIONS false");
  pqxx::nontransaction(*admin).exec(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = " +
      admin->quote(dbname()));
  auto down = Poll(node, "/readyz", unready);
  EXPECT_EQ(down.status, 503) << down.body << node.Log();
  auto reasons = nlohmann::json::parse(down.body.empty() ? "{}" : down.body);
  EXPECT_EQ(reasons["ready"], false) << down.body;
  EXPECT_FALSE(reasons["reasons"].empty()) << down.body;
  EXPECT_EQ(HttpGet(Url(node, "/healthz")).status, 200);  // alive all the same

  pqxx::nontransaction(*admin).exec("ALTER DATABASE " + dbname() + " ALLOW_CONNECTIONS true");
  auto up = Poll(node, "/readyz", ready);
  EXPECT_EQ(up.status, 200) << up.body << node.Log();
  // Ready again does not mean every connection is back: readiness asks the heartbeat, the
  // LISTEN connection and the claim loops, and a thread whose connection was cut reconnects only
  // at its next statement (under TSan the CI saw ready with errors 1 and reconnects 0). Wait for
  // it.
  std::string metrics = Poll(node, "/metrics", [](const testing::HttpAnswer& a) {
                          return Sample(a.body, "bulkhead_reconnects_total").value_or(0) > 0;
                        }).body;
  EXPECT_GT(Sample(metrics, "bulkhead_database_errors_total").value_or(0), 0) << metrics;
  EXPECT_GT(Sample(metrics, "bulkhead_reconnects_total").value_or(0), 0) << metrics;
  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(seconds(20)), 0) << node.Log();
}

TEST_F(ObservabilityTest, TheLeadersSamplesReadNoFinishedRows) {
  // 30,000 finished jobs and a few waiting: the samples must go through the partial indexes.
  int64_t ch = Channel("http://127.0.0.1:9/x");
  {
    pqxx::work tx(db());
    tx.exec(
        "INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, payload, attempt, "
        "finished_at, attempted_at, attempted_by) SELECT 'default', c.tenant_id, c.id, "
        "'completed', '{}', 1, now(), now(), 'x' FROM bulkhead.channels c, "
        "generate_series(1, 30000) WHERE c.id = " +
        std::to_string(ch));
    tx.commit();
  }
  EnqueueMany(ch, 5);
  // Four deliveries of one ordering key and two of another: the first of each goes, the other
  // four are held (due at 'infinity'), one of them parked by hand as a breaker's opening would.
  {
    pqxx::work tx(db());
    tx.exec("SELECT bulkhead.enqueue(" + std::to_string(ch) +
            ", '{}', NULL, now(), k) FROM unnest('{a,a,a,a,b,b}'::text[]) AS k");
    tx.commit();
  }
  pqxx::nontransaction(db()).exec(
      "UPDATE bulkhead.jobs SET state = 'parked' WHERE id = (SELECT max(id) FROM bulkhead.jobs "
      "WHERE ordering_key = 'a')");
  pqxx::nontransaction(db()).exec("ANALYZE bulkhead.job_rows");
  FleetStore store(db());
  FleetCounts counts = store.SampleFleet();
  int64_t available = 0;
  for (const auto& c : counts.jobs) {
    if (c.tier == "default" && c.state == "available") available = c.n;
  }
  EXPECT_EQ(available, 7);  // the 5 and the head of each key
  ASSERT_FALSE(counts.ordering_held.empty());
  for (const auto& [tier, held] : counts.ordering_held) {
    EXPECT_EQ(held, tier == "default" ? 4 : 0) << tier;
  }
  // No sample seq-scans a table of more than a page or two: on one table, none at all; on jobs
  // in ranges of ids (the _on_ranges run), a range of a few rows is rightly seq-scanned, one
  // page, never the range that holds the finished rows, hundreds.
  for (const char* statement :
       {"sample_jobs", "sample_breakers", "sample_lag", "sample_ordering", "sample_claim_floor"}) {
    std::string plan;
    std::vector<std::string> seq_scanned;
    for (const auto& row :
         pqxx::nontransaction(db()).exec(std::string("EXPLAIN (COSTS OFF) EXECUTE ") + statement)) {
      const std::string line = row[0].as<std::string>();
      plan += line + "\n";
      if (const auto at = line.find("Seq Scan on "); at != line.npos) {
        const std::string rest = line.substr(at + 12);
        seq_scanned.push_back(rest.substr(0, rest.find(' ')));
      }
    }
    for (const std::string& relation : seq_scanned) {
      const int64_t pages =
          QueryValue<int64_t>(db(), "SELECT pg_relation_size('bulkhead." + relation + "') / 8192");
      EXPECT_LE(pages, 2) << statement << " seq-scans " << relation << ", " << pages << " pages\n"
                          << plan;
    }
  }
}

TEST_F(ObservabilityTest, WithRecordingOffTheNodeDeliversAndServesZeros) {
  // The benchmark aid (docs/metrics.md): the node inherits the variable from this process.
  HttpReceiver receiver;
  int64_t ch = Channel(receiver.Url("/hook"));
  NodeProcess node(NodeConfig("node-a"), {{"default", Tier(5)}});
  setenv("BULKHEAD_METRICS_RECORDING", "off", 1);
  node.Start(url());
  unsetenv("BULKHEAD_METRICS_RECORDING");
  EnqueueMany(ch, 10);
  ASSERT_TRUE(receiver.WaitForRequests(10, seconds(30))) << node.Log();
  ASSERT_TRUE(WaitFor("count(*) = 10 FROM bulkhead.jobs WHERE state = 'completed'"));
  std::string text =
      Poll(node, "/metrics", [](const testing::HttpAnswer& a) { return a.status == 200; }).body;
  EXPECT_EQ(
      Sample(text, "bulkhead_deliveries_total", {{"tier", "default"}, {"outcome", "delivered"}}), 0)
      << text;
  EXPECT_EQ(Sample(text, "bulkhead_queue_wait_seconds_count", {{"tier", "default"}}), 0);
  EXPECT_NE(node.Log().find("\"metrics_recording\":false"), std::string::npos) << node.Log();
}

// ---- A real Prometheus server scraping a node ----------------------------------------------

// /usr/bin/prometheus on loopback with a config and a data folder of its own; killed and
// removed on destruction.
class PrometheusServer {
 public:
  explicit PrometheusServer(int target_port) {
    std::string pattern = (fs::temp_directory_path() / "bulkhead-prom-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = pattern;
    port_ = FreeLoopbackPort();
    std::ofstream(dir_ / "prometheus.yml")
        << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        << "scrape_configs:\n  - job_name: bulkhead\n    static_configs:\n"
        << "      - targets: ['127.0.0.1:" << target_port << "']\n";
    std::vector<std::string> argv = {"/usr/bin/prometheus",
                                     "--config.file=" + (dir_ / "prometheus.yml").string(),
                                     "--storage.tsdb.path=" + (dir_ / "data").string(),
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_)};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    std::string log = (dir_ / "prometheus.log").string();
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      throw std::runtime_error(std::string("spawn /usr/bin/prometheus (Debian's prometheus "
                                           "package; ./setup.sh installs it): ") +
                               std::strerror(rc));
    }
  }
  ~PrometheusServer() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // The first value of an instant query, or nullopt.
  std::optional<double> Query(const std::string& promql) const {
    std::string escaped;
    for (char c : promql) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
        escaped += c;
      } else {
        char hex[4];
        std::snprintf(hex, sizeof(hex), "%%%02X", static_cast<unsigned char>(c));
        escaped += hex;
      }
    }
    auto answer =
        HttpGet("http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query?query=" + escaped);
    if (answer.status != 200) return std::nullopt;
    auto json = nlohmann::json::parse(answer.body, nullptr, false);
    if (json.is_discarded() || json["data"]["result"].empty()) return std::nullopt;
    return std::stod(json["data"]["result"][0]["value"][1].get<std::string>());
  }

  std::string Log() const {
    std::ifstream in(dir_ / "prometheus.log");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

 private:
  fs::path dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

TEST_F(ObservabilityTest, APrometheusServerScrapesANodeAndCountsItsDeliveries) {
  HttpReceiver receiver;
  int64_t ch = Channel(receiver.Url("/hook"));
  NodeProcess node(NodeConfig("node-a"), {{"default", Tier(5)}});
  node.Start(url());
  PrometheusServer prometheus(node.metrics_port());
  EnqueueMany(ch, 25);
  ASSERT_TRUE(receiver.WaitForRequests(25, seconds(30))) << node.Log();
  // Bounded: scrapes every second; give it 60 s to start, scrape and answer.
  std::optional<double> delivered, up;
  auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    delivered =
        prometheus.Query("sum(bulkhead_deliveries_total{job=\"bulkhead\",outcome=\"delivered\"})");
    up = prometheus.Query("up{job=\"bulkhead\"}");
    if (delivered == 25.0 && up == 1.0) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  EXPECT_EQ(delivered, 25.0) << prometheus.Log();
  EXPECT_EQ(up, 1.0);
  // A histogram made it through as Prometheus reads it.
  EXPECT_EQ(prometheus.Query("sum(bulkhead_queue_wait_seconds_count)"), 25.0);
}

}  // namespace
}  // namespace bulkhead
