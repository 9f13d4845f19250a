// The cost of every statement on a hot or periodic path, in shared buffers per row, on a jobs
// table with a long history against one without (issue 34): "the claim's cost must be
// independent of the table's history: every step that re-finds rows must reach a row in
// O(log n) whatever the statistics say".
//
// Two databases hold the same fleet and the same burst of jobs. "fresh" has nothing else and is
// analyzed after the burst. "history" first gets a long history (a million finished jobs, and
// the parked backlog of channels whose breaker has long been open), is analyzed then, and gets
// the burst after, without another ANALYZE: its statistics say almost nothing is available, as
// when a burst lands on a table that has run for months before autovacuum catches up. Each
// statement runs under EXPLAIN (ANALYZE, BUFFERS) on a connection set up as its caller's is,
// with equivalent arguments in both, and its buffers per row on "history" must stay within
// twice those on "fresh" plus a small constant: a step that reaches its rows by scanning a range
// costs the range, and fails. The printed table is what issue 34 quotes. ctest runs it on the
// table as migrated and on ranges of 250,000 ids (plan_cost_test_on_ranges, ADR 0026), where
// the history fills four ranges, the burst the fifth, and the others are empty.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <sstream>

#include "admin_channel_store.h"
#include "admin_jobs_store.h"
#include "breaker_store.h"
#include "claim_store.h"
#include "completion_store.h"
#include "database_test.h"
#include "fleet_store.h"
#include "named_queries.h"
#include "tenancy.h"

