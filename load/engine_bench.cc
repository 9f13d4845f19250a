// bulkhead-engine-bench: measures the delivery engine on this machine, with the real
// `bulkhead run` binary, a real PostgreSQL and a loopback HTTP receiver that answers 200 at
// once. Run it through load/engine_bench.sh, which starts an embedded PostgreSQL and builds.
//
//   throughput  enqueue a burst (--jobs, default 100000) over --channels (20) channels, then
//               start one node with --workers (200) slots and time the drain to `completed`.
//               Prints deliveries/s, and the node's CPU seconds and peak resident memory.
//   latency     start a node, then enqueue --rate (50) deliveries a second for --seconds (20),
//               each in its own transaction; the latency of one delivery is the time from its
//               COMMIT returning to the receiver reading the request. Prints p50/p95/p99/max.
//
// Every run starts from an empty bulkhead schema in the given database (it migrates down and
// up), so do not point it at a database you care about.
#include <curl/curl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http_receiver.h"
#include "migrations.h"
#include "migrator.h"
#include "node_process.h"

namespace {

using bulkhead::testing::HttpReceiver;
using bulkhead::testing::NodeProcess;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode;
  std::string database;
  int jobs = 100000;
  int channels = 20;
  int workers = 200;
  int rate = 50;
  int seconds = 20;
};

int Usage(const std::string& message) {
  std::cerr << "bulkhead-engine-bench: " << message
            << "\nusage: bulkhead-engine-bench throughput|latency --database URL [--jobs N] "
               "[--channels N] [--workers N] [--rate N] [--seconds N]\n";
  return 2;
}

void ResetSchema(const std::string& database) {
  pqxx::connection conn(database);
  bulkhead::Migrator migrator(conn, bulkhead::EmbeddedMigrations());
  migrator.Down(migrator.BinaryVersion());
  auto result = migrator.Up();
  if (!result.ok()) throw std::runtime_error(result.error);
}

std::vector<int64_t> MakeChannels(pqxx::connection& conn, int n, const std::string& url) {
  std::vector<int64_t> channels;
  pqxx::work tx(conn);
  for (int i = 0; i < n; ++i) {
    int64_t tenant = tx.exec_params1("INSERT INTO bulkhead.tenants (name) VALUES ($1) RETURNING id",
                                     "bench-" + std::to_string(i))[0]
                         .as<int64_t>();
    channels.push_back(tx.exec_params1("INSERT INTO bulkhead.channels (tenant_id, url) "
                                       "VALUES ($1, $2) RETURNING id",
                                       tenant, url)[0]
                           .as<int64_t>());
  }
  tx.commit();
  return channels;
}

// CPU seconds (user + system) and peak resident memory (VmHWM, MiB) of a running process.
std::pair<double, double> CpuAndPeakMemory(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string field;
  double ticks = 0;
  for (int i = 1; i <= 15 && stat >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  double peak_mib = 0;
  while (std::getline(status, line)) {
    if (line.starts_with("VmHWM:")) peak_mib = std::stod(line.substr(6)) / 1024.0;
  }
  return {ticks / static_cast<double>(sysconf(_SC_CLK_TCK)), peak_mib};
}

nlohmann::json Tier(int workers) {
  return {{"workers", workers}, {"connect_timeout_ms", 3000}, {"request_timeout_ms", 10000}};
}

int Throughput(const Args& args) {
  HttpReceiver receiver;
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  std::vector<int64_t> channels = MakeChannels(conn, args.channels, receiver.Url("/fast"));
  // Item i goes to channel i mod N, so every channel gets an equal share of the burst.
  std::string channel_array = "{";
  for (size_t i = 0; i < channels.size(); ++i) {
    if (i > 0) channel_array += ',';
    channel_array += std::to_string(channels[i]);
  }
  channel_array += "}";
  conn.prepare("burst",
               "SELECT bulkhead.enqueue_many("
               "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
               "          FROM generate_series(1, $2) i),"
               "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a "
               "hundred bytes, like a chat notification') FROM generate_series(1, $2) i))");
  auto enqueue_start = Clock::now();
  for (int done = 0; done < args.jobs;) {
    int n = std::min(1000, args.jobs - done);
    pqxx::work tx(conn);
    tx.exec_prepared("burst", channel_array, n);
    tx.commit();
    done += n;
  }
  double enqueue_s = std::chrono::duration<double>(Clock::now() - enqueue_start).count();
  {
    pqxx::nontransaction tx(conn);
    tx.exec("VACUUM ANALYZE bulkhead.jobs");
  }

  NodeProcess node({{"node", "bench"}, {"poll_interval_ms", 1000}},
                   {{"default", Tier(args.workers)}});
  auto start = Clock::now();
  node.Start(args.database);
  // Done when nothing is available or executing: both counts read only the small partial
  // indexes (jobs_claim, jobs_executing), so watching costs the database little, unlike a
  // count of the growing `completed` rows. A job stays executing until its result is written.
  double cpu_s = 0, peak_mib = 0;
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (auto code = node.Wait(std::chrono::milliseconds(0))) {
      std::cerr << "the node exited with " << *code << ":\n" << node.Log();
      return 1;
    }
    std::tie(cpu_s, peak_mib) = CpuAndPeakMemory(node.pid());
    pqxx::work tx(conn);
    bool done = tx.exec1(
                      "SELECT NOT EXISTS (SELECT FROM bulkhead.jobs WHERE state = "
                      "'available') AND NOT EXISTS (SELECT FROM bulkhead.jobs WHERE state = "
                      "'executing')")[0]
                    .as<bool>();
    if (done) break;
  }
  double drain_s = std::chrono::duration<double>(Clock::now() - start).count();
  node.Signal(SIGTERM);
  node.Wait(std::chrono::seconds(30));
  size_t requests = receiver.request_count();
  std::string claims = "?";
  {
    std::istringstream log(node.Log());
    for (std::string line; std::getline(log, line);) {
      if (line.find("\"node_stopped\"") != std::string::npos) {
        claims = nlohmann::json::parse(line)["claims"].dump();
      }
    }
  }
  int completed = 0;
  {
    pqxx::work tx(conn);
    completed =
        tx.exec1("SELECT count(*) FROM bulkhead.jobs WHERE state = 'completed'")[0].as<int>();
  }
  std::printf(
      "throughput: %d deliveries over %d channels, %d workers, one node\n"
      "  enqueued in %.2f s (enqueue_many, 1000 per call)\n"
      "  drained in %.2f s: %.0f deliveries/s (node start to the last `completed`)\n"
      "  node CPU %.2f s (%.0f%% of one core), peak resident memory %.1f MiB\n"
      "  completed %d, requests received %zu (duplicates %zd)\n"
      "  claim statements per tier: %s\n",
      args.jobs, args.channels, args.workers, enqueue_s, drain_s, args.jobs / drain_s, cpu_s,
      100.0 * cpu_s / drain_s, peak_mib, completed, requests,
      static_cast<ssize_t>(requests) - args.jobs, claims.c_str());
  return 0;
}

