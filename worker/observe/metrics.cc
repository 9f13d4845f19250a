#include "metrics.h"

#include <dirent.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "store_connection.h"

namespace bulkhead {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Delivery and claim durations: a healthy receiver answers in 5–250 ms; the tail up to the
// longest request timeout (60 s); a claim takes 1–10 ms, 100 ms+ is a database in trouble.
const Histogram::BucketBoundaries kDeliveryBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                                      1,     2.5,  5,     10,   30,  60};
// Queue wait, from enqueue or the retry's scheduled time to the claim: milliseconds when the
// tier keeps up, minutes to hours behind a backlog.
const Histogram::BucketBoundaries kQueueWaitBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800, 3600};
const Histogram::BucketBoundaries kClaimBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                   0.05,   0.1,   0.25,   0.5,   1,    5};
// Results per completion statement: 1 when idle, up to completion_batch_size (500) under load.
const Histogram::BucketBoundaries kBatchBuckets = {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000};

const char* const kOutcomes[5] = {"delivered", "failed", "timeout", "refused", "discarded"};

// /proc/self/stat fields 14 and 15 (utime, stime) in clock ticks, and 22 (starttime) in ticks
// since boot; the comm field (2) may hold spaces, so parsing starts after its ')'.
struct ProcStat {
  double cpu_s = 0;
  double start_s = 0;  // since boot
  double virtual_bytes = 0;
  bool ok = false;
};

ProcStat ReadProcStat() {
  ProcStat stat;
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');
  if (close == std::string::npos) return stat;
  std::istringstream fields(text.substr(close + 2));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) f.push_back(s);
  // f[0] is field 3 (state): field n is f[n - 3].
  if (f.size() < 21) return stat;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  stat.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / ticks;
  stat.start_s = std::stod(f[19]) / ticks;
  stat.virtual_bytes = std::stod(f[20]);
  stat.ok = true;
  return stat;
}

double BootTime() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  }
  return 0;
}

double ResidentBytes() {
  std::ifstream in("/proc/self/statm");
  double size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

double OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int n = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // not the descriptor opendir itself holds
}

}  // namespace

const char* DeliveryOutcomeName(DeliveryOutcome outcome) {
  return kOutcomes[static_cast<int>(outcome)];
}