namespace bulkhead {
namespace {

using nlohmann::json;
using testing::DatabaseTest;
using testing::PostgresEnvironment;
using testing::QueryValue;

// The history and the burst as issue 34 saw them: a million finished jobs and 20,000 parked
// behind the open breakers (building both databases takes about 18 s of the binary's 23 on the
// 2-core development machine), then 60,000 jobs due. A lock step that scans jobs_claim's whole
// range for its one row costs about 365 buffers a row here; issue 34 saw about 360.
constexpr int kFinishedJobs = 1'000'000;
constexpr int kDeadParked = 20'000;
constexpr int kBurst = 60'000;
// burst[kQuiet]: a channel with only 10 jobs waiting among the burst. The statements about one
// channel are measured on it: a scan of the whole queue shows against 10 rows. (Buffers count
// pages, not rows: an index scan over rows inserted in order reads each heap page once, so a
// range scan costs about 1 buffer per 30 rows here, which a channel of 1,200 would hide.)
constexpr int kQuiet = 9;

// How a measured statement behaves, from one EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON).
struct Measure {
  // Shared buffers hit and read by the top plan node: its children, InitPlans and CTEs too.
  // Planning is left out (a generic plan is not planned again).
  int64_t buffers = 0;
  // What it did: the rows it fed to its writes of bulkhead.jobs (those it wrote: no other
  // session writes), or, when it writes no job, the rows it returned. Top-node rows alone say
  // 0 for an UPDATE without RETURNING and 1 for a transition that moves a channel's backlog.
  int64_t rows = 0;
  // The access paths in plan order: index names, "seq scan <table>", "tid scan <table>".
  std::string indexes;
  std::string plan;                     // the plan, rendered for a failure message
  std::map<std::string, int64_t> ctes;  // rows of each CTE, by name ("heads", "lent")
};

int64_t NodeRows(const json& node) {  // over all its loops
  return std::llround(node.value("Actual Rows", 0.0) * node.value("Actual Loops", 0.0));
}
int64_t NodeBuffers(const json& node) {
  return node.value("Shared Hit Blocks", int64_t{0}) + node.value("Shared Read Blocks", int64_t{0});
}

// Walks the plan: renders it (a compact EXPLAIN, of the same run as the numbers; rows over all
// loops), lists its access paths and CTEs, and adds up the jobs rows its ModifyTables were fed.
void Walk(const json& node, int depth, Measure& m, int64_t& written) {
  const std::string type = node.value("Node Type", "");
  std::string line = std::string(depth * 2, ' ') + "-> " + type, path;
  if (node.contains("Index Name")) {
    path = node["Index Name"];
    line += " using " + path;
  } else if (type == "Seq Scan") {
    path = "seq scan " + node.value("Relation Name", "");
  } else if (type == "Tid Scan") {
    path = "tid scan " + node.value("Relation Name", "");
  }
  if (!path.empty() && (", " + m.indexes + ",").find(", " + path + ",") == std::string::npos) {
    m.indexes += m.indexes.empty() ? path : ", " + path;
  }
  if (node.contains("Relation Name")) line += " on " + node["Relation Name"].get<std::string>();
  if (node.contains("Alias")) line += " " + node["Alias"].get<std::string>();
  if (node.contains("Subplan Name")) {
    const std::string name = node["Subplan Name"];
    line += " [" + name + "]";
    if (name.rfind("CTE ", 0) == 0) m.ctes[name.substr(4)] = NodeRows(node);
  }
  m.plan += line + "  rows=" + std::to_string(NodeRows(node)) +
            " loops=" + std::to_string(node.value("Actual Loops", int64_t{0})) +
            " buffers=" + std::to_string(NodeBuffers(node)) + "\n";
  for (const std::string key : {"Index Cond", "Recheck Cond", "Join Filter", "Filter"}) {
    if (!node.contains(key)) continue;
    m.plan += std::string(depth * 2 + 5, ' ') + key + ": " + node[key].get<std::string>();
    if (key == "Filter" && node.contains("Rows Removed by Filter")) {
      m.plan += " (removed " + std::to_string(node["Rows Removed by Filter"].get<int64_t>()) + ")";
    }
    m.plan += "\n";
  }
  const json children = node.value("Plans", json::array());
  for (const json& child : children) {
    if (type == "ModifyTable" && node.value("Relation Name", "") == "job_rows" &&
        child.value("Parent Relationship", "") == "Outer") {
      written += NodeRows(child);
    }
    Walk(child, depth + 1, m, written);
  }
}

// EXPLAIN (ANALYZE, BUFFERS) EXECUTE `statement`(`args`) on `conn`, in a transaction rolled back:
// a statement that writes leaves only dead row versions, and both databases run the same
// sequence, so each sees the same debris. `warm_ups` plain EXPLAINs first put the plan cache
// where a long-lived connection's is: after five custom plans PostgreSQL keeps the generic one
// if it does not cost more, and EXPLAIN EXECUTE counts towards the five.
Measure Explain(pqxx::connection_base& conn, const std::string& statement, const std::string& args,
                int warm_ups) {
  const std::string execute = "EXECUTE " + statement + (args.empty() ? "" : "(" + args + ")");
  pqxx::work tx(conn, "plan_cost");
  for (int i = 0; i < warm_ups; ++i) tx.exec("EXPLAIN " + execute);
  const json out = json::parse(
      tx.exec1("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + execute)[0].as<std::string>());
  tx.abort();
  Measure m;
  m.buffers = NodeBuffers(out[0]["Plan"]);
  int64_t written = 0;
  Walk(out[0]["Plan"], 0, m, written);
  m.rows = written > 0 ? written : NodeRows(out[0]["Plan"]);
  return m;
}

// SQL literals: a text, and an array ('{1,2}', or 1,2 for IN when `quoted` is false).
std::string Text(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}
std::string Array(const std::vector<int64_t>& values, bool quoted = true) {
  std::string out;
  for (int64_t v : values) {
    if (!out.empty()) out += ',';
    out += std::to_string(v);
  }
  return quoted ? "'{" + out + "}'" : out;
}

// Claim's arguments for `limits`, in ClaimStore::Claim's order and with its defaults (the
// windows of channels without one, the first window, lending): a change to the statement's
// parameters there must be made here too, or EXECUTE fails with the count it expected.
std::string ClaimArgs(int limit, const ClaimLimits& l) {
  std::vector<int64_t> channels, counts, tenants, tenant_counts, windows, lends;
  for (size_t i = 0; i < l.channels_in_flight.size(); ++i) {
    channels.push_back(l.channels_in_flight[i].first);
    counts.push_back(l.channels_in_flight[i].second);
    windows.push_back(l.channel_windows.size() > i ? l.channel_windows[i] : l.channel_cap);
    lends.push_back(l.lend_windows.size() > i ? l.lend_windows[i] : 0);
  }
  for (const auto& [id, n] : l.tenants_in_flight) {
    tenants.push_back(id);
    tenant_counts.push_back(n);
  }
  std::ostringstream s;
  s << "'default', " << limit << ", 'node-a', " << Array(channels) << ", " << Array(counts) << ", "
    << Array(tenants) << ", " << Array(tenant_counts) << ", " << l.channel_cap << ", "
    << l.tenant_cap << ", " << Array(windows) << ", "
    << (l.first_window > 0 ? l.first_window : l.channel_cap) << ", " << std::max(l.lend, 0) << ", "
    << Array(lends) << ", " << std::max(l.look_ahead, 0) << ", " << l.heads_after_channel << ", "
    << l.heads_after_priority << ", "
    << (l.max_heads > 0 ? l.max_heads : ClaimLimits::HeadsFor(limit)) << ", " << l.claim_floor;
  return s.str();
}

// What the statements' arguments name in one database. Tenants and channels are made in the
// same order from the same template, so their ids agree between the two; jobs' ids do not.
struct Fleet {
  std::vector<int64_t> tenants, burst;  // 20 tenants of one channel each
  std::vector<int64_t> open;            // 4 channels whose breaker is open, cooled down
  int64_t half_open = 0;                // its probe (probe_job) in flight past its time
  int64_t stranded = 0;                 // closed, with 10 parked jobs (the reconciler's case)
  int64_t probe_job = 0;
  std::vector<int64_t> executing;  // node-a's jobs in flight on the burst channels, by id
  int64_t gone_job = 0;            // one of them, on the quiet channel
};

using Values = std::map<std::string, std::string>;

// `text` with each {name} of `values` replaced by its value.
std::string Fill(std::string text, const Values& values) {
  for (const auto& [name, value] : values) {
    const std::string key = "{" + name + "}";
    for (size_t at = 0; (at = text.find(key, at)) != std::string::npos; at += value.size()) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

void Run(pqxx::connection_base& conn, const std::string& sql, const Values& values = {}) {
  pqxx::work tx(conn);
  tx.exec(Fill(sql, values));
  tx.commit();
}

// Inserts jobs from `rows`, a SELECT of (i, channel, state, priority, at, attempt, attempted_at,
// attempted_by, finished_at, last_error) ordered by i: the tenant is the channel's, the payload
// a small object, and a finished job has the one attempt log entry the worker writes. Plain
// INSERTs, not bulkhead.enqueue: the history is what the worker leaves behind, and a million
// enqueue calls would take minutes.
void InsertJobs(pqxx::connection_base& conn, const std::string& rows, const Values& values) {
  const char* insert = R"(
    INSERT INTO bulkhead.jobs (queue, tenant_id, channel_id, state, priority, scheduled_at,
                               attempt, payload, created_at, attempted_at, attempted_by,
                               finished_at, last_error, attempts)
    SELECT 'default', ch.tenant_id, ch.id, s.state, s.priority, s.at, s.attempt,
           jsonb_build_object('event', 'invoice.paid', 'n', s.i, 'customer', md5(s.i::text)),
           s.at, s.attempted_at, s.attempted_by, s.finished_at, s.last_error,
           CASE WHEN s.finished_at IS NULL THEN '[]'::jsonb
                ELSE jsonb_build_array(jsonb_build_object(
                       'attempt', s.attempt, 'at', s.attempted_at, 'node', s.attempted_by,
                       'duration_ms', 41.5,
                       'status', CASE WHEN s.state = 'completed' THEN 200 ELSE 500 END)) END
      FROM ({rows}) AS s(i, channel, state, priority, at, attempt, attempted_at, attempted_by,
                          finished_at, last_error)
      JOIN bulkhead.channels ch ON ch.id = s.channel
     ORDER BY s.i)";
  Run(conn, Fill(insert, {{"rows", rows}}), values);
}

// Builds one database. With `history`, the finished jobs and the open channels' parked backlog
// come first and bulkhead.jobs is analyzed then; the burst follows without another ANALYZE.
// Without, the burst alone, analyzed after. Autovacuum is off for jobs in both, so that no
// ANALYZE of its own moves the statistics from where the test put them.
Fleet Build(pqxx::connection_base& conn, bool history) {
  Fleet f;
  // On jobs in ranges of ids (tests/schema/jobs_in_ranges.sql) each range holds its rows and
  // its own storage options, and the partitioned parent has none; a plain jobs is its own leaf.
  Run(conn, R"(DO $$
    DECLARE
      leaf regclass;
    BEGIN
      FOR leaf IN SELECT relid FROM pg_partition_tree('bulkhead.job_rows') WHERE isleaf LOOP
        EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', leaf);
      END LOOP;
    END $$)");
  for (int i = 0; i < 20; ++i) {
    f.tenants.push_back(testing::CreateTenant(conn, std::string("t").append(std::to_string(i))));
    f.burst.push_back(testing::CreateChannel(conn, f.tenants.back()));
  }
  const int64_t broken = testing::CreateTenant(conn, "broken");
  for (int i = 0; i < 4; ++i) f.open.push_back(testing::CreateChannel(conn, broken));
  f.half_open = testing::CreateChannel(conn, broken);
  f.stranded = testing::CreateChannel(conn, broken);
  const Values v = {{"burst", "(" + Array(f.burst) + "::bigint[])"},
                    {"open", "(" + Array(f.open) + "::bigint[])"},
                    {"open_ids", Array(f.open, false)},
                    {"half_open", std::to_string(f.half_open)},
                    {"stranded", std::to_string(f.stranded)},
                    {"finished", std::to_string(kFinishedJobs)},
                    {"dead_parked", std::to_string(kDeadParked)},
                    {"n", std::to_string(kBurst)},
                    {"front", std::to_string(kBurst / 5 * 4)},
                    {"waiting", "0, NULL::timestamptz, NULL::text, NULL::timestamptz, NULL::text"}};
  Run(conn, R"(UPDATE bulkhead.channels
                  SET breaker_state = 'open', breaker_trips = 5, breaker_reason = 'refused',
                      breaker_changed_at = now() - interval '1 day',
                      breaker_probe_at = now() - interval '1 minute'
                WHERE id IN ({open_ids}))",
      v);
  if (history) {
    // A month of deliveries to the burst's channels, oldest first, 1 in 20 discarded.
    InsertJobs(conn, R"(
      SELECT i, {burst}[1 + i % 20],
             CASE WHEN i % 20 = 7 THEN 'discarded' ELSE 'completed' END, 1, at,
             CASE WHEN i % 20 = 7 THEN 8 ELSE 1 END, at + interval '1 second', 'node-old',
             at + interval '2 seconds', CASE WHEN i % 20 = 7 THEN 'HTTP 500' END
        FROM generate_series(1, {finished}) i,
             LATERAL (SELECT now() - interval '30 days' + i * (interval '29 days' / {finished}))
               AS t(at))",
               v);
    // What the open channels gathered in the weeks their breakers have been open.
    InsertJobs(conn, R"(
      SELECT i, {open}[1 + i % 4], 'parked', 3,
             now() - interval '20 days' + i * interval '1 minute', {waiting}
        FROM generate_series(1, {dead_parked}) i)",
               v);
    Run(conn, "ANALYZE bulkhead.job_rows");
  }
  // The burst: one tenant's channel (burst[0]) holds the front of the queue, its first 48,000
  // jobs, with burst[1..8]'s trickle mixed in (1 row in 20, 300 each); behind it come
  // burst[10..19] (1,200 each, burst[10] 1,190) and the quiet channel burst[9] (10). A claim
  // with burst[0] at its cap must find those behind by the skip scan, not by reading the front.
  InsertJobs(conn, R"(
    SELECT i, CASE WHEN i > {front} AND i % ({n} / 50) = 0 THEN {burst}[10]
                   WHEN i > {front} THEN {burst}[11 + i % 10]
                   WHEN i % 20 = 0 THEN {burst}[2 + (i / 20) % 8]
                   ELSE {burst}[1] END,
           'available', 1, now() - interval '20 minutes' + i * (interval '10 minutes' / {n}),
           {waiting}
      FROM generate_series(1, {n}) i)",
             v);
  // Parked: 25 on each open channel, 200 behind the half-open one, 10 stranded on a closed one.
  InsertJobs(conn, R"(
    SELECT i, {open}[1 + i % 4], 'parked', 3, now() - interval '2 hours' + i * interval '1 s',
           {waiting}
      FROM generate_series(1, 100) i
    UNION ALL
    SELECT 100 + i, CASE WHEN i <= 200 THEN {half_open} ELSE {stranded} END, 'parked', 3,
           now() - interval '1 hour' + i * interval '1 s', {waiting}
      FROM generate_series(1, 210) i
    UNION ALL  -- available but due in an hour on an open channel: what ParkBehindOpen repairs
    SELECT 400 + i, {open}[1], 'available', 1, now() + interval '1 hour' + i * interval '1 s',
           {waiting}
      FROM generate_series(1, 50) i)",
             v);
  // In flight: 300 on node-a (15 per burst channel) and the half-open channel's probe, past its
  // time; 100 on node-lost, whose lease ran out. Delivered in the last minutes: 1,000, which a
  // live queue has, so that PruneFinished has a batch in both databases.
  InsertJobs(conn, R"(
    SELECT i, {burst}[1 + i % 20], 'executing', 1, now() - interval '30 minutes', 1,
           now() - interval '1 minute', 'node-a', NULL::timestamptz, NULL::text
      FROM generate_series(1, 300) i
    UNION ALL
    SELECT 301, {half_open}, 'executing', 3, now() - interval '1 hour', 1,
           now() - interval '1 minute', 'node-a', NULL, NULL
    UNION ALL
    SELECT 400 + i, {burst}[1 + i % 20], 'executing', 1, now() - interval '30 minutes', 1,
           now() - interval '10 minutes', 'node-lost', NULL, NULL
      FROM generate_series(1, 100) i
    UNION ALL
    SELECT 1000 + i, {burst}[1 + i % 20], 'completed', 1,
           now() - interval '20 minutes' + i * interval '1 second', 1,
           now() - interval '5 minutes', 'node-a', now() - interval '4 minutes', NULL
      FROM generate_series(1, 1000) i)",
             v);
  Run(conn, R"(
    UPDATE bulkhead.channels
       SET breaker_state = 'half_open', breaker_trips = 2,
           breaker_changed_at = now() - interval '1 minute',
           breaker_probe_at = now() - interval '1 second',
           breaker_probe_job = (SELECT id FROM bulkhead.jobs
                                 WHERE state = 'executing' AND channel_id = {half_open})
     WHERE id = {half_open};
    INSERT INTO bulkhead.nodes (name, tiers, heartbeat_at, lease_until)
    VALUES ('node-a', '{default}', now(), now() + interval '1 minute'),
           ('node-lost', '{default}', now() - interval '6 minutes', now() - interval '5 minutes'))",
      v);
  pqxx::work tx(conn);
  for (const auto& row : tx.exec("SELECT id, channel_id FROM bulkhead.jobs WHERE state = "
                                 "'executing' AND attempted_by = 'node-a' ORDER BY id")) {
    const int64_t id = row[0].as<int64_t>(), channel = row[1].as<int64_t>();
    if (channel == f.half_open) f.probe_job = id;
    if (channel != f.half_open) f.executing.push_back(id);
    if (channel == f.burst[kQuiet] && f.gone_job == 0) f.gone_job = id;
  }
  tx.commit();
  // Only jobs' statistics differ between the two: the other tables are analyzed now in both.
  Run(conn, history ? "ANALYZE bulkhead.channels, bulkhead.tenants, bulkhead.nodes, bulkhead.tiers"
                    : "ANALYZE");
  return f;
}

