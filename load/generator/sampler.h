// Sampler: watches the dead channel and the healthy channel in PostgreSQL while a phase runs,
// on a thread of its own with its own connection and mock client.
//
// Every 250 ms it reads the dead channel's breaker state and its jobs by state (one index
// probe each: jobs_executing, jobs_channel_waiting), to catch the moments the breaker opened
// and the whole backlog was parked to a quarter second; every whole second it also reads the
// mock's statistics and appends a timeline row. The start and Stop() are the caller's thread;
// timeline() and the moments may be read after Stop().
#pragma once

#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace bulkhead::load {

struct TimelineRow {
  double t_s = 0;  // seconds after the phase start
  std::string breaker;
  int64_t executing = 0;
  int64_t waiting = 0;  // available, any priority
  int64_t parked = 0;
  int64_t healthy_waiting = 0;  // the healthy channel's available jobs
  int64_t dead_in_flight = 0;   // requests the mock holds open on /hook/hang-dead
  int64_t dead_requests = 0;    // requests /hook/hang-dead received so far

  nlohmann::json ToJson() const;
};

class Sampler {
 public:
  struct Options {
    std::string database;
    std::string mock_url;
    int64_t dead_channel = 0;
    int64_t healthy_channel = 0;
    int64_t start_us = 0;  // the phase start, Unix µs
    std::string dead_route = "/hook/hang-dead";
  };
  // Starts sampling at once. Throws if the database cannot be reached.
  explicit Sampler(Options options);
  ~Sampler();  // Stop()s

  // Tells the sampler the backlog is fully enqueued: from then on, a sample with nothing of
  // the dead channel available (and its breaker not closed) is the "whole backlog parked".
  void BacklogDone() { backlog_done_ = true; }
  void Stop();

  const std::vector<TimelineRow>& timeline() const { return timeline_; }
  std::optional<int64_t> opened_at_us() const { return opened_at_us_; }
  std::optional<int64_t> parked_at_us() const { return parked_at_us_; }
  std::string error() const { return error_; }

 private:
  void Run();

  // Constant after construction
  const Options options_;
  // Shared between the threads
  std::atomic<bool> stop_{false};
  std::atomic<bool> backlog_done_{false};
  // Only touched by the sampler thread until Stop() has joined it
  std::vector<TimelineRow> timeline_;
  std::optional<int64_t> opened_at_us_;
  std::optional<int64_t> parked_at_us_;
  std::string error_;
  std::thread thread_;  // last: starts once every field above exists
};

}  // namespace bulkhead::load
