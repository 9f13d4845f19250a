// NodeProcess: a `bulkhead run` node started as a child process, for end-to-end tests that
// need the real binary: signals, exit codes, several nodes at once.
//
// Writes the node's config and tier files into a temporary folder of its own (removed on
// destruction, after the node is killed if it still runs). stderr (the JSON log) goes to a
// file that Log() reads. Used from the test's main thread.
//
// Unless the config sets `metrics_listen`, the node's status server gets a free loopback port
// of its own (metrics_port()), so that nodes started side by side (and tests run in parallel)
// never fight over the default 127.0.0.1:9464.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace bulkhead::testing {

// A node config for tests on loopback: `name`, a 200 ms poll, a 5 s shutdown grace, and
// `extra` on top. The one place such settings live, so a setting every test node needs (say,
// allowed_networks for a loopback endpoint) is added here once.
nlohmann::json TestNodeConfig(const std::string& name,
                              nlohmann::json extra = nlohmann::json::object());
// ["127.0.0.0/8", "::1/128"]: the `allowed_networks` a node needs to deliver to a receiver on
// loopback (HttpReceiver, the mock provider). A node's SSRF guard denies loopback by default,
// so every config that delivers over loopback lists these.
nlohmann::json LoopbackNetworks();

class NodeProcess {
 public:
  // `node_config` is the node's JSON config (tiers_dir is set by this class); `tiers` maps a
  // tier name to its file's JSON.
  NodeProcess(nlohmann::json node_config, const std::map<std::string, nlohmann::json>& tiers);
  ~NodeProcess();
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  // Starts `bulkhead run --config <file> --database <database>`. Does not wait for the node:
  // a test that asserts that something did *not* happen must WaitReady() first, or a node
  // still connecting proves nothing.
  void Start(const std::string& database);
  // Polls (poll.h) the node's /readyz on metrics_port() until it answers 200: the node is
  // registered, holds its lease, and every tier's claim loop runs. False if `timeout` passed
  // first or the process ended. Ready does not mean a claim has run yet: a test that waits
  // for the first claim to find nothing still waits a few poll intervals after it.
  bool WaitReady(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  void Signal(int sig) const;
  // The exit code once the process has ended (128 + signal if killed), or nullopt if it is
  // still running after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  // Polls (poll.h) Log() until it holds a line with "event":"<event>"; false if `timeout` passed
  // first or the process ended without writing one.
  bool WaitForLog(const std::string& event,
                  std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // Threads of the running process (/proc/<pid>/task).
  int ThreadCount() const;
  std::string Log() const;
  const std::filesystem::path& config_file() const { return config_file_; }
  pid_t pid() const { return pid_; }
  // The port of the node's /metrics, /healthz and /readyz.
  int metrics_port() const { return metrics_port_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path config_file_;
  pid_t pid_ = -1;
  int metrics_port_ = 0;
  std::optional<int> exit_code_;
};

}  // namespace bulkhead::testing