// The connections of one database, each set up as its caller's is.
enum class Session { kClaim, kClaimCustom, kCompletion, kBreaker, kFleet, kSamples, kAdmin };

class Sessions {
 public:
  explicit Sessions(const std::string& conninfo) {
    for (auto& conn : conns_) conn = std::make_unique<pqxx::connection>(conninfo);
    // A queue runner's connection: its first claim sets the session (generic plans, no seq or
    // bitmap scans: ClaimStore::Claim), under which every statement after is planned. A claim
    // of the empty `bulk` queue does that and takes nothing.
    ClaimStore(Of(Session::kClaim)).Claim("bulk", 1, "node-a");
    ClaimStore(Of(Session::kClaimCustom)).Claim("bulk", 1, "node-a");
    // The same with plans made for each claim's arguments (issue 34: "generic and custom").
    pqxx::nontransaction(Of(Session::kClaimCustom))
        .exec0("SET plan_cache_mode = force_custom_plan");
    Prepare(Session::kClaim, ClaimStore::kStatements);
    Prepare(Session::kClaimCustom, ClaimStore::kStatements);
    Prepare(Session::kCompletion, CompletionStore::kStatements);
    Prepare(Session::kBreaker, BreakerStore::kStatements);
    Prepare(Session::kFleet, FleetStore::kStatements);
    // The leader's samples run with sorts off (FleetStore::SampleFleet).
    pqxx::nontransaction(Of(Session::kSamples)).exec0("SET enable_sort = off");
    Prepare(Session::kSamples, FleetStore::kStatements);
    Prepare(Session::kAdmin, AdminChannelStore::kStatements);
    Prepare(Session::kAdmin, AdminJobsStore::kStatements);
  }
  pqxx::connection& Of(Session s) { return *conns_[static_cast<size_t>(s)]; }
  // The completion writer, the breaker keeper, the node and the leader run the same statements
  // for the connection's life: measured in the plan cache's steady state. A claiming
  // connection's plans are forced; a CLI verb runs each statement once, with a custom plan.
  static int WarmUps(Session s) {
    return s == Session::kCompletion || s == Session::kBreaker || s == Session::kFleet ||
                   s == Session::kSamples
               ? 5
               : 0;
  }

