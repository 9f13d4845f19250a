#include "sampler.h"

#include <chrono>
#include <pqxx/pqxx>

#include "app_sender.h"
#include "mock_client.h"

namespace bulkhead::load {
namespace {

// The dead channel's breaker and its jobs by state, and the healthy channel's waiting jobs.
// Each count reads one partial index: jobs_executing for executing, jobs_channel_waiting for
// available and parked, so a sample costs the same with 10 or 10,000 rows behind it.
constexpr const char* kSampleSql = R"sql(
SELECT c.breaker_state,
       (extract(epoch FROM c.breaker_changed_at) * 1000000)::bigint,
       (SELECT count(*) FROM bulkhead.jobs WHERE channel_id = $1 AND state = 'executing'),
       w.waiting, w.parked,
       (SELECT count(*) FROM bulkhead.jobs WHERE channel_id = $2 AND state = 'available')
  FROM bulkhead.channels c,
       LATERAL (SELECT count(*) FILTER (WHERE state = 'available') AS waiting,
                       count(*) FILTER (WHERE state = 'parked') AS parked
                  FROM bulkhead.jobs WHERE channel_id = $1 AND state IN ('available', 'parked')) w
 WHERE c.id = $1
)sql";

constexpr auto kTick = std::chrono::milliseconds(250);

}  // namespace

nlohmann::json TimelineRow::ToJson() const {
  return {{"t_s", t_s},
          {"breaker", breaker},
          {"executing", executing},
          {"waiting", waiting},
          {"parked", parked},
          {"healthy_waiting", healthy_waiting},
          {"dead_in_flight", dead_in_flight},
          {"dead_requests", dead_requests}};
}

Sampler::Sampler(Options options) : options_(std::move(options)), thread_([this] { Run(); }) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Sampler::Run() {
  try {
    pqxx::connection conn(options_.database);
    conn.prepare("sample", kSampleSql);
    MockClient mock(options_.mock_url);
    auto start =
        std::chrono::system_clock::time_point(std::chrono::microseconds(options_.start_us));
    for (int64_t tick = 0; !stop_; ++tick) {
      auto at = start + kTick * tick;
      std::this_thread::sleep_until(at);
      if (stop_) break;
      int64_t now = NowUs();
      TimelineRow row;
      row.t_s = static_cast<double>(tick) * 0.25;
      {
        pqxx::work tx(conn);
        auto r = tx.exec_prepared1("sample", options_.dead_channel, options_.healthy_channel);
        row.breaker = r[0].as<std::string>();
        int64_t changed_at = r[1].as<int64_t>();
        row.executing = r[2].as<int64_t>();
        row.waiting = r[3].as<int64_t>();
        row.parked = r[4].as<int64_t>();
        row.healthy_waiting = r[5].as<int64_t>();
        tx.commit();
        // The opening's own timestamp, not the sample's: exact, from the statement that
        // opened it (one clock: the database and the harness share the machine).
        if (!opened_at_us_ && row.breaker != "closed") opened_at_us_ = changed_at;
        if (opened_at_us_ && !parked_at_us_ && backlog_done_ && row.waiting == 0) {
          parked_at_us_ = now;
        }
      }
      if (tick % 4 == 0) {
        auto stats = mock.Stats();
        row.dead_in_flight = MockClient::RouteCounter(stats, options_.dead_route, "in_flight");
        row.dead_requests = MockClient::RouteCounter(stats, options_.dead_route, "requests");
        timeline_.push_back(row);
      }
    }
  } catch (const std::exception& e) {
    error_ = e.what();
  }
}

}  // namespace bulkhead::load