Metrics::Metrics(const std::string& version) : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  deliveries_ = &BuildCounter()
                     .Name("bulkhead_deliveries_total")
                     .Help(
                         "Delivery attempts finished on this node, by tier and outcome "
                         "(delivered, failed, timeout, refused, discarded)")
                     .Register(r);
  delivery_duration_ = &BuildHistogram()
                            .Name("bulkhead_delivery_duration_seconds")
                            .Help("Time from sending a request to its answer (or failure)")
                            .Register(r);
  queue_wait_ = &BuildHistogram()
                     .Name("bulkhead_queue_wait_seconds")
                     .Help("Time from a job's enqueue (or its retry's scheduled time) to its claim")
                     .Register(r);
  claim_duration_ = &BuildHistogram()
                         .Name("bulkhead_claim_duration_seconds")
                         .Help("Duration of one claim statement, round trip included")
                         .Register(r);
  capped_ = &BuildCounter()
                 .Name("bulkhead_capped_total")
                 .Help("Times a channel or tenant reached its per-node cap here, by reason")
                 .Register(r);
  parked_ = &BuildCounter()
                 .Name("bulkhead_parked_total")
                 .Help(
                     "Jobs this node parked: found behind a breaker at claim, or parked when "
                     "this node opened a breaker")
                 .Register(r);
  snoozed_ = &BuildCounter()
                  .Name("bulkhead_snoozed_total")
                  .Help(
                      "Jobs whose next attempt a 429 or 503 with Retry-After pushed later: the "
                      "answering job and its channel's waiting jobs")
                  .Register(r);
  rate_limited_ = &BuildCounter()
                       .Name("bulkhead_rate_limited_total")
                       .Help(
                           "Jobs a claim gave this node that their channel's rate limit held "
                           "back: no token was left in the channel's fleet-wide bucket, so they "
                           "went back to wait, unsent and with their attempt unspent")
                       .Register(r);
  channels_gone_ = &BuildCounter()
                        .Name("bulkhead_channels_gone_total")
                        .Help(
                            "Channels this node disabled because their endpoint answered 410 "
                            "Gone")
                        .Register(r);
  transitions_ = &BuildCounter()
                      .Name("bulkhead_breaker_transitions_total")
                      .Help("Breaker transitions this node made, by the state entered")
                      .Register(r);
  inflight_ =
      &BuildGauge()
           .Name("bulkhead_inflight")
           .Help("Deliveries in flight on this node (worker slots in use, and stalled ones)")
           .Register(r);
  workers_ = &BuildGauge()
                  .Name("bulkhead_workers")
                  .Help("Worker slots of the tier on this node (its tier file's workers)")
                  .Register(r);
  stalled_ =
      &BuildGauge()
           .Name("bulkhead_stalled")
           .Help("Deliveries in flight past stalled_after_ms that gave their worker slot back")
           .Register(r);
  jobs_ = &BuildGauge()
               .Name("bulkhead_jobs")
               .Help(
                   "Fleet-wide jobs by tier and state (available, scheduled, executing, "
                   "parked); exported by the maintenance leader only")
               .Register(r);
  breakers_ = &BuildGauge()
                   .Name("bulkhead_breakers")
                   .Help(
                       "Fleet-wide channels by tier and breaker state; exported by the "
                       "maintenance leader only")
                   .Register(r);
  lag_ = &BuildGauge()
              .Name("bulkhead_queue_lag_seconds")
              .Help(
                  "Age of the oldest claimable job of the tier (0 when none); exported by the "
                  "maintenance leader only")
              .Register(r);
  ordering_held_ = &BuildGauge()
                        .Name("bulkhead_ordering_held")
                        .Help(
                            "Fleet-wide deliveries of the tier held behind an earlier delivery of "
                            "their ordering key (counted to 100000); exported by the maintenance "
                            "leader only")
                        .Register(r);
  claim_floor_age_ = &BuildGauge()
                          .Name("bulkhead_claim_floor_age_seconds")
                          .Help(
                              "Age of the job the claim floor stands at: how far back every "
                              "claim still reads (0 when every job is finished); exported by the "
                              "maintenance leader only")
                          .Register(r);
  completion_batch_size_ = &BuildHistogram()
                                .Name("bulkhead_completion_batch_size")
                                .Help("Results written per completion statement")
                                .Register(r)
                                .Add({}, kBatchBuckets);
  auto& quarantined = BuildCounter()
                          .Name("bulkhead_quarantined_total")
                          .Help(
                              "Attempt results (writer=completion) and breaker requests "
                              "(writer=breaker) set aside because the database refused their "
                              "data: recorded with their text replaced, or dropped")
                          .Register(r);
  for (int w = 0; w < 2; ++w) {
    for (int o = 0; o < 2; ++o) {
      quarantined_[w][o] = &quarantined.Add({{"writer", w == 0 ? "completion" : "breaker"},
                                             {"outcome", o == 0 ? "recorded" : "dropped"}});
    }
  }
  rescued_ = &BuildCounter()
                  .Name("bulkhead_rescued_total")
                  .Help(
                      "Jobs of nodes whose lease ran out that this node returned to the queue "
                      "(as leader, or at start for its own previous run)")
                  .Register(r)
                  .Add({});
  stranded_returned_ = &BuildCounter()
                            .Name("bulkhead_stranded_returned_total")
                            .Help(
                                "Jobs this node found executing under its name without holding "
                                "them (a claim whose reply was lost) and returned to the queue")
                            .Register(r)
                            .Add({});
  reconnects_ = &BuildCounter()
                     .Name("bulkhead_reconnects_total")
                     .Help(
                         "Database connections re-opened after an error (every connection of "
                         "the node but the LISTEN one)")
                     .Register(r)
                     .Add({});
  database_errors_ = &BuildCounter()
                          .Name("bulkhead_database_errors_total")
                          .Help("Statements that failed with a database or connection error")
                          .Register(r)
                          .Add({});
  blocked_ = &BuildCounter()
                  .Name("bulkhead_blocked_total")
                  .Help(
                      "Delivery attempts the SSRF guard refused (every address of the endpoint "
                      "denied and not in allowed_networks); each job is discarded")
                  .Register(r);
  tls_verify_disabled_ = &BuildGauge()
                              .Name("bulkhead_tls_verify_disabled")
                              .Help(
                                  "1 while this node sends HTTPS without verifying certificates "
                                  "(tls_insecure_skip_verify: test setups only)")
                              .Register(r)
                              .Add({});
  leader_ = &BuildGauge()
                 .Name("bulkhead_leader")
                 .Help("1 while this node is the fleet's maintenance leader")
                 .Register(r)
                 .Add({});
  BuildGauge()
      .Name("bulkhead_build_info")
      .Help("Always 1; the version label is the node's release")
      .Register(r)
      .Add({{"version", version}})
      .Set(1);
  cpu_seconds_ = &BuildCounter()
                      .Name("process_cpu_seconds_total")
                      .Help("User and system CPU time of the process")
                      .Register(r)
                      .Add({});
  resident_bytes_ = &BuildGauge()
                         .Name("process_resident_memory_bytes")
                         .Help("Resident memory of the process")
                         .Register(r)
                         .Add({});
  virtual_bytes_ = &BuildGauge()
                        .Name("process_virtual_memory_bytes")
                        .Help("Virtual memory of the process")
                        .Register(r)
                        .Add({});
  open_fds_ = &BuildGauge()
                   .Name("process_open_fds")
                   .Help("Open file descriptors of the process")
                   .Register(r)
                   .Add({});
  max_fds_ = &BuildGauge()
                  .Name("process_max_fds")
                  .Help("The process's limit of open file descriptors")
                  .Register(r)
                  .Add({});
  start_time_ = &BuildGauge()
                     .Name("process_start_time_seconds")
                     .Help("Start time of the process, seconds since the Unix epoch")
                     .Register(r)
                     .Add({});
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) max_fds_->Set(static_cast<double>(limit.rlim_cur));
  ProcStat stat = ReadProcStat();
  if (stat.ok) start_time_->Set(BootTime() + stat.start_s);
}