 private:
  // Defines the store's statements as the store does (PrepareQueries), and sends them to the
  // server now: libpqxx would at their first use, and EXPLAIN EXECUTE is none.
  void Prepare(Session s, std::span<const std::string_view> names) {
    PrepareQueries(Of(s), names);
    for (std::string_view name : names) Of(s).prepare_now(std::string(FindQuery(name).statement));
  }
  std::array<std::unique_ptr<pqxx::connection>, 7> conns_;
};

// One statement to measure: its prepared name, its caller's session, its arguments (with
// {names} of Arguments()), the rows it must do in both databases (the scenario), and, for a
// statement whose work is to count a backlog, the rows it counts (`unit`, SQL): its cost
// follows them by design, so it is judged per row counted. `cte`: a CTE that must have run, so
// that the case measures what it is named after.
constexpr const char* kUnfinished =
    "SELECT count(*) FROM bulkhead.jobs WHERE state IN ('available', 'parked', 'executing')";
struct Case {
  std::string label, statement;
  Session session;
  std::string args;
  int64_t rows;
  std::string unit = "";
  std::string cte = "";
};

// The claim's caps for the spread: burst[0] and burst[11] are at their cap (and window) of 10,
// so the windows, reading burst[0]'s front of the queue, keep only burst[1..8]'s trickle within
// a first window of 2, fall short, and the skip scan and the spread take 2 from each of the
// other 18 channels: 36. Lending: burst[11], behind the front, answered quickly (a lend window
// of 30, room for 20), and a budget of 50 counts the 36 picked: 14 lent, 50 in all.
ClaimLimits Capped(const Fleet& f, int lend) {
  return {.channel_cap = 10,
          .tenant_cap = 20,
          .channels_in_flight = {{f.burst[0], 10}, {f.burst[11], 10}},
          .channel_windows = {10, 10},
          .first_window = 2,
          .tenants_in_flight = {{f.tenants[0], 10}, {f.tenants[11], 10}},
          .lend = lend,
          .lend_windows = {0, 30}};
}

