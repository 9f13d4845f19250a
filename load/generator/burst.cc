#include "burst.h"

#include <algorithm>
#include <map>

#include "app_sender.h"
#include "report.h"
#include "scenario_stack.h"

namespace bulkhead::load {

std::string BigintArray(const std::vector<int64_t>& values) {
  std::string array = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) array.push_back(',');
    array.append(std::to_string(values[i]));
  }
  return array + "}";
}

Burst EnqueueBurst(pqxx::connection& conn, const std::string& run, const std::string& url,
                   const std::string& tier, int jobs, int channels) {
  Burst burst;
  for (int i = 0; i < channels; ++i) {
    Channel c = CreateTenantAndChannel(conn, run + "-" + std::to_string(i), tier, url,
                                       /*paused=*/true);
    burst.channels.push_back(c.id);
    burst.secrets.push_back(c.secret);
  }
  // Item i goes to channel i mod N. The payload is about a hundred bytes, like a notification.
  conn.prepare("bulkhead_load_burst",
               "SELECT unnest(bulkhead.enqueue_many("
               "  ARRAY(SELECT ($1::bigint[])[1 + i % cardinality($1::bigint[])]"
               "          FROM generate_series(0, $2 - 1) i),"
               "  ARRAY(SELECT jsonb_build_object('n', i, 'text', 'a message of about a "
               "hundred bytes, like a chat notification') FROM generate_series(0, $2 - 1) i)))");
  std::string array = burst.ChannelArray();
  int64_t start = NowUs();
  for (int done = 0; done < jobs;) {
    int n = std::min(1000, jobs - done);
    pqxx::work tx(conn);
    for (const auto& row : tx.exec_prepared("bulkhead_load_burst", array, n)) {
      burst.ids.insert(row[0].as<std::string>());
    }
    tx.commit();
    done += n;
  }
  conn.unprepare("bulkhead_load_burst");
  burst.enqueue_s = static_cast<double>(NowUs() - start) / 1e6;
  pqxx::nontransaction tx(conn);
  tx.exec("VACUUM ANALYZE bulkhead.job_rows");
  return burst;
}

int64_t ReleaseBurst(pqxx::connection& conn, const Burst& burst) {
  pqxx::work tx(conn);
  tx.exec_params("UPDATE bulkhead.channels SET paused = false WHERE id = ANY($1::bigint[])",
                 burst.ChannelArray());
  tx.commit();
  return NowUs();
}

void CancelWaiting(pqxx::connection& conn, const std::vector<int64_t>& channels) {
  pqxx::work tx(conn);
  tx.exec_params(
      "UPDATE bulkhead.jobs SET state = 'cancelled', finished_at = now() "
      "WHERE channel_id = ANY($1::bigint[]) AND state IN ('available', 'parked')",
      BigintArray(channels));
  tx.commit();
}

std::vector<std::pair<double, double>> RatePerInterval(const std::vector<MockRecord>& records,
                                                       int64_t start_us, double bucket_s) {
  std::vector<int64_t> counts;
  const int64_t bucket_us = static_cast<int64_t>(bucket_s * 1e6);
  for (const MockRecord& r : records) {
    if (r.received_at_us < start_us) continue;
    size_t i = static_cast<size_t>((r.received_at_us - start_us) / bucket_us);
    if (counts.size() <= i) counts.resize(i + 1, 0);
    ++counts[i];
  }
  std::vector<std::pair<double, double>> points;
  for (size_t i = 0; i < counts.size(); ++i) {
    points.emplace_back(static_cast<double>(i) * bucket_s,
                        static_cast<double>(counts[i]) / bucket_s);
  }
  return points;
}

nlohmann::json Arrivals::ToJson(size_t sent) const {
  return {{"sent", sent},
          {"delivered", delivered},
          {"duplicates", duplicates},
          {"lost", lost},
          {"bad_signatures", bad_signatures},
          {"drain_s", RoundTo(drain_s(), 0.01)},
          {"deliveries_per_s", RoundTo(rate(), 1)}};
}

Arrivals TallyArrivals(const std::vector<MockRecord>& records, const std::set<std::string>& ids) {
  Arrivals a;
  std::map<std::string, int> seen;
  a.first_us = records.empty() ? 0 : INT64_MAX;
  for (const MockRecord& r : records) {
    if (!ids.count(r.webhook_id)) continue;
    a.first_us = std::min(a.first_us, r.received_at_us);
    a.last_us = std::max(a.last_us, r.received_at_us);
    if (++seen[r.webhook_id] > 1) {
      ++a.duplicates;
      a.duplicated_ids.insert(r.webhook_id);
    }
    if (r.signature == "missing" || r.signature == "invalid") ++a.bad_signatures;
  }
  if (a.first_us == INT64_MAX) a.first_us = 0;
  a.delivered = static_cast<int>(seen.size());
  a.lost = static_cast<int>(ids.size()) - a.delivered;
  return a;
}

}  // namespace bulkhead::load
