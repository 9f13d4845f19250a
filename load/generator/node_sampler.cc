#include "node_sampler.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "app_sender.h"
#include "http_get.h"

namespace bulkhead::load {

double MetricSum(const std::string& text, const std::string& name) {
  double sum = 0;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0) continue;
    char next = line[name.size()];
    if (next != ' ' && next != '{') continue;
    size_t space = line.rfind(' ');
    sum += std::strtod(line.c_str() + space + 1, nullptr);
  }
  return sum;
}

std::string MetricsUrl(const std::filesystem::path& config) {
  std::ifstream in(config);
  auto json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!in || json.is_discarded() || !json.contains("metrics_listen")) {
    throw std::runtime_error("no metrics_listen in " + config.string());
  }
  return "http://" + json["metrics_listen"].get<std::string>();
}

NodeSampler::NodeSampler(std::vector<NodeView> nodes) : nodes_(std::move(nodes)) {
  // A node whose status server could not listen runs on without one: every sample would read
  // "no answer", and the scenario would fail on it far from the cause.
  for (const NodeView& n : nodes_) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (testing::HttpGet(n.base_url + "/readyz", std::chrono::seconds(1)).status == 0) {
      if (std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("node " + n.name + " does not answer at " + n.base_url +
                                 "/readyz (its log says why: a port in use, or it stopped)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  thread_ = std::thread([this] { Loop(); });
}

void NodeSampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<NodeSample> NodeSampler::Samples() {
  std::lock_guard lock(mu_);
  return samples_;
}

void NodeSampler::Loop() {
  // A node that does not answer within a second counts as no answer (status 0): a node that
  // hangs is what an operator would see too.
  constexpr std::chrono::milliseconds kTimeout{1000};
  while (!stop_) {
    auto next = std::chrono::steady_clock::now() + std::chrono::milliseconds(250);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      NodeSample s;
      s.at_us = NowUs();
      s.node = i;
      testing::HttpAnswer readyz = testing::HttpGet(nodes_[i].base_url + "/readyz", kTimeout);
      s.readyz = readyz.status;
      if (s.readyz != 200) s.reasons = readyz.body;
      testing::HttpAnswer metrics = testing::HttpGet(nodes_[i].base_url + "/metrics", kTimeout);
      if (metrics.status == 200) {
        s.leader = MetricSum(metrics.body, "bulkhead_leader");
        s.db_errors = MetricSum(metrics.body, "bulkhead_database_errors_total");
        s.reconnects = MetricSum(metrics.body, "bulkhead_reconnects_total");
      }
      std::lock_guard lock(mu_);
      samples_.push_back(std::move(s));
    }
    std::this_thread::sleep_until(next);
  }
}

}  // namespace bulkhead::load