// The values of the cases' {names} in one database.
Values Arguments(const Fleet& f) {
  // node-a's first 50 jobs handed back; results for its first 100: 70 delivered, 20 to retry,
  // 10 refused for good.
  json handed = json::array(), results = json::array();
  for (int i = 0; i < 100; ++i) {
    if (i < 50) handed.push_back({{"id", f.executing[i]}, {"attempt", 1}});
    json result = {{"id", f.executing[i]}, {"attempt", 1}, {"duration_ms", 41.5}};
    result.update({{"delivered", i < 70}, {"status", i < 70 ? 200 : 500}, {"permanent", i >= 90}});
    result.update({{"error", i < 70 ? "" : "HTTP 500"}, {"retry_delay_ms", 60000}});
    results.push_back(result);
  }
  // node-a holds all its jobs in memory but its first 20 (ReturnStranded).
  std::vector<int64_t> held(f.executing.begin() + 20, f.executing.end());
  held.push_back(f.probe_job);
  return {{"no_caps", ClaimArgs(100, {})},
          {"capped", ClaimArgs(100, Capped(f, 0))},
          {"lending", ClaimArgs(100, Capped(f, 50))},
          {"quiet", std::to_string(f.burst[kQuiet])},
          {"gone_job", std::to_string(f.gone_job)},
          {"half_open", std::to_string(f.half_open)},
          {"open", std::to_string(f.open[0])},
          {"stranded", std::to_string(f.stranded)},
          {"probe_job", std::to_string(f.probe_job)},
          {"handed", Text(handed.dump())},
          {"results", Text(results.dump())},
          {"held", Array(held)}};
}