const Metrics::Tier& Metrics::ForTier(const std::string& tier) {
  std::lock_guard lock(mu_);
  auto& slot = tiers_[tier];
  if (slot) return *slot;
  slot = std::make_unique<Tier>();
  Tier& t = *slot;
  for (int i = 0; i < 5; ++i) {
    t.deliveries[i] = &deliveries_->Add({{"tier", tier}, {"outcome", kOutcomes[i]}});
  }
  t.delivery_duration = &delivery_duration_->Add({{"tier", tier}}, kDeliveryBuckets);
  t.queue_wait = &queue_wait_->Add({{"tier", tier}}, kQueueWaitBuckets);
  t.claim_duration = &claim_duration_->Add({{"tier", tier}}, kClaimBuckets);
  t.capped_channel = &capped_->Add({{"tier", tier}, {"reason", "channel"}});
  t.capped_tenant = &capped_->Add({{"tier", tier}, {"reason", "tenant"}});
  t.parked = &parked_->Add({{"tier", tier}});
  t.snoozed = &snoozed_->Add({{"tier", tier}});
  t.rate_limited = &rate_limited_->Add({{"tier", tier}});
  t.channels_gone = &channels_gone_->Add({{"tier", tier}});
  t.blocked = &blocked_->Add({{"tier", tier}});
  t.transitions_open = &transitions_->Add({{"tier", tier}, {"to", "open"}});
  t.transitions_half_open = &transitions_->Add({{"tier", tier}, {"to", "half_open"}});
  t.transitions_closed = &transitions_->Add({{"tier", tier}, {"to", "closed"}});
  t.inflight = &inflight_->Add({{"tier", tier}});
  t.workers = &workers_->Add({{"tier", tier}});
  t.stalled = &stalled_->Add({{"tier", tier}});
  return t;
}

