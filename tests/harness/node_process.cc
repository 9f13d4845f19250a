#include "node_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "free_port.h"
#include "http_get.h"
#include "poll.h"

extern char** environ;

namespace bulkhead::testing {

nlohmann::json TestNodeConfig(const std::string& name, nlohmann::json extra) {
  nlohmann::json node = {{"node", name},
                         {"poll_interval_ms", 200},
                         {"shutdown_grace_ms", 5000},
                         {"allowed_networks", LoopbackNetworks()}};
  node.update(extra);
  return node;
}

namespace fs = std::filesystem;

nlohmann::json LoopbackNetworks() { return nlohmann::json::array({"127.0.0.0/8", "::1/128"}); }

NodeProcess::NodeProcess(nlohmann::json node_config,
                         const std::map<std::string, nlohmann::json>& tiers) {
  std::string pattern = (fs::temp_directory_path() / "bulkhead-node-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error(std::strerror(errno));
  dir_ = pattern;
  fs::create_directories(dir_ / "tiers");
  for (const auto& [name, tier] : tiers) std::ofstream(dir_ / "tiers" / (name + ".json")) << tier;
  node_config["tiers_dir"] = "tiers";
  if (!node_config.contains("metrics_listen")) {
    metrics_port_ = FreeLoopbackPort();
    node_config["metrics_listen"] = "127.0.0.1:" + std::to_string(metrics_port_);
  } else {
    std::string listen = node_config["metrics_listen"];
    metrics_port_ = std::stoi(listen.substr(listen.rfind(':') + 1));
  }
  config_file_ = dir_ / "node.json";
  std::ofstream(config_file_) << node_config;
}

NodeProcess::~NodeProcess() {
  if (pid_ > 0 && !exit_code_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void NodeProcess::Start(const std::string& database) {
  std::vector<std::string> argv = {BULKHEAD_BIN,          "run",        "--config",
                                   config_file_.string(), "--database", database};
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  std::string log = (dir_ / "stderr.log").string();
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(std::string("spawn bulkhead: ") + std::strerror(rc));
}

void NodeProcess::Signal(int sig) const { kill(pid_, sig); }

std::optional<int> NodeProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool NodeProcess::WaitForLog(const std::string& event, std::chrono::milliseconds timeout) {
  const std::string needle = "\"event\":\"" + event + "\"";
  PollUntil(
      [&] {
        return Log().find(needle) != std::string::npos ||
               Wait(std::chrono::milliseconds(0)).has_value();
      },
      timeout);
  return Log().find(needle) != std::string::npos;
}

bool NodeProcess::WaitReady(std::chrono::milliseconds timeout) {
  const std::string url = "http://127.0.0.1:" + std::to_string(metrics_port_) + "/readyz";
  bool ready = false;
  PollUntil(
      [&] {
        ready = HttpGet(url, std::chrono::seconds(1)).status == 200;
        return ready || Wait(std::chrono::milliseconds(0)).has_value();
      },
      timeout);
  return ready;
}

int NodeProcess::ThreadCount() const {
  int n = 0;
  std::error_code ec;
  for ([[maybe_unused]] const auto& entry :
       fs::directory_iterator("/proc/" + std::to_string(pid_) + "/task", ec)) {
    ++n;
  }
  return n;
}

std::string NodeProcess::Log() const {
  std::ifstream in(dir_ / "stderr.log");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace bulkhead::testing