std::vector<Case> Cases() {
  return {
      {"Claim, no caps", "claim", Session::kClaim, "{no_caps}", 100},
      {"Claim, skip scan + spread", "claim", Session::kClaim, "{capped}", 36, "", "heads"},
      {"Claim, spread + lending", "claim", Session::kClaim, "{lending}", 50, "", "lent"},
      {"Claim, no caps (custom)", "claim", Session::kClaimCustom, "{no_caps}", 100},
      {"Claim, lending (custom)", "claim", Session::kClaimCustom, "{lending}", 50, "", "lent"},
      {"ClaimProbes", "claim_probes", Session::kClaim, "'default', 4, 'node-a', 30000", 4},
      {"SnoozeChannel", "snooze_channel", Session::kClaim, "{quiet}, 60000", 10},
      {"DisableGone", "disable_gone", Session::kClaim,
       "{quiet}, {gone_job}, 1, 'node-a', 'HTTP 410', 25.0", 11},
      {"HandBack", "hand_back", Session::kClaim, "{handed}, 'node-a'", 50},
      {"Record", "record", Session::kCompletion, "{results}, 'node-a'", 100},
      {"OpenBreaker", "open_breaker", Session::kBreaker, "{quiet}, 30000, 'failures', 5000", 10},
      {"CloseBreaker", "close_breaker", Session::kBreaker, "{half_open}, {probe_job}, 5000", 200},
      {"ReopenBreaker", "reopen_breaker", Session::kBreaker,
       "{half_open}, {probe_job}, 30000, 600000, 'HTTP 500', 5000", 1},
      {"ParkBacklog", "park_backlog", Session::kBreaker, "{open}, 5000", 50},
      {"UnparkBacklog", "unpark_backlog", Session::kBreaker, "{stranded}, 5000", 10},
      {"ExpireProbes", "expire_probes", Session::kBreaker, "'default', 30000, 600000", 1},
      {"NotClosedBreakers", "not_closed_breakers", Session::kBreaker, "", 5},
      {"Heartbeat", "heartbeat", Session::kFleet, "'node-a', 30000", 1},
      {"ReturnStranded", "return_stranded", Session::kFleet, "'node-a', {held}, 1000", 20},
      {"RescueLost", "rescue_lost", Session::kFleet, "''", 100},
      {"ForgetNodes", "forget_nodes", Session::kFleet, "60000", 0},  // node-lost owns jobs: kept
      // Deletes finished rows, so its cost is the history's by nature: judged per row deleted, in
      // the bounded batch the leader runs (500: the oldest of the month in one database, the last
      // minutes' deliveries in the other).
      {"PruneFinished", "prune_finished", Session::kFleet,
       "0, 500, -9223372036854775808, 9223372036854775807", 500},
      // The leader's look at a range before it drops one: index ends only, never the range.
      {"RangeFacts", "range_facts", Session::kFleet, "1, 9223372036854775807, 604800000", 1},
      {"PruneOldSecrets", "prune_old_secrets", Session::kFleet, "", 1},
      {"ParkBehindOpen", "park_behind_open", Session::kFleet, "", 50},
      {"ReconcileParked", "reconcile_parked", Session::kFleet, "", 10},
      // The samples and the status reads count waiting and running jobs, to which the history
      // adds 20,000 parked: judged per job counted.
      {"SampleJobs", "sample_jobs", Session::kSamples, "", -1, kUnfinished},
      {"SampleBreakers", "sample_breakers", Session::kSamples, "", 4},
      {"SampleLag", "sample_lag", Session::kSamples, "", 2},
      {"SampleClaimFloor", "sample_claim_floor", Session::kSamples, "", 1},
      {"QueueStatus", "queue_status", Session::kAdmin, "", -1, kUnfinished},
      {"NodeStatus", "node_status", Session::kAdmin, "", -1,
       "SELECT count(*) FROM bulkhead.jobs WHERE state = 'executing'"},
      {"ListJobs", "list_jobs", Session::kAdmin, "{quiet}, NULL, NULL, 50", 50},
      {"FindJob", "find_job", Session::kAdmin, "{gone_job}", 1},
      {"ShowChannel", "show_channel", Session::kAdmin, "{quiet}", -1,
       std::string(kUnfinished) + " AND channel_id = {quiet}"},
      {"ListBreakers", "list_breakers", Session::kAdmin, "", -1,
       "SELECT count(*) FROM bulkhead.jobs j JOIN bulkhead.channels ch ON ch.id = j.channel_id "
       "WHERE j.state = 'parked' AND NOT (ch.breaker_state = 'closed' AND NOT ch.paused "
       "AND ch.enabled)"},
  };
}

