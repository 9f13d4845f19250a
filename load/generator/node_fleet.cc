#include "node_fleet.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <variant>

#include "cap_ledger.h"
#include "config.h"
#include "free_port.h"
#include "scenario_stack.h"

namespace bulkhead::load {

NodeFleet::NodeFleet(FleetOptions options) : options_(std::move(options)) {
  if (!options_.usable()) {
    throw std::runtime_error(
        "this scenario starts nodes of its own: it needs --bulkhead, --node-config and "
        "--run-dir (load/run.sh passes them)");
  }
}

NodeFleet::~NodeFleet() {
  for (Node& n : nodes_) {
    if (!n.reaped) kill(n.pid, SIGTERM);
  }
  for (Node& n : nodes_) {
    for (int i = 0; i < 150 && !n.reaped; ++i) {
      if (waitpid(n.pid, nullptr, WNOHANG) == n.pid) {
        n.reaped = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (!n.reaped) {
      kill(n.pid, SIGKILL);
      waitpid(n.pid, nullptr, 0);
      n.reaped = true;
    }
  }
}

pid_t NodeFleet::Start(const std::string& name) {
  auto same =
      std::find_if(nodes_.begin(), nodes_.end(), [&name](const Node& n) { return n.name == name; });
  if (same != nodes_.end() && Running(name)) {
    throw std::runtime_error("node " + name + " is still running");
  }
  std::ifstream in(options_.node_config);
  auto config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in || config.is_discarded() || !config.is_object()) {
    throw std::runtime_error("cannot read the node config " + options_.node_config.string());
  }
  config["node"] = name;
  // A port free at this moment, as the tests' nodes get theirs. A random pick from a range
  // once met a port in use: the node then runs without a status page, and the failover
  // scenario read it as never ready.
  config["metrics_listen"] = "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort());
  auto config_path = options_.node_config.parent_path() / (name + ".json");
  std::ofstream(config_path) << config.dump(2) << "\n";
  auto log_path = options_.run_dir / (name + ".log");

  const bool again = same != nodes_.end();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl
    // A node started again under its name appends: its killed predecessor's log is kept.
    int log = open(log_path.c_str(), O_WRONLY | O_CREAT | (again ? O_APPEND : O_TRUNC), 0644);
    if (log >= 0) dup2(log, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
    }
    std::string config_arg = config_path.string();
    execl(options_.bulkhead.c_str(), options_.bulkhead.c_str(), "run", "--config",
          config_arg.c_str(), "--database", options_.database.c_str(), nullptr);
    _exit(127);
  }
  if (same != nodes_.end()) {
    *same = {name, pid, false};
  } else {
    nodes_.push_back({name, pid, false});
  }
  return pid;
}

NodeFleet::Node& NodeFleet::Find(const std::string& name) {
  for (Node& n : nodes_) {
    if (n.name == name) return n;
  }
  throw std::runtime_error("no node " + name + " was started here");
}

void NodeFleet::Signal(const std::string& name, int sig) {
  Node& n = Find(name);
  if (n.reaped) return;
  kill(n.pid, sig);
  if (sig == SIGKILL) {
    waitpid(n.pid, nullptr, 0);
    n.reaped = true;
  }
}

bool NodeFleet::Running(const std::string& name) {
  Node& n = Find(name);
  if (!n.reaped && waitpid(n.pid, nullptr, WNOHANG) == n.pid) n.reaped = true;
  return !n.reaped;
}

std::vector<std::string> StartNodes(NodeFleet& fleet, pqxx::connection& conn,
                                    const std::string& prefix, int count, const std::string& tier) {
  std::vector<std::string> names;
  for (int i = 1; i <= count; ++i) {
    names.push_back(prefix + "-" + std::to_string(i));
    fleet.Start(names.back());
  }
  for (const std::string& name : names) WaitForNode(conn, name, {tier});
  return names;
}

std::set<std::string> ExecutingOn(pqxx::connection& conn, const std::string& node) {
  pqxx::work tx(conn);
  std::set<std::string> ids;
  for (const auto& row : tx.exec_params(
           "SELECT id FROM bulkhead.jobs WHERE attempted_by = $1 AND state = 'executing'", node)) {
    ids.insert(row[0].as<std::string>());
  }
  tx.commit();
  return ids;
}

int ChannelCap(const std::filesystem::path& node_config, const std::string& tier) {
  auto config = LoadConfig(node_config);
  if (auto* error = std::get_if<ConfigError>(&config)) {
    throw std::runtime_error("the node config: " + error->Message());
  }
  const Config& c = std::get<Config>(config);
  auto t = std::find_if(c.tiers.begin(), c.tiers.end(),
                        [&tier](const TierOptions& o) { return o.name == tier; });
  if (t == c.tiers.end()) throw std::runtime_error("the node serves no " + tier + " tier");
  return CapLedger::For(t->workers, t->channel_share, t->tenant_share).channel;
}

}  // namespace bulkhead::load