void Metrics::SetFleetSample(const FleetCounts& sample) {
  std::lock_guard lock(mu_);
  prometheus::Family<prometheus::Gauge>* families[kFleetFamilies] = {
      jobs_, breakers_, lag_, ordering_held_, claim_floor_age_};
  std::vector<prometheus::Gauge*> now[kFleetFamilies];
  for (const auto& c : sample.jobs) {
    auto& g = jobs_->Add({{"tier", c.tier}, {"state", c.state}});
    g.Set(static_cast<double>(c.n));
    now[0].push_back(&g);
  }
  for (const auto& c : sample.breakers) {
    auto& g = breakers_->Add({{"tier", c.tier}, {"state", c.state}});
    g.Set(static_cast<double>(c.n));
    now[1].push_back(&g);
  }
  for (const auto& [tier, lag] : sample.lag_s) {
    auto& g = lag_->Add({{"tier", tier}});
    g.Set(lag);
    now[2].push_back(&g);
  }
  for (const auto& [tier, held] : sample.ordering_held) {
    auto& g = ordering_held_->Add({{"tier", tier}});
    g.Set(static_cast<double>(held));
    now[3].push_back(&g);
  }
  auto& floor_age = claim_floor_age_->Add({});
  floor_age.Set(sample.claim_floor_age_s);
  now[4].push_back(&floor_age);
  // Series of a tier or state the sample no longer has (a tier dropped) go.
  for (int i = 0; i < kFleetFamilies; ++i) {
    for (prometheus::Gauge* old : fleet_series_[i]) {
      if (std::find(now[i].begin(), now[i].end(), old) == now[i].end()) families[i]->Remove(old);
    }
    fleet_series_[i] = std::move(now[i]);
  }
  leader_->Set(1);
}

void Metrics::ClearFleetSample() {
  std::lock_guard lock(mu_);
  prometheus::Family<prometheus::Gauge>* families[kFleetFamilies] = {
      jobs_, breakers_, lag_, ordering_held_, claim_floor_age_};
  for (int i = 0; i < kFleetFamilies; ++i) {
    for (prometheus::Gauge* old : fleet_series_[i]) families[i]->Remove(old);
    fleet_series_[i].clear();
  }
  leader_->Set(0);
}

void Metrics::RefreshProcess() {
  ProcStat stat = ReadProcStat();
  std::lock_guard lock(mu_);
  if (stat.ok && stat.cpu_s > cpu_seen_) {
    cpu_seconds_->Increment(stat.cpu_s - cpu_seen_);
    cpu_seen_ = stat.cpu_s;
  }
  if (stat.ok) virtual_bytes_->Set(stat.virtual_bytes);
  resident_bytes_->Set(ResidentBytes());
  open_fds_->Set(OpenFds());
  // The connections' totals are process-wide atomics (StoreConnection): mirror their growth.
  uint64_t reconnects = StoreConnections::reconnects();
  uint64_t errors = StoreConnections::errors();
  if (reconnects > reconnects_seen_) {
    reconnects_->Increment(static_cast<double>(reconnects - reconnects_seen_));
    reconnects_seen_ = reconnects;
  }
  if (errors > database_errors_seen_) {
    database_errors_->Increment(static_cast<double>(errors - database_errors_seen_));
    database_errors_seen_ = errors;
  }
}

std::string Metrics::Scrape() {
  RefreshProcess();
  // Collected under mu_, so a scrape sees the leader's fleet sample whole: SetFleetSample
  // adds its series family by family, and a scrape between two families would show the jobs
  // of a new sample without its breakers or lag. The hot path's counters never take mu_.
  std::vector<prometheus::MetricFamily> families;
  {
    std::lock_guard lock(mu_);
    families = registry_->Collect();
  }
  return prometheus::TextSerializer().Serialize(families);
}

std::vector<std::string> Metrics::FamilyNames() const {
  std::vector<std::string> names;
  for (const auto& family : registry_->Collect()) names.push_back(family.name);
  return names;
}

}  // namespace bulkhead