class PlanCostTest : public DatabaseTest {
 protected:
  void SetUp() override {
    DatabaseTest::SetUp();
    history_ = dbname() + "_history";
    Admin("CREATE DATABASE " + history_ + " STRATEGY = FILE_COPY TEMPLATE " +
          PostgresEnvironment::kTemplate);
  }
  void TearDown() override {
    fresh_sessions_.reset();
    history_sessions_.reset();
    history_conn_.reset();
    Admin("DROP DATABASE IF EXISTS " + history_ + " WITH (FORCE)");
    DatabaseTest::TearDown();
  }
  static void Admin(const std::string& sql) {  // as database_test.cc clones the template
    pqxx::connection admin(PostgresEnvironment::Cluster().ConnectionString("postgres"));
    pqxx::nontransaction(admin).exec(sql);
  }
  std::string HistoryConninfo() const {
    return PostgresEnvironment::Cluster().ConnectionString(history_);
  }

  std::string history_;
  std::unique_ptr<pqxx::connection> history_conn_;
  std::unique_ptr<Sessions> fresh_sessions_, history_sessions_;
};

TEST_F(PlanCostTest, EveryStatementCostsPerRowWhatItCostsWithoutAHistory) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const Fleet fresh = Build(db(), false);
  history_conn_ = std::make_unique<pqxx::connection>(HistoryConninfo());
  const Fleet history = Build(*history_conn_, true);
  ASSERT_EQ(fresh.burst, history.burst) << "the two databases must name the same channels";
  ASSERT_EQ(fresh.executing.size(), 300u);
  ASSERT_NE(fresh.gone_job, 0);
  fresh_sessions_ = std::make_unique<Sessions>(conninfo());
  history_sessions_ = std::make_unique<Sessions>(HistoryConninfo());
  std::cout << "built both databases in " << seconds() << " s\n";

  char line[200];
  std::snprintf(line, sizeof line, "%-27s %6s/%-6s %9s %9s %7s  %s\n", "statement", "fresh", "hist",
                "fresh b/r", "hist b/r", "bound", "verdict");
  std::string table = line;
  const Values fresh_args = Arguments(fresh), history_args = Arguments(history);
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.label);
    const int warm_ups = Sessions::WarmUps(c.session);
    Measure f =
        Explain(fresh_sessions_->Of(c.session), c.statement, Fill(c.args, fresh_args), warm_ups);
    Measure h = Explain(history_sessions_->Of(c.session), c.statement, Fill(c.args, history_args),
                        warm_ups);
    int64_t f_rows = f.rows, h_rows = h.rows;
    if (!c.unit.empty()) {
      f_rows = QueryValue<int64_t>(db(), Fill(c.unit, fresh_args));
      h_rows = QueryValue<int64_t>(*history_conn_, Fill(c.unit, history_args));
    } else {
      // The scenario is what the label says, and both databases did the same work.
      EXPECT_EQ(f.rows, c.rows) << "fresh plan:\n" << f.plan;
      EXPECT_EQ(h.rows, f.rows) << "history plan:\n" << h.plan;
    }
    if (!c.cte.empty()) {
      EXPECT_GT(f.ctes[c.cte], 0) << "CTE " << c.cte << " did not run:\n" << f.plan;
    }
    const double f_per_row = double(f.buffers) / std::max<int64_t>(f_rows, 1);
    const double h_per_row = double(h.buffers) / std::max<int64_t>(h_rows, 1);
    // Twice, for a bigger table's deeper indexes and a plan's reasonable choices; 8 buffers,
    // for a statement's fixed descents into its indexes, which few rows do not amortise. A
    // step that scans a range to find its rows costs the range, and a range is far more.
    const double bound = 2 * f_per_row + 8;
    EXPECT_LE(h_per_row, bound) << c.statement << " costs " << h.buffers << " buffers for "
                                << h_rows << " rows with a history, " << f.buffers << " for "
                                << f_rows << " without.\nhistory plan:\n"
                                << h.plan << "fresh plan:\n"
                                << f.plan;
    std::snprintf(line, sizeof line, "%-27s %6lld/%-6lld %9.1f %9.1f %7.1f  %s\n", c.label.c_str(),
                  static_cast<long long>(f_rows), static_cast<long long>(h_rows), f_per_row,
                  h_per_row, bound, h_per_row <= bound ? "ok" : "FAIL");
    table += line + ("    history: " + h.indexes + "\n");
    if (f.indexes != h.indexes) table += "    fresh:   " + f.indexes + "\n";
  }
  std::cout << table << "the whole test: " << seconds() << " s\n";
}

}  // namespace
}  // namespace bulkhead