int Latency(const Args& args) {
  std::mutex mu;
  std::map<std::string, Clock::time_point> received;  // webhook-id → when the receiver read it
  HttpReceiver receiver([&](const bulkhead::testing::ReceivedRequest& r) {
    auto now = Clock::now();
    std::lock_guard lock(mu);
    received.emplace(r.headers.at("webhook-id"), now);
    return bulkhead::testing::Reply{};
  });
  ResetSchema(args.database);
  pqxx::connection conn(args.database);
  int64_t channel = MakeChannels(conn, 1, receiver.Url("/fast"))[0];
  NodeProcess node({{"node", "bench"}, {"poll_interval_ms", 1000}}, {{"default", Tier(20)}});
  node.Start(args.database);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // let it start and go idle

  std::map<std::string, Clock::time_point> committed;
  int total = args.rate * args.seconds;
  auto interval = std::chrono::nanoseconds(1'000'000'000 / args.rate);
  auto next = Clock::now();
  for (int i = 0; i < total; ++i) {
    std::this_thread::sleep_until(next);
    next += interval;
    pqxx::work tx(conn);
    std::string id = tx.exec1("SELECT bulkhead.enqueue(" + std::to_string(channel) +
                              ", '{\"n\": " + std::to_string(i) + "}')")[0]
                         .as<std::string>();
    tx.commit();
    committed.emplace(id, Clock::now());
  }
  receiver.WaitForRequests(total, std::chrono::seconds(30));
  node.Signal(SIGTERM);
  node.Wait(std::chrono::seconds(30));

  std::vector<double> ms;
  {
    std::lock_guard lock(mu);
    for (const auto& [id, at] : committed) {
      auto it = received.find(id);
      if (it != received.end()) {
        ms.push_back(std::chrono::duration<double, std::milli>(it->second - at).count());
      }
    }
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, static_cast<size_t>(p * ms.size()))];
  };
  std::printf(
      "latency: %d deliveries at %d/s, each enqueued in its own transaction, one node\n"
      "  received %zu of %d\n"
      "  commit -> request at the receiver: p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms\n",
      total, args.rate, ms.size(), total, pct(0.50), pct(0.95), pct(0.99),
      ms.empty() ? 0.0 : ms.back());
  return ms.size() == static_cast<size_t>(total) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) return Usage("missing mode");
  if (words[0] == "-h" || words[0] == "--help") {
    std::cout << "usage: bulkhead-engine-bench throughput|latency --database URL [--jobs N] "
                 "[--channels N] [--workers N] [--rate N] [--seconds N]\n";
    return 0;
  }
  args.mode = words[0];
  if (args.mode != "throughput" && args.mode != "latency") return Usage("unknown mode");
  for (size_t i = 1; i + 1 < words.size(); i += 2) {
    const std::string& key = words[i];
    const std::string& value = words[i + 1];
    if (key == "--database") {
      args.database = value;
    } else if (key == "--jobs") {
      args.jobs = std::stoi(value);
    } else if (key == "--channels") {
      args.channels = std::stoi(value);
    } else if (key == "--workers") {
      args.workers = std::stoi(value);
    } else if (key == "--rate") {
      args.rate = std::stoi(value);
    } else if (key == "--seconds") {
      args.seconds = std::stoi(value);
    } else {
      return Usage("unknown option " + key);
    }
  }
  if (words.size() % 2 == 0) return Usage("an option lacks its value");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  signal(SIGPIPE, SIG_IGN);
  try {
    return args.mode == "throughput" ? Throughput(args) : Latency(args);
  } catch (const std::exception& e) {
    std::cerr << "bulkhead-engine-bench: " << e.what() << "\n";
    return 1;
  }
}
