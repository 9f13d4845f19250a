// NodeFleet: the extra worker nodes a fleet scenario (crash, fleet, pg_restart, soak) starts beside
// the node load/run.sh started, so that the scenario controls when they join and how they die.
//
// Each node is `bulkhead run --config <run_dir>/<name>.json --database <database>`, its config
// a copy of load/run.sh's node config (`node_config`) with its own node name and metrics port,
// written beside it so that a relative tiers_dir points at the same tier files. Its log (stderr)
// goes to <run_dir>/<name>.log (appended to when the name is started again). A started node dies
// with this process (PR_SET_PDEATHSIG), and the destructor stops every node still running: SIGTERM,
// then SIGKILL after 15 s.
//
// Used from the scenario's thread only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

namespace bulkhead::load {

struct FleetOptions {
  std::string bulkhead;               // the `bulkhead` binary
  std::filesystem::path node_config;  // load/run.sh's node config
  std::filesystem::path run_dir;      // where configs and logs go
  std::string database;               // passed as --database
  bool usable() const { return !bulkhead.empty() && !node_config.empty() && !run_dir.empty(); }
};

class NodeFleet {
 public:
  explicit NodeFleet(FleetOptions options);
  ~NodeFleet();
  NodeFleet(const NodeFleet&) = delete;
  NodeFleet& operator=(const NodeFleet&) = delete;

  // Starts a node named `name` and returns its pid; throws std::runtime_error when it cannot
  // be started, or when a node of that name started here still runs. A name whose node was
  // killed may be started again: the supervisor's restart, same config (soak). The caller
  // waits for its registration (WaitForNode with the pid).
  pid_t Start(const std::string& name);
  // Sends `sig` to the node; SIGKILL also reaps it.
  void Signal(const std::string& name, int sig);
  // Whether the node is still running.
  bool Running(const std::string& name);

 private:
  struct Node {
    std::string name;
    pid_t pid = 0;
    bool reaped = false;
  };
  Node& Find(const std::string& name);

  const FleetOptions options_;
  std::vector<Node> nodes_;
};

// Starts `count` nodes named <prefix>-1, <prefix>-2, … and waits for each to register and
// serve `tier`. Returns their names.
std::vector<std::string> StartNodes(NodeFleet& fleet, pqxx::connection& conn,
                                    const std::string& prefix, int count, const std::string& tier);

// The ids of the jobs `node` holds in `executing` (the jobs_executing index): what a SIGKILL
// to it strands, and so the only jobs a kill may repeat (crash, soak).
std::set<std::string> ExecutingOn(pqxx::connection& conn, const std::string& node);

// The per-node channel cap of `tier` in the node config the fleet's nodes copy, by the worker's
// own rule (CapLedger::For). Throws std::runtime_error when the config cannot be read or has no
// such tier.
int ChannelCap(const std::filesystem::path& node_config, const std::string& tier);

}  // namespace bulkhead::load
